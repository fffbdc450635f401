import { ServerDownError } from './pool';

/**
 * What a failed query means: "the database is not answering" (the request may succeed later:
 * 503), or "PostgreSQL refused a value the request carried" (the request is at fault), or
 * neither (a bug).
 */

/** Node's socket errors when the server cannot be reached or the connection breaks. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/**
 * SQLSTATEs that mean "not now" rather than "never": connection exceptions (08), operator
 * intervention such as a shutdown or a cancelled query (57), insufficient resources (53), and
 * a serialization failure or deadlock (40001, 40P01), which a retry resolves, and a lock not had
 * within lock_timeout (55P03). Each of these rolled the statement's transaction back.
 */
const UNAVAILABLE_SQLSTATE = /^(08|57|53)...$|^40001$|^40P01$|^55P03$/;

/** SQLSTATEs of a value PostgreSQL refuses: a data exception (22), or one too large to index (54000). */
const REJECTED_VALUE_SQLSTATE = /^22...$|^54000$/;

/** pg's own errors when a connection dies or cannot be had; they carry no code. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection closed|the database system is (shutting down|starting up|in recovery mode)/i;

/** The codes (a SQLSTATE, a socket's) and messages of an error and of the errors it wraps (`cause`). */
function factsOf(err: unknown): { codes: string[]; messages: string[] } {
  const codes: string[] = [];
  const messages: string[] = [];
  const pending: unknown[] = [err];
  for (let seen = 0; pending.length > 0 && seen < 16; seen++) {
    const e = pending.shift();
    if (!e || typeof e !== 'object') continue;
    const { code, message, cause } = e as Record<string, unknown>;
    if (typeof code === 'string') codes.push(code);
    if (typeof message === 'string') messages.push(message);
    pending.push(cause);
  }
  return { codes, messages };
}

/** True when the error means "the database is not answering", as opposed to a bug. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof ServerDownError) return true;
  const { codes, messages } = factsOf(err);
  return (
    codes.some((code) => UNREACHABLE_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)) ||
    messages.some((message) => UNAVAILABLE_MESSAGE.test(message))
  );
}

/** True when PostgreSQL refused a value the request carried (a string it cannot hold, a key too long to index). */
export function isRejectedValue(err: unknown): boolean {
  return factsOf(err).codes.some((code) => REJECTED_VALUE_SQLSTATE.test(code));
}

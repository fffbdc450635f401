import { UnusableServerError } from '../pg-client';
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

/**
 * SQLSTATEs of a database that does not hold the catalog this build reads: no such database
 * (3D000: dropped), schema, table, column or function (3F000, 42P01, 42703, 42883: a database
 * made anew and not yet restored or migrated). The test suite runs every statement of the service
 * against the migrated schema, so these come of the database, not of a statement: the request may
 * succeed once the catalog is back, and /readyz says "migrations not applied" until then.
 */
const MISSING_CATALOG_SQLSTATE = /^(3D000|3F000|42P01|42703|42883)$/;

/** SQLSTATEs of a value PostgreSQL refuses: a data exception (22), or one too large to index (54000). */
const REJECTED_VALUE_SQLSTATE = /^22...$|^54000$/;

/** pg's own errors when a connection dies or cannot be had; they carry no code. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection closed|the database system is (shutting down|starting up|in recovery mode)/i;

/** An error and the errors it wraps (`cause`), with their codes (a SQLSTATE, a socket's) and messages. */
function factsOf(err: unknown): { errors: object[]; codes: string[]; messages: string[] } {
  const errors: object[] = [];
  const codes: string[] = [];
  const messages: string[] = [];
  const pending: unknown[] = [err];
  for (let seen = 0; pending.length > 0 && seen < 16; seen++) {
    const e = pending.shift();
    if (!e || typeof e !== 'object') continue;
    errors.push(e);
    const { code, message, cause } = e as Record<string, unknown>;
    if (typeof code === 'string') codes.push(code);
    if (typeof message === 'string') messages.push(message);
    pending.push(cause);
  }
  return { errors, codes, messages };
}

/** True when the error means "the database is not answering", as opposed to a bug. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const { errors, codes, messages } = factsOf(err);
  return (
    errors.some((e) => e instanceof ServerDownError || e instanceof UnusableServerError) ||
    codes.some(
      (code) => UNREACHABLE_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code) || MISSING_CATALOG_SQLSTATE.test(code),
    ) ||
    messages.some((message) => UNAVAILABLE_MESSAGE.test(message))
  );
}

/**
 * True when the error is the watch's: the request failed at once, its server judged down or hung
 * (ServerDownError), which the watch logged once, as the state changed.
 */
export function isServerDown(err: unknown): boolean {
  return factsOf(err).errors.some((e) => e instanceof ServerDownError);
}

/** True when PostgreSQL refused a value the request carried (a string it cannot hold, a key too long to index). */
export function isRejectedValue(err: unknown): boolean {
  return factsOf(err).codes.some((code) => REJECTED_VALUE_SQLSTATE.test(code));
}

/**
 * True when a write stopped because the API key its token was traded for no longer stands
 * (SQLSTATE BCK01, raised by the migration api_keys' api_key_stands in the write's own statement):
 * revoked, or expired, since the token was issued (docs/reference/callers.md#api-keys).
 */
export function isRevokedKey(err: unknown): boolean {
  return factsOf(err).codes.includes('BCK01');
}

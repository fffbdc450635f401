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

/**
 * Prisma Client's codes for "the database is not answering": it cannot be reached (P1001), timed
 * out (P1002, P1008), closed the connection (P1017), no connection to be had (P2024), a write
 * conflict or deadlock a retry resolves (P2034).
 */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2034']);

/** The pg driver adapter's names for the same (its DriverAdapterError's `kind`). */
const UNAVAILABLE_ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionWriteConflict',
]);

/**
 * The codes and messages of an error and of what it wraps: its causes, and, for Prisma Client's
 * errors, the driver adapter's error in `meta.driverAdapterError`, whose cause carries
 * PostgreSQL's SQLSTATE as `originalCode` (or, for a socket error, a `kind`).
 */
function factsOf(err: unknown): { errors: object[]; codes: string[]; messages: string[] } {
  const errors: object[] = [];
  const codes: string[] = [];
  const messages: string[] = [];
  const pending: unknown[] = [err];
  for (let seen = 0; pending.length > 0 && seen < 16; seen++) {
    const e = pending.shift();
    if (!e || typeof e !== 'object') continue;
    errors.push(e);
    const { code, originalCode, kind, message, originalMessage, cause, meta } = e as Record<string, unknown>;
    for (const value of [code, originalCode, kind]) if (typeof value === 'string') codes.push(value);
    for (const value of [message, originalMessage]) if (typeof value === 'string') messages.push(value);
    pending.push(cause, (meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError);
  }
  return { errors, codes, messages };
}

/** True when the error means "the database is not answering", as opposed to a bug. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const { errors, codes, messages } = factsOf(err);
  return (
    errors.some((e) => e instanceof ServerDownError || e instanceof UnusableServerError) ||
    codes.some(
      (code) =>
        UNREACHABLE_CODES.has(code) ||
        UNAVAILABLE_SQLSTATE.test(code) ||
        MISSING_CATALOG_SQLSTATE.test(code) ||
        UNAVAILABLE_PRISMA_CODES.has(code) ||
        UNAVAILABLE_ADAPTER_KINDS.has(code),
    ) ||
    messages.some((message) => UNAVAILABLE_MESSAGE.test(message))
  );
}

/** True when PostgreSQL refused a value the request carried (a string it cannot hold, a key too long to index). */
export function isRejectedValue(err: unknown): boolean {
  return factsOf(err).codes.some((code) => REJECTED_VALUE_SQLSTATE.test(code));
}

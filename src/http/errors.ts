import { STATUS_CODES } from 'node:http';
import type Koa from 'koa';
import type { Logger } from '../logger';

/** Thrown by routes and middleware; the error middleware turns it into the bare status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(STATUS_CODES[status] ?? String(status));
  }
}

/**
 * The status a route gives a request whose values it cannot accept: 400, or 404 where the
 * specification makes every failure a 404 (PUT). The body reader records it; a route that reads
 * no body looks things up, and a value the database cannot even hold matches nothing: 404.
 */
export function setInvalidInputStatus(ctx: Koa.Context, status: number): void {
  ctx.state.invalidInputStatus = status;
}

function invalidInputStatus(ctx: Koa.Context): number {
  const status: unknown = ctx.state.invalidInputStatus;
  return typeof status === 'number' ? status : 404;
}

// Node socket errors, and Prisma's codes for: server unreachable, timed out, closed the
// connection, pool timeout.
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'P1001',
  'P1002',
  'P1008',
  'P1017',
  'P2024',
]);

/**
 * SQLSTATEs that mean "not now" rather than "never": connection exceptions (08), operator
 * intervention such as a shutdown or a cancelled query (57), insufficient resources (53), and
 * a serialization failure or deadlock (40001, 40P01), which a retry resolves.
 */
const UNAVAILABLE_SQLSTATE = /^(08|57|53)|^40001$|^40P01$/;

/** SQLSTATEs that mean the request carried a value PostgreSQL refuses: a data exception (22), or a value too large to index (54000). */
const REJECTED_VALUE_SQLSTATE = /^22|^54000$/;

// Driver-adapter error kinds that mean the database is not answering.
const UNAVAILABLE_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionWriteConflict',
]);

// pg's own errors when a connection dies or cannot be had; they carry no code.
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection closed|the database system is (shutting down|starting up|in recovery mode)/i;

interface Facts {
  codes: string[];
  kinds: string[];
  messages: string[];
}

/**
 * Everything an error says about its cause. pg errors carry `code`; Prisma wraps them, with the
 * driver adapter's error under `meta.driverAdapterError.cause` (kind, code, originalCode) or
 * under `cause`.
 */
function factsOf(err: unknown): Facts {
  const facts: Facts = { codes: [], kinds: [], messages: [] };
  const queue: unknown[] = [err];
  for (let seen = 0; queue.length > 0 && seen < 12; seen++) {
    const e = queue.shift();
    if (!e || typeof e !== 'object') continue;
    const { code, originalCode, kind, message, cause, meta } = e as Record<string, unknown>;
    for (const value of [code, originalCode]) if (typeof value === 'string') facts.codes.push(value);
    if (typeof kind === 'string') facts.kinds.push(kind);
    if (typeof message === 'string') facts.messages.push(message);
    queue.push(cause, (meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError);
  }
  return facts;
}

/** True when the error means "the database is not answering", as opposed to a bug. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const { codes, kinds, messages } = factsOf(err);
  return (
    codes.some((code) => UNAVAILABLE_CODES.has(code) || (code.length === 5 && UNAVAILABLE_SQLSTATE.test(code))) ||
    kinds.some((kind) => UNAVAILABLE_KINDS.has(kind)) ||
    messages.some((message) => UNAVAILABLE_MESSAGE.test(message))
  );
}

/** True when PostgreSQL refused a value the request carried (a string it cannot hold, a key too long to index). */
export function isRejectedValue(err: unknown): boolean {
  const { codes, kinds } = factsOf(err);
  return (
    codes.some((code) => code.length === 5 && REJECTED_VALUE_SQLSTATE.test(code)) ||
    kinds.some((kind) => kind === 'InvalidInputValue' || kind === 'ValueOutOfRange' || kind === 'LengthMismatch')
  );
}

function statusOf(ctx: Koa.Context, err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (isDatabaseUnavailable(err)) return 503;
  if (isRejectedValue(err)) return invalidInputStatus(ctx);
  // Errors Koa and its body parser raise for bad requests carry a 4xx status.
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return status;
  return 500;
}

/**
 * The one place errors become responses: a status code and its reason phrase as plain text,
 * never a JSON body. Unexpected errors are logged; a database outage is a 503 with Retry-After.
 */
export function errorHandler(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const status = statusOf(ctx, err);
      if (status === 500) logger.error({ err }, 'unexpected error');
      else if (status === 503) logger.warn({ err: (err as Error)?.message }, 'database unavailable');
      else if (!(err instanceof HttpError) && isRejectedValue(err))
        logger.warn({ err: (err as Error)?.message, status }, 'value refused by the database');
      ctx.status = status;
      ctx.type = 'text/plain';
      ctx.body = STATUS_CODES[status] ?? String(status);
      if (err instanceof HttpError) ctx.set(err.headers);
      if (status === 503) ctx.set('Retry-After', '1');
    }
  };
}

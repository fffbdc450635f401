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

const UNAVAILABLE_CODES = new Set([
  // Node socket errors
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  // Prisma: server unreachable, timed out, closed the connection, pool timeout
  'P1001',
  'P1002',
  'P1008',
  'P1017',
  'P2024',
]);

// Driver-adapter error kinds that mean the database is not answering.
const UNAVAILABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);

/** True when the error means "the database is not answering", as opposed to a bug. */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || /^(08|57P|53)/.test(code))) return true;
    if (typeof message === 'string' && /Connection terminated|timeout exceeded when trying to connect|Query read timeout/i.test(message)) return true;
    const kind = (cause as { kind?: unknown } | undefined)?.kind;
    if (typeof kind === 'string' && UNAVAILABLE_KINDS.has(kind)) return true;
    const originalCode = (cause as { originalCode?: unknown } | undefined)?.originalCode;
    if (typeof originalCode === 'string' && (UNAVAILABLE_CODES.has(originalCode) || /^(08|57P|53)/.test(originalCode))) return true;
    e = cause;
  }
  return false;
}

function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (isDatabaseUnavailable(err)) return 503;
  // Errors Koa and its body parser raise for bad requests carry a 4xx status.
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return status;
  return 500;
}

/**
 * The one place errors become responses: a status code and its reason phrase as plain text,
 * never a JSON body. Unexpected errors are logged; a database outage is a 503.
 */
export function errorHandler(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const status = statusOf(err);
      if (status === 500) logger.error({ err }, 'unexpected error');
      else if (status === 503) logger.warn({ err: (err as Error).message }, 'database unavailable');
      ctx.status = status;
      ctx.type = 'text/plain';
      ctx.body = STATUS_CODES[status] ?? String(status);
      if (err instanceof HttpError) ctx.set(err.headers);
      if (status === 503) ctx.set('Retry-After', '1');
    }
  };
}

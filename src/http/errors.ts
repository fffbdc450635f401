import { STATUS_CODES } from 'node:http';
import type Koa from 'koa';
import { isDatabaseUnavailable } from '../db/errors';
import type { Logger } from '../logger';

/** Thrown by routes and middleware; the error middleware turns it into the bare status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(STATUS_CODES[status] ?? String(status), options);
  }
}

function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (isDatabaseUnavailable(err)) return 503;
  // Errors Koa raises for bad requests carry a 4xx status.
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return status;
  return 500;
}

/**
 * The one place errors become responses: a status code and its reason phrase as plain text,
 * never a JSON body (docs/decisions.md, rule 15). Unexpected errors are logged; a database that
 * is not answering is a 503 with Retry-After.
 */
export function errorHandler(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const status = statusOf(err);
      if (status === 500) logger.error({ err }, 'unexpected error');
      else if (status === 503) logger.warn({ err: (err as Error)?.message }, 'database unavailable');
      else if (err instanceof HttpError && err.cause instanceof Error) {
        logger.warn({ err: err.cause.message, status }, 'value refused by the database');
      }
      ctx.status = status;
      ctx.type = 'text/plain';
      ctx.body = STATUS_CODES[status] ?? String(status);
      if (err instanceof HttpError) ctx.set(err.headers);
      if (status === 503) ctx.set('Retry-After', '1');
    }
  };
}

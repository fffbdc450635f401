import { type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';
import type Koa from 'koa';
import { KeysUnavailable } from '../auth/provider';
import { TokenRefused } from '../auth/refusal';
import { isDatabaseUnavailable, isServerDown } from '../db/errors';
import { WriteOutcomeUnknown } from '../db/pool';
import type { Logger } from '../logger';
import { HEADERS, KEPT_ON_ERRORS } from './headers';

/** Thrown by routes and middleware; the error middleware turns it into the bare status. */
export class HttpError extends Error {
  /** Said after the reason phrase in the plain-text body, where the status alone says too little (a refusal's why). */
  readonly reason?: string;

  constructor(
    readonly status: number,
    readonly headers: Record<string, string> = {},
    options?: ErrorOptions & { reason?: string },
  ) {
    super(STATUS_CODES[status] ?? String(status), options);
    if (options?.reason !== undefined) this.reason = options.reason;
  }
}

function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (err instanceof WriteOutcomeUnknown) return 504;
  if (isDatabaseUnavailable(err)) return 503;
  // Errors Koa raises for bad requests carry a 4xx status.
  const status = (err as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return status;
  return 500;
}

/** Names of the headers an error answer keeps (headers.ts), as node keeps them: lowercase. */
const KEPT = new Set(KEPT_ON_ERRORS.map((name) => name.toLowerCase()));

/** Each header's name as the registry spells it, by its lowercase name. */
const SPELLING = new Map(Object.keys(HEADERS).map((name) => [name.toLowerCase(), name]));

/**
 * The headers as they were (`before`, a copy taken earlier), those of the request's own that
 * an error answer keeps (KEPT), and Vary as the request left it: the others set since are
 * removed, those changed or removed since are put back.
 */
function restoreHeaders(ctx: Koa.Context, before: OutgoingHttpHeaders): void {
  const vary = ctx.response.get('Vary');
  for (const name of ctx.res.getHeaderNames()) if (!KEPT.has(name)) ctx.remove(name);
  // Put back as the registry spells them (getHeaders() lowercases): X-Request-Id, not x-request-id.
  for (const [name, value] of Object.entries(before)) {
    if (value !== undefined) ctx.set(SPELLING.get(name) ?? name, typeof value === 'number' ? String(value) : value);
  }
  // The fields that chose the answer chose its error too: GET /bikes/changes is 429 to an event stream only.
  if (vary) ctx.set('Vary', vary);
}

/** How long a warning of the same words is not written again (coalesced). */
const REPEATS_WITHIN_MS = 10_000;

/**
 * A warning (`msg`, with `err`) written once for each distinct `err` in 10 s: while the database
 * is failing before the watch has judged it (a pooler refusing every request the same way), a
 * line per request would bury the watch's line per change. The next line of the same words after
 * the quiet window says how many were left out (`repeated`).
 */
export function coalesced(logger: Logger, msg: string): (err: string) => void {
  const last = new Map<string, { at: number; repeated: number }>();
  return (err) => {
    const now = Date.now();
    const seen = last.get(err);
    if (seen && now - seen.at < REPEATS_WITHIN_MS) {
      seen.repeated++;
      return;
    }
    for (const [key, { at }] of last) if (now - at >= REPEATS_WITHIN_MS) last.delete(key);
    logger.warn(seen?.repeated ? { err, repeated: seen.repeated } : { err }, msg);
    last.set(err, { at: now, repeated: 0 });
  };
}

/**
 * The one place errors become responses: a status code and its reason phrase as plain text,
 * never a JSON body (docs/reference/requests-and-answers.md#errors). Unexpected errors are logged; a database that
 * is not answering is a 503 with Retry-After. An error answer carries the headers set before
 * this middleware was entered (the request id, CORS, Vary) and its own, never those of the
 * answer it replaces: a list that set its ETag and Cache-Control before its rows failed must not
 * hand them to a 503.
 */
export function errorHandler(logger: Logger): Koa.Middleware {
  const unavailable = coalesced(logger, 'database unavailable');
  return async (ctx, next) => {
    // A copy (getHeaders() makes one) of the few headers outer middleware set: cheap.
    const before = ctx.res.getHeaders();
    try {
      await next();
    } catch (err) {
      restoreHeaders(ctx, before);
      const status = statusOf(err);
      // A 503 for a token the identity provider's keys could not judge: logged as that, with why.
      const keys = err instanceof HttpError && err.cause instanceof KeysUnavailable ? err.cause : undefined;
      const cause = err instanceof HttpError ? err.cause : err;
      if (status === 500) logger.error({ err }, 'unexpected error');
      else if (keys) logger.warn({ err: (keys.cause as Error | undefined)?.message }, keys.message);
      else if (isServerDown(cause)) {
        // Failed at once, the server judged down or hung: the watch said so once, as it changed.
        logger.debug({ err: (cause as Error).message }, 'database unavailable');
      } else if (cause instanceof WriteOutcomeUnknown) {
        logger.warn({ err: cause.message }, 'database unavailable');
      } else if (isDatabaseUnavailable(cause)) {
        unavailable((cause as Error).message);
      } else if (cause instanceof TokenRefused) {
        // The client's token: counted by reason (http_auth_refusals_total), not logged line by line.
      } else if (cause instanceof Error) {
        // A 503 of the service's own (a limit of this instance) says why; a 4xx, the value refused.
        logger.warn({ err: cause.message, status }, status >= 500 ? 'unavailable' : 'value refused by the database');
      }
      ctx.status = status;
      ctx.type = 'text/plain';
      const phrase = STATUS_CODES[status] ?? String(status);
      ctx.body = err instanceof HttpError && err.reason !== undefined ? `${phrase}: ${err.reason}` : phrase;
      if (err instanceof HttpError) ctx.set(err.headers);
      if (status === 503) ctx.set('Retry-After', '1');
    }
  };
}

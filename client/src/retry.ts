import { BlockedError, CatalogError, ServerError } from './errors.ts';
import type { Tokens } from './tokens.ts';

/** What a request answered: openapi-fetch's result, of which this needs the response. */
interface Answer {
  response: Response;
}

export interface Persistence {
  /** What is being done, for error messages: `POST /bikes/`, `GET /bikes/all`. */
  what: string;
  /** Answers (and lost connections) to take before giving up. */
  attempts: number;
  /** Bounds each request, for a service that hangs: past it, the request counts as a lost connection. */
  timeoutMs: number;
  /** Ends the waiting and the request in flight: the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The token a write is signed with (client.ts): renewed once if the service refuses it. */
  tokens?: Tokens;
  /** A create's key, which the error names when the outcome is not settled. */
  idempotencyKey?: string;
  /**
   * The request writes (a create, an update, a delete): its outcome can be unknown. A read's never
   * is, and it gives up after LOST_READS lost connections in a row, unless its `attempts` are
   * Infinity (follow's, which says `offline` meanwhile).
   */
  writes?: boolean;
  /** Whether a lost connection was the browser withholding the service's answers from this page (client.ts). */
  withheld?: (signal: AbortSignal) => Promise<boolean>;
  /** Told each time an attempt does not settle the request, and it is sent again after a wait (follow's `offline`). */
  onUnsettled?: (said: string) => void;
}

/**
 * Lost connections in a row after which a read gives up: a read is cheap to ask again, and a
 * service that does not answer three times in a second or so is down, or not reachable from here,
 * which the caller should hear now rather than after half a minute.
 */
const LOST_READS = 3;

/**
 * Sends a request until an answer settles it, and returns that answer: a success, or a refusal
 * (a 4xx other than those below). On the way it waits out an answer that says nothing was
 * written and when to come back (503, 429, 409: `Retry-After`); renews a refused token once (401,
 * 403); and sends again after an answer or a lost connection that leaves the outcome unknown
 * (504, another 5xx, a network error, the timeout). Only a request that is safe to repeat comes
 * here: a read, a create with its Idempotency-Key, a conditional write. `unknown` says that an
 * earlier attempt may have been applied. `check` runs after an unknown outcome, with its answer if
 * one came: an answer it returns settles the request (a create finds the bike it made).
 */
export async function persist<A extends Answer, B extends Answer = A>(
  send: (signal: AbortSignal) => Promise<A>,
  options: Persistence,
  check?: (answer: A | undefined, signal: AbortSignal) => Promise<B | undefined>,
): Promise<{ answer: A | B; unknown: boolean }> {
  const { what, attempts, timeoutMs, signal, tokens, idempotencyKey, writes = false } = options;
  let unknown = false;
  let renewed = false;
  let lost = 0;
  let tried = 0;
  let last: { status?: number; said: string; cause?: unknown } = { said: 'nothing tried' };
  const bounded = () => {
    const timeout = AbortSignal.timeout(timeoutMs);
    return signal ? AbortSignal.any([signal, timeout]) : timeout;
  };
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let answer: A | undefined;
    tried = attempt;
    try {
      answer = await send(bounded());
      lost = 0;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      // Ours, not the connection's: the token could not be had, or sent (tokens.ts).
      if (err instanceof CatalogError) throw err;
      last = { said: `no answer (${err instanceof Error ? err.message : String(err)})`, cause: err };
      lost++;
      // Asked once a run of lost connections starts: a browser says no more about what failed.
      if (lost === 1 && (await options.withheld?.(bounded()).catch(() => false))) {
        throw new BlockedError(
          `${what}: the service answers, but not to this page: its CORS_ORIGIN must name ${pageOrigin()} ` +
            `(the browser withheld its answer${writes ? ' and sent no write' : ''}); nothing was written`,
          undefined,
          { cause: err },
        );
      }
      if (!writes && attempts !== Infinity && lost >= LOST_READS) break;
    }
    if (answer) {
      const { status } = answer.response;
      last = { status, said: `${status} ${answer.response.statusText}` };
      if ((status === 401 || status === 403) && tokens && !renewed) {
        tokens.renew();
        renewed = true;
        continue;
      }
      if (status === 409 || status === 429 || status === 503) {
        options.onUnsettled?.(last.said);
        await sleep(retryAfterMs(answer.response) ?? backoffMs(attempt), signal);
        continue;
      }
      if (status < 500) return { answer, unknown };
    }
    if (writes) unknown = true;
    options.onUnsettled?.(last.said);
    const found = await check?.(answer, bounded()).catch(() => undefined);
    if (found) return { answer: found, unknown };
    await sleep(backoffMs(attempt), signal);
  }
  // A read's outcome is never unknown: it wrote nothing, whatever came of it.
  const outcome = writes
    ? `; ${unknown ? 'its outcome is unknown' : 'nothing was written'}`
    : last.status === undefined
      ? '; the service is down, or not reachable from here'
      : '';
  throw new ServerError(
    `${what}: not settled in ${tried} attempts, the last ${last.said}${outcome}`,
    last.status,
    unknown ? 'unknown' : 'nothing',
    idempotencyKey,
    { cause: last.cause },
  );
}

/** The page's origin, for a message: where there is none (not a browser), the page's. */
function pageOrigin(): string {
  return (globalThis as { location?: { origin?: string } }).location?.origin ?? "the page's origin";
}

/**
 * `Retry-After` in milliseconds (seconds, or an HTTP date), a minute at most: the service's own are
 * a second, or the rest of a limit's minute, and a call should not sleep for an hour on what a
 * proxy on the way said. Undefined when absent or unreadable.
 */
function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('Retry-After')?.trim();
  if (!value) return undefined;
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isNaN(ms) ? undefined : Math.min(60_000, Math.max(0, ms));
}

/** Exponential, from 250 ms up to 5 s, with jitter, so that clients cut off together do not come back together. */
function backoffMs(attempt: number): number {
  return Math.min(5000, 250 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
}

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener('abort', aborted);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const aborted = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

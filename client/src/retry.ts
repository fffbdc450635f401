import { CatalogError, ServerError } from './errors.ts';
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
}

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
  const { what, attempts, timeoutMs, signal, tokens, idempotencyKey } = options;
  let unknown = false;
  let renewed = false;
  let last: { status?: number; said: string; cause?: unknown } = { said: 'nothing tried' };
  const bounded = () => {
    const timeout = AbortSignal.timeout(timeoutMs);
    return signal ? AbortSignal.any([signal, timeout]) : timeout;
  };
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let answer: A | undefined;
    try {
      answer = await send(bounded());
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      // Ours, not the connection's: the token could not be had (tokens.ts).
      if (err instanceof CatalogError) throw err;
      last = { said: `no answer (${err instanceof Error ? err.message : String(err)})`, cause: err };
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
        await sleep(retryAfterMs(answer.response) ?? backoffMs(attempt), signal);
        continue;
      }
      if (status < 500) return { answer, unknown };
    }
    unknown = true;
    const found = await check?.(answer, bounded()).catch(() => undefined);
    if (found) return { answer: found, unknown };
    await sleep(backoffMs(attempt), signal);
  }
  const outcome = unknown ? 'its outcome is unknown' : 'nothing was written';
  throw new ServerError(
    `${what}: not settled in ${attempts} attempts, the last ${last.said}; ${outcome}`,
    last.status,
    unknown ? 'unknown' : 'nothing',
    idempotencyKey,
    { cause: last.cause },
  );
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

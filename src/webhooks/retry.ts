/**
 * When a failed attempt is tried again (docs/webhooks.md#retries): WEBHOOK_RETRY_DELAYS, a list
 * of durations (`5s,5m,30m,2h,5h,10h,10h`, the default: eight attempts over more than a day); a
 * receiver's Retry-After may ask for longer, never for sooner. After the last, the subscription is
 * disabled.
 */

export const DEFAULT_RETRY_DELAYS = '5s,5m,30m,2h,5h,10h,10h';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `5s`, `250ms`, `2h` in milliseconds; undefined for anything else. */
export function durationMs(text: string): number | undefined {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(text.trim());
  return match ? Number(match[1]) * UNITS[match[2]] : undefined;
}

/** The delays of a WEBHOOK_RETRY_DELAYS text, or undefined when any part is not a duration. */
export function retryDelaysOf(text: string): number[] | undefined {
  const delays = text.split(',').map(durationMs);
  return delays.every((delay) => delay !== undefined) ? (delays as number[]) : undefined;
}

/** The longest a Retry-After may hold a subscription back: the longest default delay. */
const MAX_RETRY_AFTER_MS = 10 * 3_600_000;

/** A Retry-After header (seconds, or an HTTP date) in milliseconds from `now`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (header === undefined) return undefined;
  const wait = /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : Date.parse(header) - now;
  return Number.isFinite(wait) && wait > 0 ? Math.min(wait, MAX_RETRY_AFTER_MS) : undefined;
}

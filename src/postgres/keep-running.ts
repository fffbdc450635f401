import { setTimeout as sleep } from 'node:timers/promises';

/** The wait before an attempt to bring something up again, after `failures` failed ones: 1 s, doubling, at most 30 s. */
const waitAfter = (failures: number) => Math.min(1_000 * 2 ** failures, 30_000);

export interface KeepRunningOptions<T> {
  /**
   * Brings it up; `lost` is to be called when what it returned is lost (an end it hears of after
   * returning, or even before: either counts). `previous`: what was lost, when bringing it up again.
   */
  up(lost: () => void, previous?: T): Promise<T>;
  /** Heard once when what was up is lost, before the first attempt. */
  onLost(lost: T): void;
  /** Heard once for each attempt that failed, with the wait before the next. */
  onFailure(err: unknown, attempt: number, nextInMs: number): void;
}

export interface Kept<T> {
  /** What was brought up last. */
  current(): T;
  /**
   * No attempt starts after this; one in flight is waited for (what it brings up is then
   * current). What was brought up last.
   */
  stop(): Promise<T>;
}

/**
 * Brings something up, and again each time it is lost, until stopped: attempts wait 1 s, then
 * twice as long after each failure, up to 30 s. A first start that fails is the caller's
 * (it throws); only what was once up is brought up again.
 */
export async function keepRunning<T>({ up, onLost, onFailure }: KeepRunningOptions<T>): Promise<Kept<T>> {
  /** Attempts are numbered; `lostFor(n)` tells of the loss of what attempt n brought up. */
  let number = 1;
  let lostUpTo = 0;
  let stopping = false;
  let restarting: Promise<void> | undefined;
  const waits = new AbortController();

  const lostFor = (n: number) => () => {
    lostUpTo = Math.max(lostUpTo, n);
    if (n === number && !restarting && !stopping) {
      onLost(current);
      restarting = restart().finally(() => (restarting = undefined));
    }
  };

  const restart = async (): Promise<void> => {
    for (let failures = 0; !stopping;) {
      try {
        await sleep(waitAfter(failures), undefined, { signal: waits.signal });
      } catch {
        return; // stopping
      }
      const n = number + 1;
      try {
        current = await up(lostFor(n), current);
        number = n;
        // Lost again while it was being brought up: another attempt.
        if (lostUpTo < n) return;
        onLost(current);
        failures = 0;
      } catch (err) {
        failures++;
        onFailure(err, failures, waitAfter(failures));
      }
    }
  };

  let current = await up(lostFor(1));
  if (lostUpTo >= 1) lostFor(1)(); // lost before it was returned
  return {
    current: () => current,
    async stop() {
      stopping = true;
      waits.abort();
      await restarting;
      return current;
    },
  };
}

import { sql } from 'kysely';
import { type Query, queryOn, type ServicePool } from './pool';
import { kysely, param, prepare } from './sql';

/**
 * Requests per client per window, counted by each instance first and added to counters shared by
 * every instance (the table rate_limits, UNLOGGED) in one statement for all clients, so a request
 * costs no round trip of its own (docs/reference/callers.md#abuse-limits). Each instance knows the shared
 * count as of its last flush; it admits a request while that, and what it counted since, is
 * within the limit. What it counts before telling the others is at most `slack` (a hundredth of
 * the limit): past that, a request waits for a flush that carries it. So over N instances a
 * client gets at most (N - 1) x slack more than its limit in a window; a limit under 100 has no
 * slack and is exact.
 */

/** How often what was counted is added to the shared counters. */
const FLUSH_EVERY_MS = 250;
/** Windows older than this are deleted, a minute's worth at a time. */
const SWEEP_EVERY_MS = 60_000;

const statements = {
  /** Adds each key's count to its shared counter and returns the shared totals. */
  add: prepare({ keys: param<string[]>(), counts: param<number[]>(), expires: param<string[]>() }, (p) =>
    kysely
      .insertInto('rate_limits')
      .columns(['key', 'points', 'expire'])
      .expression(
        sql<{
          key: string;
          points: number;
          expire: string;
        }>`SELECT * FROM unnest(${p.keys}::text[], ${p.counts}::int[], ${p.expires}::bigint[])`,
      )
      .onConflict((conflict) =>
        conflict
          .column('key')
          .doUpdateSet((eb) => ({ points: eb('rate_limits.points', '+', eb.ref('excluded.points')) })),
      )
      .returning(['key', 'points']),
  ),
  /** Counters of windows that have ended. */
  sweep: prepare({ before: param<string>() }, (p) => kysely.deleteFrom('rate_limits').where('expire', '<', p.before)),
};

/** One client's count in one window, as this instance knows it. */
interface Count {
  /** The shared count as of the last flush (everyone's, this instance's included). */
  known: number;
  /** Admitted here since, not yet added to the shared count. */
  pending: number;
  /** Being added by the flush in flight. */
  flushing: number;
  /** When the window ends (epoch ms). */
  expires: number;
}

export interface Admission {
  admitted: boolean;
  limit: number;
  /** Requests left in the window, as this instance knows it. */
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

export interface SharedLimit {
  readonly limit: number;
  readonly windowSeconds: number;
  /** Counts one request of `client`, unless it is over the limit. */
  admit(client: string): Promise<Admission>;
  stop(): void;
}

/** A limit of `limit` requests per client per `windowSeconds`, named `name` in the shared counters. */
export function sharedLimit(pool: ServicePool, name: string, limit: number, windowSeconds = 60): SharedLimit {
  const query: Query = queryOn(pool);
  const windowMs = windowSeconds * 1000;
  const slack = Math.floor(limit / 100);
  const counts = new Map<string, Count>();
  let flushing: Promise<void> | undefined;

  /** Adds every pending count to the shared counters, one flush at a time. */
  function flush(): Promise<void> {
    flushing ??= (async () => {
      const batch = [...counts].filter(([, count]) => count.pending > 0);
      if (batch.length === 0) return;
      for (const [, count] of batch) [count.flushing, count.pending] = [count.pending, 0];
      try {
        const rows = await statements.add.run(query, {
          keys: batch.map(([key]) => key),
          counts: batch.map(([, count]) => count.flushing),
          expires: batch.map(([, count]) => String(count.expires)),
        });
        for (const { key, points } of rows) {
          const count = counts.get(key);
          if (count) count.known = points;
        }
        for (const [, count] of batch) count.flushing = 0;
      } catch {
        // The store is away: what was counted stays counted here, and goes at the next flush.
        for (const [, count] of batch) [count.pending, count.flushing] = [count.pending + count.flushing, 0];
      }
    })().finally(() => (flushing = undefined));
    return flushing;
  }

  const flushTimer = setInterval(() => void flush(), FLUSH_EVERY_MS);
  flushTimer.unref();
  const sweepTimer = setInterval(() => {
    const now = Date.now();
    for (const [key, count] of counts) if (count.expires <= now && count.pending === 0) counts.delete(key);
    statements.sweep.run(query, { before: String(now) }).catch(() => undefined);
  }, SWEEP_EVERY_MS);
  sweepTimer.unref();

  const used = (count: Count) => count.known + count.pending + count.flushing;

  return {
    limit,
    windowSeconds,
    async admit(client) {
      const now = Date.now();
      const expires = (Math.floor(now / windowMs) + 1) * windowMs;
      const key = `${name}:${expires}:${client}`;
      let count = counts.get(key);
      if (!count) counts.set(key, (count = { known: 0, pending: 0, flushing: 0, expires }));
      // Counted whether it is admitted or not: a refused request is a request too.
      count.pending++;
      // Past the slack, this request is added to the shared count, and the others' read, before it
      // is judged (after a flush already in flight, which does not carry it).
      if (count.pending + count.flushing > slack) {
        await flushing;
        await flush();
      }
      const admitted = used(count) <= limit;
      return {
        admitted,
        limit,
        remaining: Math.max(0, limit - used(count)),
        resetSeconds: Math.max(1, Math.ceil((expires - now) / 1000)),
      };
    },
    stop() {
      clearInterval(flushTimer);
      clearInterval(sweepTimer);
    },
  };
}

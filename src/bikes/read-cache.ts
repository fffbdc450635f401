import { performance } from 'node:perf_hooks';
import type { Query } from '../db/pool';
import { seenOf, type Unchanged, versionAndChangesSince, versionOf } from './catalog-version';

/**
 * Bikes read by id and by handle, kept in memory and kept coherent by the change log
 * (docs/reference/database.md#the-read-cache). Every READ_CACHE_POLL_MS a poll reads, in one
 * statement, the primary's snapshot (pg_current_snapshot) and the bikes whose changes that
 * snapshot sees and the previous poll's did not (versionAndChangesSince), and evicts them. A fill
 * (a miss read on the primary) notes the eviction generation it started in and is dropped when
 * its bike was evicted since. So an entry never outlives a committed change by more than the
 * time since the last poll began; and answers are given from memory only while that is at most
 * READ_CACHE_BOUND_MS, else read as without the cache.
 *
 * Why no change is missed: a fill that did not see a change C read in a snapshot taken after the
 * poll of its generation g, so C is in no snapshot up to g's. The first poll whose snapshot has C
 * follows one whose snapshot has not (that is where the eviction looks: C's transaction is not
 * visible there, so it is at or past that snapshot's xmin), and it evicts C's bike: the entry, if
 * the fill is in, or the fill, when it comes in later (its bike was evicted after g).
 */

/** How often the poll runs. */
const READ_CACHE_POLL_MS = 100;
/**
 * The staleness bound: an answer from memory reflects every change committed at least this long
 * before it was given (checked at every read: the last applied poll began within it).
 * @internal test/scale/read-cache.test.ts judges every answer by it.
 */
export const READ_CACHE_BOUND_MS = 1_000;
/** A last poll this old is not compared with (the log keeps changes for days: CHANGES_RETENTION_DAYS). */
const FORGET_AFTER_MS = 60_000;

/** What the cache keeps: a bike (and what comes with it, such as its state), by its id. */
interface Kept {
  bike: { id: string };
}

export interface ReadCache<StoredBike extends Kept = Kept> {
  /** A bike by id: from memory, or read by `read` and kept. Undefined while the cache may not answer. */
  byId(id: string, read: () => Promise<StoredBike | null>): Promise<StoredBike | null> | undefined;
  /** The first bike with a handle, the same way. */
  byHandle(handle: string, read: () => Promise<StoredBike | null>): Promise<StoredBike | null> | undefined;
  /**
   * The catalog's version as the last poll read it, when `current` says the client's copy of a
   * list is of it, under the same bound, and only while no write of this instance came after
   * that poll began (read your writes); undefined otherwise.
   */
  unchanged(current: (version: string[]) => boolean): Unchanged | undefined;
  /** A write of this instance to the bike has ended (whatever its outcome): evicted at once, fills under way dropped. */
  wrote(id: string): void;
  /** Forgets everything (a changed catalog identity: a restore, a failover), and starts again from the next poll. */
  flush(): void;
  stop(): void;
}

/** What the last applied poll saw. */
interface Poll {
  /** When it was sent (performance.now()): its snapshot was taken after. */
  sentAt: number;
  snapshot: string;
  xmin: bigint;
  triggers: string;
  /** The cluster, timeline and database the snapshot is of (a restore, a failover: another). */
  history: string;
  unchanged: Omit<Unchanged, 'current'> | undefined;
}

/** What counts the reads through the cache, by result (the service's: db_cache_reads_total). */
export type ReadCacheCounters = Record<'hit' | 'miss' | 'bypass', { inc(): void }>;

/**
 * Starts the poll on `query` (the primary's) and answers reads from memory, at most `entries`
 * bikes by id and by handle together, the least recently used going first.
 */
export function startReadCache<StoredBike extends Kept>(
  query: Query,
  { entries, counters }: { entries: number; counters: ReadCacheCounters },
): ReadCache<StoredBike> {
  const ids = new Map<string, StoredBike>();
  const handles = new Map<string, StoredBike>();
  /** Bumped at every eviction; a fill keeps what it read only if its bike was not evicted after it began. */
  let generation = 0;
  /** The generation of each bike's last eviction, oldest first, kept while a fill that began before it is under way. */
  const evictedAt = new Map<string, number>();
  let handlesClearedAt = 0;
  let flushedAt = 0;
  /** Fills under way, by the generation they began in (ascending: generations only grow). */
  const filling = new Map<number, number>();
  let poll: Poll | undefined;
  /** When the last write of this instance ended. */
  let wroteAt = -Infinity;
  const { hit: hits, miss: misses, bypass: bypasses } = counters;

  const fresh = () => poll !== undefined && performance.now() - poll.sentAt <= READ_CACHE_BOUND_MS;

  const evict = (changed: Iterable<string>) => {
    generation++;
    let any = false;
    for (const id of changed) {
      any = true;
      ids.delete(id);
      evictedAt.delete(id);
      evictedAt.set(id, generation);
    }
    // Any change may change which bike comes first for a handle: the handles go.
    if (any) {
      handles.clear();
      handlesClearedAt = generation;
    }
  };

  const flush = () => {
    generation++;
    flushedAt = generation;
    ids.clear();
    handles.clear();
    evictedAt.clear();
    poll = undefined;
  };

  /** The generations of evictions no fill under way began before are no longer needed. */
  const forgetOldEvictions = () => {
    const oldest = filling.keys().next();
    for (const [id, at] of evictedAt) {
      if (!oldest.done && at > oldest.value) return;
      evictedAt.delete(id);
    }
  };

  const keep = (into: Map<string, StoredBike>, key: string, bike: StoredBike) => {
    into.delete(key);
    into.set(key, bike);
    while (ids.size + handles.size > entries) {
      const from = ids.size >= handles.size ? ids : handles;
      from.delete(from.keys().next().value as string);
    }
  };

  function through(
    into: Map<string, StoredBike>,
    key: string,
    read: () => Promise<StoredBike | null>,
    evictedSince: (bike: StoredBike, began: number) => boolean,
  ): Promise<StoredBike | null> | undefined {
    if (!fresh()) {
      bypasses.inc();
      return undefined;
    }
    const kept = into.get(key);
    if (kept) {
      hits.inc();
      // The most recently used goes last.
      into.delete(key);
      into.set(key, kept);
      return Promise.resolve(kept);
    }
    misses.inc();
    const began = generation;
    filling.set(began, (filling.get(began) ?? 0) + 1);
    return read().then(
      (bike) => {
        done(began);
        if (bike && flushedAt <= began && !evictedSince(bike, began)) keep(into, key, bike);
        return bike;
      },
      (err: unknown) => {
        done(began);
        throw err;
      },
    );
  }
  const done = (began: number) => {
    const left = (filling.get(began) ?? 1) - 1;
    if (left === 0) filling.delete(began);
    else filling.set(began, left);
  };
  const idEvictedSince = (id: string, began: number) => (evictedAt.get(id) ?? 0) > began;

  let flushes = 0;
  const pollOnce = async () => {
    const sentAt = performance.now();
    // Polls that failed for long: the log's pruning may have passed the last snapshot's changes.
    if (poll !== undefined && sentAt - poll.sentAt > FORGET_AFTER_MS) {
      flush();
      flushes++;
    }
    const flushesBefore = flushes;
    const [row] = await versionAndChangesSince.run(query, { previous: poll?.snapshot ?? null });
    // A flush since it was sent: its snapshot may belong to the history before.
    if (flushes !== flushesBefore) return;
    const xmin = BigInt(row.snapshot.split(':')[0]);
    const version = versionOf(row);
    // Another history (or an xmin that went back), a trigger switched, or changes not all counted:
    // the log may not have every change, so nothing is kept from before; not counting, nothing is kept at all.
    const last = poll;
    const another =
      last !== undefined &&
      (xmin < last.xmin || row.history !== last.history || row.triggers !== last.triggers || version === undefined);
    if (another) {
      flush();
      flushes++;
    } else if (row.changed) {
      evict(row.changed);
    }
    if (version === undefined) return;
    poll = {
      sentAt,
      snapshot: row.snapshot,
      xmin,
      triggers: row.triggers,
      history: row.history,
      unchanged: { version, seen: seenOf(row) },
    };
    forgetOldEvictions();
  };

  let polling: Promise<void> | undefined;
  const timer = setInterval(() => {
    // Polls never overlap; one that fails leaves the last one standing, which ages past the bound.
    polling ??= pollOnce()
      .catch(() => undefined)
      .finally(() => (polling = undefined));
  }, READ_CACHE_POLL_MS);
  timer.unref();

  return {
    byId: (id, read) => through(ids, id, read, (_bike, began) => idEvictedSince(id, began)),
    byHandle: (handle, read) =>
      through(handles, handle, read, (bike, began) => handlesClearedAt > began || idEvictedSince(bike.bike.id, began)),
    unchanged(current) {
      const known = fresh() && poll && poll.sentAt > wroteAt ? poll.unchanged : undefined;
      return known && current(known.version) ? { current: true, ...known } : undefined;
    },
    wrote(id) {
      wroteAt = performance.now();
      evict([id]);
    },
    flush() {
      flush();
      flushes++;
    },
    stop: () => clearInterval(timer),
  };
}

import type { PoolClient, QueryResult, QueryResultRow } from 'pg';
import { databaseErrors, databaseReads, replicaLag } from '../metrics';
import { withinTime } from '../timeout';
import { acquire, isStaleStatement, type Query, queryOn, queryOnClient, type ServicePool } from './pool';

export type { Query };

/**
 * Reads go to the replica while it is at most this far behind the primary.
 * @internal test/scale/replica.test.ts measures the lag against it.
 */
export const MAX_REPLICA_LAG_MS = 2_000;
const CHECK_EVERY_MS = 250;
/** A check that takes longer marks the replica unusable (the next one starts once it settles). */
const CHECK_TIMEOUT_MS = 1_000;
/** The primary's WAL positions kept for the lag: an hour of checks, so the lag is exact up to an hour. */
const MAX_POSITIONS = (3_600 * 1_000) / CHECK_EVERY_MS;

/** A read sent to the replica that has no answer after this long is asked of the primary instead (docs/reference/database.md#replica-reads). */
const REPLICA_READ_DEADLINE_MS = 1_000;

/**
 * One consistent view of one database: a checked-out connection in a REPEATABLE READ READ ONLY
 * transaction, for a list's version and all its rows. It holds the connection until `close`,
 * at most for the pool's cut-off (30 s: QUERY_TIMEOUT_MS in pool.ts), after which the
 * connection is cancelled and closed, and a list still streaming from it is cut.
 */
interface Snapshot {
  query: Query;
  /** Ends the transaction and gives the connection back; safe to call more than once. */
  close(): Promise<void>;
}

/** Where the read routes' queries run. */
export interface Reads {
  query: Query;
  /**
   * A snapshot, with `begin`'s result: what a read needs to know it can go on (a list's version
   * and first rows). A failure there still falls back to the primary; one after it cannot.
   */
  snapshot<T>(begin: (query: Query) => Promise<T>): Promise<{ begun: T; snapshot: Snapshot }>;
  /**
   * Set while reads are answered by a replica because the primary (or the pooler in front of it)
   * cannot be reached: the commit time of the last transaction the replica replayed (null if it
   * cannot tell). Read before a read starts: that read is served under the same state.
   */
  stale?(): { replayedAt: Date | null } | undefined;
}

const BEGIN_SNAPSHOT = 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY';

async function openSnapshot<T>(
  pool: ServicePool,
  begin: (query: Query) => Promise<T>,
): Promise<{ begun: T; snapshot: Snapshot }> {
  const client: PoolClient = await acquire(pool);
  // A connection that dies while the snapshot waits for its client (checked out, so the pool does
  // not listen) must not crash the process: the next query on it fails, and close() discards it.
  const ignore = () => undefined;
  client.on('error', ignore);
  const giveBack = (err?: unknown) => {
    client.off('error', ignore);
    client.release(err === undefined ? undefined : err instanceof Error ? err : true);
  };
  try {
    await client.query(BEGIN_SNAPSHOT);
  } catch (err) {
    giveBack(err);
    throw err;
  }
  let closed = false;
  const snapshot: Snapshot = {
    query: queryOnClient(client, { inTransaction: true }),
    async close() {
      if (closed) return;
      closed = true;
      try {
        await client.query('COMMIT');
        giveBack();
      } catch (err) {
        // A connection whose transaction state is unknown is not given back to the pool.
        giveBack(err);
      }
    },
  };
  try {
    try {
      return { begun: await begin(snapshot.query), snapshot };
    } catch (err) {
      // A statement prepared before that no longer stands ended the transaction before it read
      // anything; the connection prepares none now: begun once more (src/db/pool.ts, queryOnClient).
      if (!isStaleStatement(err)) throw err;
      await client.query(`ROLLBACK; ${BEGIN_SNAPSHOT}`);
      return { begun: await begin(snapshot.query), snapshot };
    }
  } catch (err) {
    await snapshot.close();
    throw err;
  }
}

/** Reads on one pool: the primary's, when no replica is configured or a client asks for it. */
export function poolReads(pool: ServicePool, counted = 'primary'): Reads {
  const query = queryOn(pool);
  const reads = databaseReads.labels(counted);
  return {
    async query<Row extends QueryResultRow>(text: string, values: unknown[], name?: string) {
      const result = await query<Row>(text, values, name);
      reads.inc();
      return result;
    },
    async snapshot(begin) {
      const opened = await openSnapshot(pool, begin);
      reads.inc();
      return opened;
    },
  };
}

/** A WAL position ('16/B374D848') as a number of bytes. */
const lsn = (text: string) => {
  const [high, low] = text.split('/');
  return BigInt(`0x${high}`) * 2n ** 32n + BigInt(`0x${low}`);
};

/**
 * Reads on the replica while it is one (in recovery), of the primary's cluster (the same system
 * identifier), answers, and keeps up; otherwise on the primary, and back on the replica once it
 * qualifies again. Any error of the replica's falls back to the primary for that read: a replica
 * that is down, hangs, was promoted, belongs elsewhere or lacks a table never causes a 5xx. The
 * lag is measured without clocks: the primary's WAL position is noted at every check, and the
 * replica is as far behind as the oldest position it has not replayed yet, however old (the
 * gauge db_replica_lag_seconds shows it). Checks never overlap.
 */
export function replicaReads(primaryPool: ServicePool, replicaPool: ServicePool): Reads & { stop(): void } {
  const primary = poolReads(primaryPool);
  const fallback = poolReads(primaryPool, 'primary-fallback');
  const replica = poolReads(replicaPool, 'replica');
  let usable = false;
  /** Set while the primary does not answer and the replica serves the reads (see `stale`). */
  let primaryAway: { replayedAt: Date | null } | undefined;
  /** The primary's cluster, as last seen: a replica of another is never read. */
  let primarySystem: string | undefined;
  const positions: { at: number; lsn: bigint }[] = [];

  // One question to the primary at a time: one that hangs is asked again, not anew, so a hung
  // primary holds one of the pool's connections, not one per check.
  let primaryAsked: Promise<QueryResult<{ lsn: string; system: string }>> | undefined;
  const askPrimary = () =>
    (primaryAsked ??= primaryPool
      .query<{ lsn: string; system: string }>(
        'SELECT pg_current_wal_lsn()::text AS lsn, (SELECT system_identifier::text FROM pg_control_system()) AS system',
      )
      .finally(() => (primaryAsked = undefined)));
  const askReplica = () =>
    replicaPool.query<{ lsn: string | null; recovering: boolean; system: string; replayed_at: Date | null }>(
      `SELECT pg_last_wal_replay_lsn()::text AS lsn, pg_is_in_recovery() AS recovering,
              (SELECT system_identifier::text FROM pg_control_system()) AS system,
              pg_last_xact_replay_timestamp() AS replayed_at`,
    );

  /**
   * Without the primary, the lag cannot be measured: the replica serves the reads if it is still
   * a replica of the primary's cluster, marked as possibly stale (docs/reference/database.md#reads-while-the-primary-is-away).
   */
  const judgeWithoutPrimary = async (replicaSide: ReturnType<typeof askReplica>) => {
    const [replica] = (await replicaSide).rows;
    usable = replica.recovering && replica.system === primarySystem && replica.lsn !== null;
    primaryAway = usable ? { replayedAt: replica.replayed_at } : undefined;
  };

  const measure = async () => {
    const primarySide = askPrimary();
    const replicaSide = askReplica();
    // Both are handled below, the replica's only after the primary's: meanwhile, neither
    // failure may count as unhandled.
    primarySide.catch(() => undefined);
    replicaSide.catch(() => undefined);
    const primaryAnswer = await withinTime(
      primarySide.then(
        (result) => result,
        () => 'failed' as const,
      ),
      CHECK_TIMEOUT_MS,
    );
    if (primaryAnswer === 'timeout' || primaryAnswer === 'failed') {
      // Away only when its watch says so (down or hung): a check a busy machine left unanswered
      // is no outage, and the lag is unknown, so the reads go to the primary meanwhile.
      if (primaryPool.server.down()) await judgeWithoutPrimary(replicaSide);
      else [usable, primaryAway] = [false, undefined];
      return;
    }
    const [{ rows: onPrimary }, { rows: onReplica }] = [primaryAnswer, await replicaSide];
    primarySystem = onPrimary[0].system;
    primaryAway = undefined;
    const now = Date.now();
    // When full, the newest positions wait: the lag comes from the oldest, which stays.
    if (positions.length < MAX_POSITIONS) positions.push({ at: now, lsn: lsn(onPrimary[0].lsn) });
    const { lsn: replayedText, recovering, system } = onReplica[0];
    const replayed = replayedText === null ? -1n : lsn(replayedText);
    // Positions the replica has replayed tell nothing more; the oldest it has not is the lag.
    while (positions.length > 0 && positions[0].lsn <= replayed) positions.shift();
    const lagMs = positions.length > 0 ? now - positions[0].at : 0;
    replicaLag.set(lagMs / 1000);
    usable = recovering && system === onPrimary[0].system && replayedText !== null && lagMs <= MAX_REPLICA_LAG_MS;
  };
  let checking: Promise<void> | undefined;
  const check = async () => {
    const measuring = measure().catch(() => {
      usable = false;
      primaryAway = undefined;
    });
    if ((await withinTime(measuring, 2 * CHECK_TIMEOUT_MS)) === 'timeout') {
      usable = false;
      primaryAway = undefined;
    }
    await measuring; // a replica that hangs holds this check, and no other starts meanwhile
  };
  const tick = () => {
    checking ??= check().finally(() => (checking = undefined));
  };
  const timer = setInterval(tick, CHECK_EVERY_MS);
  timer.unref();
  tick();

  const replicaErrors = databaseErrors.labels('replica');
  /**
   * `read` on the replica while it qualifies, else on the primary; also when the replica fails in
   * any way, or has not answered within REPLICA_READ_DEADLINE_MS (what it answers later is given
   * to `discard`). A replica that is slow, not hung, stays in use: its checks and its pool's watch
   * tell the two apart (docs/reference/requests-and-answers.md#busy-is-not-down).
   */
  async function preferReplica<T>(read: (reads: Reads) => Promise<T>, discard: (late: T) => void): Promise<T> {
    if (!usable) return read(primary);
    const onReplica = read(replica);
    try {
      const answer = await withinTime(onReplica, REPLICA_READ_DEADLINE_MS);
      if (answer !== 'timeout') return answer;
      onReplica.then(discard, () => undefined);
    } catch {
      // The replica failed: below, the primary answers instead.
    }
    replicaErrors.inc();
    return read(fallback);
  }

  return {
    query: (text, values, name) =>
      preferReplica(
        (reads) => reads.query(text, values, name),
        () => undefined,
      ),
    snapshot: (begin) =>
      preferReplica(
        (reads) => reads.snapshot(begin),
        ({ snapshot }) => void snapshot.close(),
      ),
    stale: () => (usable ? primaryAway : undefined),
    stop: () => clearInterval(timer),
  };
}

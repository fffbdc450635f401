import type { Pool, QueryResult, QueryResultRow } from 'pg';
import { databaseErrors, databaseReads, replicaLag } from '../metrics';
import { isDatabaseUnavailable } from './errors';

/** Reads go to the replica while it is at most this far behind the primary. */
export const MAX_REPLICA_LAG_MS = 2_000;
const CHECK_EVERY_MS = 250;

/** Where the read routes' queries run. */
export interface Reads {
  query<Row extends QueryResultRow>(text: string, values: unknown[]): Promise<QueryResult<Row>>;
  /** Reads that stay on one database, for queries that must agree (a list's version and rows). */
  pin?(): Reads;
}

/** A WAL position ('16/B374D848') as a number of bytes. */
const lsn = (text: string) => {
  const [high, low] = text.split('/');
  return BigInt(`0x${high}`) * 2n ** 32n + BigInt(`0x${low}`);
};

/**
 * Reads on the replica while it answers and keeps up, otherwise on the primary, and back on the
 * replica once it recovers: a replica that is down or lagging never causes a 5xx. The lag is
 * measured without clocks: the primary's WAL position is noted at every check, and the replica
 * is as far behind as the oldest position it has not replayed yet.
 */
export function replicaReads(primary: Pool, replica: Pool): Reads & { stop(): void } {
  let usable = false;
  const positions: { at: number; lsn: bigint }[] = [];

  const check = async () => {
    try {
      const [{ rows: onPrimary }, { rows: onReplica }] = await Promise.all([
        primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'),
        replica.query<{ lsn: string | null }>('SELECT pg_last_wal_replay_lsn()::text AS lsn'),
      ]);
      const now = Date.now();
      positions.push({ at: now, lsn: lsn(onPrimary[0].lsn) });
      while (positions.length > 2 && now - positions[1].at > MAX_REPLICA_LAG_MS) positions.shift();
      const replayed = onReplica[0].lsn === null ? -1n : lsn(onReplica[0].lsn);
      const behind = positions.find((position) => position.lsn > replayed);
      const lagMs = behind ? now - behind.at : 0;
      replicaLag.set(lagMs / 1000);
      // Not a replica at all (no replay position): never read from it.
      usable = onReplica[0].lsn !== null && lagMs <= MAX_REPLICA_LAG_MS;
    } catch {
      usable = false;
    }
  };
  const timer = setInterval(() => void check(), CHECK_EVERY_MS);
  timer.unref();
  void check();

  /**
   * Reads on the replica while it works, then (and for good) on the primary: a switch from the
   * replica to the primary is the only one, so queries that follow read no older data.
   */
  const pinned = (): Reads => {
    let onReplica = usable;
    return {
      async query<Row extends QueryResultRow>(text: string, values: unknown[]) {
        if (onReplica) {
          try {
            const result = await replica.query<Row>(text, values);
            databaseReads.inc({ pool: 'replica' });
            return result;
          } catch (err) {
            if (!isDatabaseUnavailable(err)) throw err;
            onReplica = usable = false;
            databaseErrors.inc({ pool: 'replica' });
          }
        }
        const result = await primary.query<Row>(text, values);
        databaseReads.inc({ pool: 'primary' });
        return result;
      },
    };
  };

  return {
    query: (text, values) => pinned().query(text, values),
    pin: pinned,
    stop: () => clearInterval(timer),
  };
}

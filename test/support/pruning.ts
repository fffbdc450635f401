import type { Client } from 'pg';
import { waitFor } from './wait';

/** A change's place in the log (bike_changes), as PostgreSQL gives its int8s: text. */
export interface LogPosition {
  txid: string;
  change_id: string;
}

/**
 * Prunes the change log as the service does, changes older than `olderThan` (an SQL timestamptz
 * expression), again and again until pruning has passed `position`. Pruning waits for every
 * transaction that writes, in any of the server's databases, to end: on a server the test files
 * share, another file's may hold it back a moment.
 */
export async function pruneUntilPast(db: Client, olderThan: string, position: LogPosition): Promise<void> {
  const passed = async () => {
    await db.query(`SELECT * FROM prune_bike_changes(${olderThan}, 1000000)`);
    const { rows } = await db.query<{ passed: boolean }>(
      'SELECT (horizon_txid, horizon_change_id) >= ($1::bigint, $2::bigint) AS passed FROM bike_changes_pruning',
      [position.txid, position.change_id],
    );
    return rows[0].passed || undefined;
  };
  await waitFor('pruning to pass the change', passed, { everyMs: 200 });
}

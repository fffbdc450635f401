import { type SelectQueryBuilder, sql } from 'kysely';
import type { DB } from '../generated/kysely/database.ts';
import type { Query } from '../db/pool';
import { headThenRows, kysely, param, prepare } from '../db/sql';

/**
 * The catalog's version, as every list's ETag uses it (docs/reference/caching-and-conditions.md#conditional-get), and
 * what a list's rows are consistent with, as the change feed goes on from it
 * (docs/reference/browse-and-sync.md#the-change-feed): read in the same statement as the rows, or alone for a 304.
 */

/**
 * What a list's ETag is made of (docs/reference/caching-and-conditions.md#conditional-get) and what
 * its rows saw, in one row of the function catalog_list_version: each column is described where it
 * is defined, in its migration (prisma/migrations/*_list_version). A function, so that its plan is
 * made once a session, not with every list's unnamed statement. Unless `counting`, no version
 * stands for the rows (versionOf).
 */
export const listVersionRow = () =>
  sql<{
    version: string;
    touched: string;
    triggers: string;
    counting: boolean;
    snapshot: string;
    horizon_txid: string;
    horizon_change_id: string;
  }>`catalog_list_version()`.as('list_version');

const listVersion = () => kysely.selectFrom(listVersionRow()).selectAll('list_version');

/** A list's statement: the catalog's version, then the list's rows (`rows`, a query of bikes). */
export const withListVersion = <Row extends object, RowsDB extends DB, From extends keyof RowsDB>(
  rows: SelectQueryBuilder<RowsDB, From, Row>,
) => headThenRows(listVersion(), rows);

/**
 * What a list's rows are consistent with, for the change feed to go on from
 * (docs/reference/browse-and-sync.md#the-change-feed): the snapshot they were read in, the state of the triggers
 * that capture changes then, and how far pruning of the change log had gone.
 */
export interface Seen {
  snapshot: string;
  triggers: string;
  horizon: { txid: string; changeId: string };
}

export const seenOf = (row: {
  snapshot: string;
  triggers: string;
  horizon_txid: string;
  horizon_change_id: string;
}): Seen => ({
  snapshot: row.snapshot,
  triggers: row.triggers,
  horizon: { txid: row.horizon_txid, changeId: row.horizon_change_id },
});

/** A list's version as its ETag uses it: undefined while a trigger that keeps it is off. */
export function versionOf(row: { version: string; touched: string; triggers: string; counting: boolean }) {
  return row.counting ? [row.version, row.touched, row.triggers] : undefined;
}

/** The catalog's version alone. */
export const versionAlone = prepare({}, () => listVersion());

/** A list, or a page, the client has already: the version it is at, and what its rows saw. */
export interface Unchanged {
  current: true;
  version: string[];
  seen: Seen;
}

/**
 * The catalog's version read alone, when `current` says the client's copy of a list is of it (a
 * 304 reads no row); undefined when it is not.
 */
export async function unchangedFor(
  query: Query,
  current: (version: string[]) => boolean,
): Promise<Unchanged | undefined> {
  const [state] = await versionAlone.run(query, {});
  const version = versionOf(state);
  return version && current(version) ? { current: true, version, seen: seenOf(state) } : undefined;
}

/**
 * The read cache's poll (read-cache.ts): the catalog's version and the snapshot it was read in,
 * as versionAlone reads them, and, in the same statement (so in the same snapshot), the bikes
 * whose changes it sees and `previous` (a snapshot as text) did not: those recorded by a
 * transaction (writer_txid) from previous's xmin up (bike_changes_writer_txid_bike_id_idx) not
 * visible in it.
 * Every row the statement sees was written by a transaction visible in its snapshot. Null, with
 * no previous snapshot, and when none changed. And the history the snapshot is of.
 */
export const versionAndChangesSince = prepare({ previous: param<string | null>() }, (p) =>
  listVersion().select([
    sql<string[] | null>`(SELECT array_agg(DISTINCT bike_id::text) FROM bike_changes
        WHERE ${p.previous}::pg_snapshot IS NOT NULL
          AND writer_txid >= pg_snapshot_xmin(${p.previous}::pg_snapshot)::text::bigint
          AND NOT pg_visible_in_snapshot(writer_txid::text::xid8, ${p.previous}::pg_snapshot))`.as('changed'),
    // The history the snapshot belongs to, of what the catalog's identity is made of
    // (src/db/catalog-identity.ts): another cluster, timeline or database has other transactions.
    sql<string>`(SELECT system_identifier::text FROM pg_control_system()) || '/' ||
        substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) || '/' ||
        (SELECT oid::text FROM pg_database WHERE datname = current_database()) || '/' ||
        (SELECT catalog_id::text FROM catalog_identity)`.as('history'),
  ]),
);

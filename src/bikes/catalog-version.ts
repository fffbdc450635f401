import { sql } from 'kysely';
import { kysely } from '../db/sql';

/**
 * The catalog's version, as every list's ETag uses it (docs/decisions.md#conditional-get), and
 * what a list's rows are consistent with, as the change feed goes on from it
 * (docs/decisions.md#the-change-feed): read in the same statement as the rows, or alone for a 304.
 */

/**
 * The triggers that keep the catalog's version and its change log, each with whether it is on and
 * the transaction that last changed it: switching one off and on again changes this.
 */
export const CATALOG_TRIGGERS = sql<string>`(SELECT string_agg(tgname || ':' || tgenabled::text || ':' || xmin::text, ',' ORDER BY tgname)
    FROM pg_trigger WHERE tgrelid = 'bikes'::regclass AND tgname LIKE 'bikes\\_%')`;

/** Every one of those triggers fires whoever writes (ENABLE ALWAYS): no change escapes them. */
export const TRIGGERS_COUNTING = sql<boolean>`(SELECT bool_and(tgenabled = 'A')
    FROM pg_trigger WHERE tgrelid = 'bikes'::regclass AND tgname LIKE 'bikes\\_%')`;

/**
 * What a list's ETag is made of (docs/decisions.md#conditional-get): the sum of the version
 * slots, which every committed change to bikes bumps; the newest transaction that bumped one (a
 * restore rewrites them all); and the triggers that keep them, each with whether it is on and the
 * transaction that last changed it (switching one off and on again changes that). `counting`:
 * every one of them is on, whoever writes (ENABLE ALWAYS); otherwise a change may leave the slots
 * as they were, and no version stands for the rows. `snapshot`: what the reading statement sees
 * (pg_current_snapshot), which the change feed goes on from (docs/decisions.md#the-change-feed).
 */
export const listVersion = () =>
  kysely
    .selectFrom('catalog_version_slots')
    .select([
      sql<string>`sum(version)::text`.as('version'),
      sql<string>`max(xmin::text::bigint)::text`.as('touched'),
      CATALOG_TRIGGERS.as('triggers'),
      TRIGGERS_COUNTING.as('counting'),
      sql<string>`pg_current_snapshot()::text`.as('snapshot'),
      sql<string>`(SELECT horizon_txid::text FROM bike_changes_pruning)`.as('horizon_txid'),
      sql<string>`(SELECT horizon_change_id::text FROM bike_changes_pruning)`.as('horizon_change_id'),
    ]);

/**
 * What a list's rows are consistent with, for the change feed to go on from
 * (docs/decisions.md#the-change-feed): the snapshot they were read in, the state of the triggers
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

import { sql } from 'kysely';
import type { Bike } from '../bikes/bike';
import { fromChange, writtenColumnsOf } from '../bikes/fields';
import { listVersionRow } from '../bikes/catalog-version';
import type { Query } from '../db/pool';
import { headThenRows, kysely, param, prepare } from '../db/sql';

/**
 * The change feed's reading of the change log (bike_changes, written by triggers: the migration
 * change_feed; docs/reference/browse-and-sync.md#the-change-feed).
 *
 * A change's position is its (txid, change_id). A change is given out only once its txid is below
 * the oldest transaction still running (pg_snapshot_xmin of the reading statement): every
 * transaction that could still write a change at or before it has ended, so nothing ever appears
 * behind what a follower has. Where a follower stands is a point: every change at or before a
 * position, and, for a point a list gave, every change visible in that list's snapshot.
 */

/** A change's place in the log. Both are int8, carried as text. */
export interface Position {
  txid: string;
  changeId: string;
}

/** What a follower has: every change at or before `position`, and every change visible in `snapshot`. */
export interface FeedPoint {
  position: Position;
  /** pg_snapshot's text, `xmin:xmax:xip,...`. */
  snapshot?: string;
}

/** Beyond every change_id. */
const LAST_CHANGE_ID = '9223372036854775807';

/** The start of what the log keeps. */
export const START: FeedPoint = { position: { txid: '0', changeId: '0' } };

/**
 * The point of a list read in `snapshot`: the changes it saw are those visible in it, and every
 * change before its xmin was either seen or never committed.
 */
export function pointOfSnapshot(snapshot: string): FeedPoint {
  const xmin = BigInt(snapshot.split(':')[0]);
  return { position: { txid: String(xmin - 1n), changeId: LAST_CHANGE_ID }, snapshot };
}

/**
 * The point just after a change, from a point with a snapshot: the snapshot goes once the
 * position reaches its xmax, past which no change is visible in it.
 */
function pointAfter(position: Position, snapshot: string | undefined): FeedPoint {
  const keep = snapshot !== undefined && BigInt(position.txid) < BigInt(snapshot.split(':')[1]);
  return keep ? { position, snapshot } : { position };
}

/** `a` comes before `b`. */
export function isBefore(a: Position, b: Position): boolean {
  return BigInt(a.txid) < BigInt(b.txid) || (a.txid === b.txid && BigInt(a.changeId) < BigInt(b.changeId));
}

/**
 * A follower at `point`, whose cursor was made when pruning had looked as far as `madeAt`, can go
 * on while pruning stands at `horizon`: unless pruning has since passed both, deleting changes it
 * may need (a delete of a bike it has). A follower from the start of what is kept (its cursors made
 * at or past the horizon) can always go on.
 */
export function isFollowable(point: FeedPoint, madeAt: Position, horizon: Position): boolean {
  return !(isBefore(point.position, horizon) && isBefore(madeAt, horizon));
}

export interface Change {
  /** The point a follower is at once it has this change. */
  point: FeedPoint;
  kind: 'upsert' | 'delete';
  /** What the log says the change was: an upsert that made the bike, or one that changed it, or a delete. */
  action: 'create' | 'update' | 'delete';
  /** When the writing transaction began. */
  changedAt: Date;
  id: string;
  /** The bike as it is after the change (an upsert). */
  bike?: Bike;
}

/** What the log says of itself, read in the same statement as the changes. */
export interface LogState {
  /** The triggers that capture changes, as catalog_list_version says (listVersionRow). */
  triggers: string;
  /** All of them on, whoever writes: otherwise a change may have escaped the log. */
  counting: boolean;
  /**
   * How far pruning has looked: before it the log keeps only each bike's latest change. A cursor
   * before it, made before pruning passed it, cannot go on (isFollowable).
   */
  horizon: Position;
  /** Every change before this position is given out: none can appear there any more. */
  complete: Position;
}

/** The oldest transaction still running as the statement sees it (its snapshot's xmin), as text. */
const OLDEST_RUNNING = sql<string>`pg_snapshot_xmin(pg_current_snapshot())::text`;

const statements = {
  /**
   * The log's state, and up to `limit` changes after `txid`/`changeId` not visible in `snapshot`
   * (null: none), below the oldest transaction still running, in their order: one statement, one
   * snapshot, on the (txid, change_id) index; the state in a first row of its own (headThenRows).
   */
  after: prepare(
    { txid: param<string>(), changeId: param<string>(), snapshot: param<string | null>(), limit: param<number>() },
    (p) =>
      headThenRows(
        kysely
          .selectFrom(listVersionRow())
          .select([
            OLDEST_RUNNING.as('below'),
            'list_version.horizon_txid',
            'list_version.horizon_change_id',
            'list_version.triggers',
            'list_version.counting',
          ]),
        kysely
          .selectFrom('bike_changes as c')
          .select([
            sql<string>`c.txid::text`.as('txid'),
            sql<string>`c.change_id::text`.as('change_id'),
            'c.kind',
            'c.changed_at',
            'c.bike_id',
            ...writtenColumnsOf('c'),
          ])
          .where(sql<boolean>`(c.txid, c.change_id) > (${p.txid}::bigint, ${p.changeId}::bigint)`)
          .where(sql<boolean>`c.txid < ${OLDEST_RUNNING}::bigint`)
          .where(
            sql<boolean>`(${p.snapshot}::text IS NULL
                           OR NOT pg_visible_in_snapshot(c.writer_txid::text::xid8, ${p.snapshot}::text::pg_snapshot))`,
          )
          .orderBy('c.txid')
          .orderBy('c.change_id')
          .limit(p.limit),
      ),
  ),
};

/** Changes pruning looks at in one transaction. */
const PRUNE_BATCH = 10_000;
/** Batches in one run at most: a backlog is worked off over several runs. */
const PRUNE_BATCHES = 100;

const prune = prepare({ days: param<number>(), maxRows: param<number>() }, (p) =>
  kysely
    .selectFrom(
      sql<{
        looked_at: number;
        deleted: number;
      }>`prune_bike_changes(now() - make_interval(days => ${p.days}), ${p.maxRows})`.as('pruned'),
    )
    .select(['looked_at', 'deleted']),
);

/**
 * Prunes the change log of what is older than `retentionDays` and no follower from after it needs
 * (prune_bike_changes, the migration change_feed), a batch at a time until it has caught up.
 * Returns how many changes it deleted.
 */
export async function pruneChanges(query: Query, retentionDays: number): Promise<number> {
  let deleted = 0;
  for (let batch = 0; batch < PRUNE_BATCHES; batch++) {
    const [ran] = await prune.run(query, { days: retentionDays, maxRows: PRUNE_BATCH });
    deleted += ran.deleted;
    if (ran.looked_at < PRUNE_BATCH) break;
  }
  return deleted;
}

type Row = Awaited<ReturnType<typeof statements.after.run>>[number];

/** The bike a change's row holds, told by its kind (a create or an update: an upsert); none for a delete. */
function bikeOf(row: Row & { kind: string; bike_id: string }): Bike | undefined {
  return fromChange(row.kind, { ...row, id: row.bike_id });
}

/**
 * Up to `limit` changes after `from`, oldest first, each with the point after it, and the log's
 * state, read together.
 */
export async function changesAfter(
  query: Query,
  from: FeedPoint,
  limit: number,
): Promise<{ changes: Change[]; state: LogState }> {
  const rows = await statements.after.run(query, {
    txid: from.position.txid,
    changeId: from.position.changeId,
    snapshot: from.snapshot ?? null,
    limit,
  });
  const [first] = rows;
  const below = BigInt(first.below);
  const changes: Change[] = [];
  for (const row of rows) {
    // The head's row: the log's state, no change.
    if (row.txid === null || row.change_id === null || row.bike_id === null) continue;
    if (row.kind === null || row.changed_at === null) continue;
    const point = pointAfter({ txid: row.txid, changeId: row.change_id }, from.snapshot);
    const bike = bikeOf({ ...row, kind: row.kind, bike_id: row.bike_id });
    const changedAt = row.changed_at;
    // The log's kind says which (a bike's field may be null): a delete holds no bike.
    changes.push(
      bike
        ? {
            point,
            kind: 'upsert',
            action: row.kind === 'create' ? 'create' : 'update',
            changedAt,
            id: row.bike_id,
            bike,
          }
        : { point, kind: 'delete', action: 'delete', changedAt, id: row.bike_id },
    );
  }
  return {
    changes,
    state: {
      triggers: first.triggers,
      counting: first.counting,
      horizon: { txid: first.horizon_txid, changeId: first.horizon_change_id },
      complete: { txid: String(below - 1n), changeId: LAST_CHANGE_ID },
    },
  };
}

/**
 * Where a follower at `from` stands once it has `changes` (the last one's point), or, when there
 * were none, every change the log has completed: the position moves on past idle times. With a
 * snapshot, only so far as its xmax (changes visible in it may lie beyond `complete`).
 */
export function pointAfterAll(from: FeedPoint, changes: Change[], state: LogState): FeedPoint {
  if (changes.length > 0) return changes[changes.length - 1].point;
  if (!isBefore(from.position, state.complete)) return from;
  return pointAfter(state.complete, from.snapshot);
}

/**
 * Where a reader at `from` stands once it has a page of at most `limit` changes: a page that was
 * not full held every change up to what the log has completed, so the reader stands there.
 */
export function pointAfterPage(from: FeedPoint, changes: Change[], limit: number, state: LogState): FeedPoint {
  return changes.length === limit ? changes[changes.length - 1].point : pointAfterAll(from, [], state);
}

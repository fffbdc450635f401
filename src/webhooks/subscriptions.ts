import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Query } from '../db/pool';
import { bigint, kysely, NULL, param, prepare } from '../db/sql';
import type { EventType } from './events';
import { newSecret } from './events';

/**
 * The operator's subscriptions (docs/webhooks.md#for-the-operator), in the table
 * webhook_subscriptions (the migration webhooks): what `npm run webhooks` does, as statements
 * the deliverers (delivery.ts) see at their next read, on every instance.
 *
 * A subscription's position is the change log's (txid, change_id): every change at or before it
 * has been delivered (or was not one of its events). Its horizon is where pruning stood when the
 * position was set: as for a follower's cursor, a position pruning has passed since cannot be
 * followed (isFollowable in src/feed/changes.ts).
 */

/** What `add` and `rotate-secret` print: the only time a secret is shown. */
export interface NewSubscription {
  id: string;
  url: string;
  events: EventType[];
  secret: string;
}

export interface Subscription {
  id: string;
  url: string;
  events: string[];
  /** active, disabled (its attempts ran out) or behind (pruning passed its position). */
  state: string;
  reason: string | null;
  failedAttempts: number;
  nextAttemptAt: Date | null;
  /** The instance delivering it, while its lease lasts. */
  deliveredBy: string | null;
  /** Changes of the log after its position (counted to 100,000 at most). */
  pending: number;
  /** Pruning has passed its position: changes it had not had may be gone (replay --from). */
  prunedPast: boolean;
  previousSecretUntil: Date | null;
  createdAt: Date;
}

export interface Attempt {
  webhookId: string;
  event: string;
  attempt: number;
  status: number | null;
  error: string | null;
  attemptedAt: Date;
  durationMs: number;
}

/** The position after every change committed so far: where a new subscription starts. */
const NOW_TXID = sql<string>`pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1`;
const LAST_CHANGE_ID = sql.lit('9223372036854775807');

/** Run unnamed (`prepare`'s `named: false`): a command runs each statement once. */
const UNNAMED = { named: false };

/** Active again, its failures forgotten. */
const replayed = {
  state: sql.lit('active'),
  reason: NULL,
  failed_attempts: sql.lit(0),
  next_attempt_at: NULL,
};

const statements = {
  add: prepare(
    { id: param<string>(), url: param<string>(), events: param<string[]>(), secret: param<string>() },
    (p) =>
      kysely
        .insertInto('webhook_subscriptions')
        .columns([
          'id',
          'url',
          'events',
          'secret',
          'position_txid',
          'position_change_id',
          'horizon_txid',
          'horizon_change_id',
        ])
        .expression((eb) =>
          eb
            .selectFrom('bike_changes_pruning')
            .select([
              p.id.as('id'),
              p.url.as('url'),
              p.events.as('events'),
              p.secret.as('secret'),
              NOW_TXID.as('position_txid'),
              LAST_CHANGE_ID.as('position_change_id'),
              'horizon_txid',
              'horizon_change_id',
            ]),
        ),
    UNNAMED,
  ),
  list: prepare(
    {},
    () =>
      kysely
        .selectFrom(['webhook_subscriptions as s', 'bike_changes_pruning as p'])
        .select((eb) => [
          's.id',
          's.url',
          's.events',
          's.state',
          's.reason',
          's.failed_attempts',
          's.next_attempt_at',
          eb
            .case()
            .when('s.lease_until', '>', sql<Date>`now()`)
            .then(eb.ref('s.lease_holder'))
            .end()
            .as('delivered_by'),
          // Changes of the log after its position, counted to 100,000 at most.
          eb
            .selectFrom(
              eb
                .selectFrom('bike_changes as c')
                .where((eb) =>
                  eb(eb.refTuple('c.txid', 'c.change_id'), '>', eb.refTuple('s.position_txid', 's.position_change_id')),
                )
                .limit(sql.lit(100_000))
                .as('l'),
            )
            .select(eb.fn.countAll<string>().as('count'))
            .as('pending'),
          // Pruning has passed both its position and the horizon it was set at.
          eb
            .and([
              eb(
                eb.refTuple('s.position_txid', 's.position_change_id'),
                '<',
                eb.refTuple('p.horizon_txid', 'p.horizon_change_id'),
              ),
              eb(
                eb.refTuple('s.horizon_txid', 's.horizon_change_id'),
                '<',
                eb.refTuple('p.horizon_txid', 'p.horizon_change_id'),
              ),
            ])
            .$castTo<boolean>()
            .as('pruned_past'),
          eb
            .case()
            .when('s.previous_secret_until', '>', sql<Date>`now()`)
            .then(eb.ref('s.previous_secret_until'))
            .end()
            .as('previous_secret_until'),
          's.created_at',
        ])
        .orderBy('s.created_at')
        .orderBy('s.id'),
    UNNAMED,
  ),
  remove: prepare(
    { id: param<string>() },
    (p) => kysely.deleteFrom('webhook_subscriptions').where('id', '=', p.id).returning('id'),
    UNNAMED,
  ),
  /** The secret before becomes the previous one, which signs beside the new one until `keepMs` from now. */
  rotateSecret: prepare(
    { id: param<string>(), secret: param<string>(), keepMs: param<number>() },
    (p) =>
      kysely
        .updateTable('webhook_subscriptions')
        .set((eb) => ({
          previous_secret: eb.ref('secret'),
          previous_secret_until: sql<Date>`now() + ${p.keepMs} * interval '1 millisecond'`,
          secret: p.secret,
        }))
        .where('id', '=', p.id)
        .returning((eb) => ['url', 'events', eb.ref('previous_secret_until').$notNull().as('previous_secret_until')]),
    UNNAMED,
  ),
  deliveries: prepare(
    { id: param<string>(), limit: param<number>() },
    (p) =>
      kysely
        .selectFrom('webhook_deliveries')
        .select(['webhook_id', 'event', 'attempt', 'status', 'error', 'attempted_at', 'duration_ms'])
        .where('subscription_id', '=', p.id)
        .orderBy('delivery_id', 'desc')
        .limit(p.limit),
    UNNAMED,
  ),
  /** Active again from where it stands: the first change it has not had. */
  replay: prepare(
    { id: param<string>() },
    (p) =>
      kysely
        .updateTable('webhook_subscriptions as s')
        .from('bike_changes_pruning as p')
        .set(replayed)
        .where('s.id', '=', p.id)
        .returning('s.id'),
    UNNAMED,
  ),
  /** Active again from a position, with the horizon it was read at (null: where pruning stands now). */
  replayFrom: prepare(
    {
      id: param<string>(),
      txid: param<string>(),
      changeId: param<string>(),
      horizonTxid: param<string | null>(),
      horizonChangeId: param<string | null>(),
    },
    (p) =>
      kysely
        .updateTable('webhook_subscriptions as s')
        .from('bike_changes_pruning as p')
        .set((eb) => ({
          ...replayed,
          position_txid: bigint(p.txid),
          position_change_id: bigint(p.changeId),
          horizon_txid: eb.fn.coalesce(bigint(p.horizonTxid), eb.ref('p.horizon_txid')),
          horizon_change_id: eb.fn.coalesce(bigint(p.horizonChangeId), eb.ref('p.horizon_change_id')),
          triggers: NULL,
        }))
        .where('s.id', '=', p.id)
        .returning('s.id'),
    UNNAMED,
  ),
  /** The position just before the first change the log keeps that was written at or after `time`. */
  positionAt: prepare(
    { time: param<Date>() },
    (p) =>
      kysely
        .selectFrom('bike_changes')
        .select((eb) => [
          eb.cast<string>('txid', 'text').as('txid'),
          eb.cast<string>(eb('change_id', '-', sql<string>`1`), 'text').as('change_id'),
        ])
        .where('changed_at', '>=', p.time)
        .orderBy('txid')
        .orderBy('change_id')
        .limit(sql.lit(1)),
    UNNAMED,
  ),
  positionNow: prepare(
    {},
    () => kysely.selectNoFrom([sql<string>`(${NOW_TXID})::text`.as('txid'), LAST_CHANGE_ID.as('change_id')]),
    UNNAMED,
  ),
};

export function subscriptions(query: Query) {
  return {
    /** A subscription from now on: the changes committed after it. */
    async add(url: string, events: EventType[]): Promise<NewSubscription> {
      const id = randomUUID();
      const secret = newSecret();
      await statements.add.run(query, { id, url, events, secret });
      return { id, url, events, secret };
    },

    async list(): Promise<Subscription[]> {
      const rows = await statements.list.run(query, {});
      return rows.map((row) => ({
        id: row.id,
        url: row.url,
        events: row.events,
        state: row.state,
        reason: row.reason,
        failedAttempts: row.failed_attempts,
        nextAttemptAt: row.next_attempt_at,
        deliveredBy: row.delivered_by,
        pending: Number(row.pending),
        prunedPast: row.pruned_past,
        previousSecretUntil: row.previous_secret_until,
        createdAt: row.created_at,
      }));
    },

    /** Whether there was one to remove. */
    async remove(id: string): Promise<boolean> {
      return (await statements.remove.run(query, { id })).length > 0;
    },

    /** A new secret; the one it replaces signs beside it for `keepMs` more. Undefined: no such subscription. */
    async rotateSecret(
      id: string,
      keepMs: number,
    ): Promise<(NewSubscription & { previousSecretUntil: Date }) | undefined> {
      const secret = newSecret();
      const [row] = await statements.rotateSecret.run(query, { id, secret, keepMs });
      return (
        row && {
          id,
          url: row.url,
          events: row.events as EventType[],
          secret,
          previousSecretUntil: row.previous_secret_until,
        }
      );
    },

    /** The latest `limit` attempts, latest first. */
    async deliveries(id: string, limit: number): Promise<Attempt[]> {
      const rows = await statements.deliveries.run(query, { id, limit });
      return rows.map((row) => ({
        webhookId: row.webhook_id,
        event: row.event,
        attempt: row.attempt,
        status: row.status,
        error: row.error,
        attemptedAt: row.attempted_at,
        durationMs: row.duration_ms,
      }));
    },

    /**
     * Active again, its failures forgotten: from where it stands (the first change it has not
     * had), or from `from`, a position in the log with the horizon it was read at (a feed cursor's,
     * or where pruning stands now, for a time). Whether there was one.
     */
    async replay(id: string, from?: { txid: string; changeId: string; horizon?: { txid: string; changeId: string } }) {
      const replayed = from
        ? await statements.replayFrom.run(query, {
            id,
            txid: from.txid,
            changeId: from.changeId,
            horizonTxid: from.horizon?.txid ?? null,
            horizonChangeId: from.horizon?.changeId ?? null,
          })
        : await statements.replay.run(query, { id });
      return replayed.length > 0;
    },

    /** The position just before the first change the log keeps that was written at or after `time`; undefined: none. */
    async positionAt(time: Date): Promise<{ txid: string; changeId: string } | undefined> {
      const [row] = await statements.positionAt.run(query, { time });
      return row && { txid: row.txid, changeId: row.change_id };
    },

    /** The position after every change committed so far. */
    async positionNow(): Promise<{ txid: string; changeId: string }> {
      const [row] = await statements.positionNow.run(query, {});
      return { txid: row.txid, changeId: row.change_id };
    },
  };
}

import { randomUUID } from 'node:crypto';
import type { Query } from '../db/pool';
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
const NOW = `pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1, 9223372036854775807`;

const PRUNED_PAST = `(s.position_txid, s.position_change_id) < (p.horizon_txid, p.horizon_change_id)
  AND (s.horizon_txid, s.horizon_change_id) < (p.horizon_txid, p.horizon_change_id)`;

interface SubscriptionRow {
  id: string;
  url: string;
  events: string[];
  state: string;
  reason: string | null;
  failed_attempts: number;
  next_attempt_at: Date | null;
  delivered_by: string | null;
  pending: string;
  pruned_past: boolean;
  previous_secret_until: Date | null;
  created_at: Date;
}

export function subscriptions(query: Query) {
  return {
    /** A subscription from now on: the changes committed after it. */
    async add(url: string, events: EventType[]): Promise<NewSubscription> {
      const id = randomUUID();
      const secret = newSecret();
      await query(
        `INSERT INTO webhook_subscriptions
           (id, url, events, secret, position_txid, position_change_id, horizon_txid, horizon_change_id)
         SELECT $1, $2, $3, $4, ${NOW}, horizon_txid, horizon_change_id FROM bike_changes_pruning`,
        [id, url, events, secret],
      );
      return { id, url, events, secret };
    },

    async list(): Promise<Subscription[]> {
      const { rows } = await query<SubscriptionRow>(
        `SELECT s.id, s.url, s.events, s.state, s.reason, s.failed_attempts, s.next_attempt_at,
                CASE WHEN s.lease_until > now() THEN s.lease_holder END AS delivered_by,
                (SELECT count(*) FROM (SELECT FROM bike_changes c
                   WHERE (c.txid, c.change_id) > (s.position_txid, s.position_change_id) LIMIT 100000) l) AS pending,
                ${PRUNED_PAST} AS pruned_past,
                CASE WHEN s.previous_secret_until > now() THEN s.previous_secret_until END AS previous_secret_until,
                s.created_at
           FROM webhook_subscriptions s, bike_changes_pruning p
          ORDER BY s.created_at, s.id`,
        [],
      );
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
      return ((await query(`DELETE FROM webhook_subscriptions WHERE id = $1`, [id])).rowCount ?? 0) > 0;
    },

    /** A new secret; the one it replaces signs beside it for `keepMs` more. Undefined: no such subscription. */
    async rotateSecret(
      id: string,
      keepMs: number,
    ): Promise<(NewSubscription & { previousSecretUntil: Date }) | undefined> {
      const secret = newSecret();
      const { rows } = await query<{ url: string; events: EventType[]; previous_secret_until: Date }>(
        `UPDATE webhook_subscriptions
            SET previous_secret = secret, previous_secret_until = now() + $3 * interval '1 millisecond', secret = $2
          WHERE id = $1
         RETURNING url, events, previous_secret_until`,
        [id, secret, keepMs],
      );
      const [row] = rows;
      return row && { id, url: row.url, events: row.events, secret, previousSecretUntil: row.previous_secret_until };
    },

    /** The latest `limit` attempts, latest first. */
    async deliveries(id: string, limit: number): Promise<Attempt[]> {
      const { rows } = await query<{
        webhook_id: string;
        event: string;
        attempt: number;
        status: number | null;
        error: string | null;
        attempted_at: Date;
        duration_ms: number;
      }>(
        `SELECT webhook_id, event, attempt, status, error, attempted_at, duration_ms FROM webhook_deliveries
          WHERE subscription_id = $1 ORDER BY delivery_id DESC LIMIT $2`,
        [id, limit],
      );
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
      const moved = from
        ? `, position_txid = $2::bigint, position_change_id = $3::bigint,
             horizon_txid = coalesce($4::bigint, p.horizon_txid), horizon_change_id = coalesce($5::bigint, p.horizon_change_id),
             triggers = NULL`
        : '';
      const values = from
        ? [id, from.txid, from.changeId, from.horizon?.txid ?? null, from.horizon?.changeId ?? null]
        : [id];
      const { rowCount } = await query(
        `UPDATE webhook_subscriptions s
            SET state = 'active', reason = NULL, failed_attempts = 0, next_attempt_at = NULL${moved}
           FROM bike_changes_pruning p
          WHERE s.id = $1`,
        values,
      );
      return (rowCount ?? 0) > 0;
    },

    /** The position just before the first change the log keeps that was written at or after `time`; undefined: none. */
    async positionAt(time: Date): Promise<{ txid: string; changeId: string } | undefined> {
      const { rows } = await query<{ txid: string; change_id: string }>(
        `SELECT txid::text, (change_id - 1)::text AS change_id FROM bike_changes
          WHERE changed_at >= $1 ORDER BY txid, change_id LIMIT 1`,
        [time],
      );
      return rows[0] && { txid: rows[0].txid, changeId: rows[0].change_id };
    },

    /** The position after every change committed so far. */
    async positionNow(): Promise<{ txid: string; changeId: string }> {
      const { rows } = await query<{ txid: string; change_id: string }>(
        `SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1)::text AS txid, '9223372036854775807' AS change_id`,
        [],
      );
      return { txid: rows[0].txid, changeId: rows[0].change_id };
    },
  };
}

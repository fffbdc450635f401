import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Change } from '../feed/changes';

/**
 * What a webhook says (docs/webhooks.md#what-a-receiver-gets): one change of the change log, as a
 * Standard Webhooks message, signed with the subscription's secret (and, for a while after a
 * rotation, its previous one too).
 */

export const EVENT_TYPES = ['bike.created', 'bike.updated', 'bike.deleted'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (text: string): text is EventType => (EVENT_TYPES as readonly string[]).includes(text);

/** The event a change of the log is: its kind there (the trigger tells a create from an update). */
export function eventOf(change: Change): EventType {
  return change.action === 'create' ? 'bike.created' : change.action === 'update' ? 'bike.updated' : 'bike.deleted';
}

/**
 * A change's webhook-id: its place in the log, the same in every attempt, after a takeover by
 * another instance and after a replay, so a receiver deduplicates by it.
 */
export function webhookIdOf(change: Change): string {
  return `msg_${change.point.position.txid}_${change.point.position.changeId}`;
}

/**
 * The body: `type`, `timestamp` (when the writing transaction began), `data` (the bike as the API
 * returns it; a delete's id), and the feed's `cursor` after the change (GET /bikes/changes?since=
 * goes on from it), by which a receiver orders changes and skips what it has.
 */
export function bodyOf(change: Change, cursor: string): string {
  const data = change.bike ?? { id: change.id };
  return JSON.stringify({ type: eventOf(change), timestamp: change.changedAt.toISOString(), data, cursor });
}

/** A new signing secret, as Standard Webhooks writes one: whsec_ and 24 random bytes in base64. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The headers of an attempt, signed with every secret given (space-separated signatures). */
export function signedHeaders(
  secrets: readonly string[],
  webhookId: string,
  body: string,
  at = new Date(),
): Record<string, string> {
  const signature = secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body)).join(' ');
  return {
    'content-type': 'application/json',
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signature,
  };
}

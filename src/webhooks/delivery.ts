import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RawBuilder, sql } from 'kysely';
import type { Query } from '../db/pool';
import { bigint, kysely, NULL, param, prepare } from '../db/sql';
import { type Change, changesAfter, isFollowable, type LogState, type Position, START } from '../feed/changes';
import type { LiveFeed } from '../feed/live';
import type { Logger } from '../logger';
import { webhookDeliveries, webhookLag, webhookSubscriptionsDisabled, webhookSubscriptionStates } from '../metrics';
import { withinTime } from '../timeout';
import { bodyOf, eventOf, signedHeaders, webhookIdOf } from './events';
import { retryAfterMs } from './retry';
import { type Outcome, send } from './send';

/**
 * Delivering the change log to the subscriptions (docs/webhooks.md#how-delivery-works), at least
 * once, across instances and crashes.
 *
 * Each instance looks for subscriptions no one delivers (every SCAN_MS) and takes a lease on a few
 * (a row's lease_holder and lease_until, in plain statements: no session state, so through a
 * transaction pooler too). The holder delivers the subscription's changes one after another, in the
 * log's order, renewing the lease every RENEW_MS; its position moves only after a 2xx, and only
 * while it still holds the lease. An instance that dies stops renewing: once the lease has run out
 * another takes the subscription over, from its position, and sends again what was in flight, with
 * the same webhook-id. Each subscription has its own loop, so a receiver that is slow or failing
 * holds back only its own.
 */

/** How long a lease lasts unless renewed: how long a dead instance's subscriptions wait. */
const LEASE_MS = 6_000;
const RENEW_MS = 2_000;
/** How often an instance looks for subscriptions no one delivers, and for changes to them. */
const SCAN_MS = 1_000;
/** Subscriptions one scan takes at most, so that instances share them. */
const TAKE_AT_ONCE = 4;
/** Changes one read of the log gives a deliverer. */
const PAGE = 100;
/** A deliverer's longest wait for news of a change (the live feed wakes it sooner). */
const IDLE_MS = 1_000;
/** How often a deliverer records how far it has delivered, while it delivers a page. */
const MOVE_EVERY_MS = 200;
/** How long the attempts are kept (deliveries). */
const ATTEMPTS_KEPT_DAYS = 7;
const PRUNE_ATTEMPTS_EVERY_MS = 10 * 60 * 1000;
/** How long stopping waits for attempts in flight. */
const CLOSE_MS = 1_000;

export interface DeliveryOptions {
  /** WEBHOOK_RETRY_DELAYS, in milliseconds. */
  retryDelays: number[];
  /** The feed's cursor after a change, as GET /bikes/changes seals it. */
  cursorOf: (point: Change['point'], state: LogState) => string;
  live: LiveFeed;
  logger: Logger;
}

/** A subscription's row as its holder reads it at every renewal. */
interface Held {
  url: string;
  events: string[];
  secrets: string[];
  position: Position;
  horizon: Position;
  triggers: string | null;
  failedAttempts: number;
  /** Milliseconds until the next attempt may be made (0: now). */
  waitMs: number;
}

/** `now()` plus `ms` milliseconds. */
const inMs = (ms: RawBuilder<number>) => sql<Date>`now() + ${ms} * interval '1 millisecond'`;

/**
 * Run unnamed (`prepare`'s `named: false`): a few statements a second per instance at most, which
 * would take the budget the pages' shapes share (src/db/sql.ts).
 */
const UNNAMED = { named: false };

const statements = {
  renew: prepare(
    { id: param<string>(), holder: param<string>(), leaseMs: param<number>() },
    (p) =>
      kysely
        .updateTable('webhook_subscriptions')
        .set({ lease_until: inMs(p.leaseMs) })
        .where('id', '=', p.id)
        .where('lease_holder', '=', p.holder)
        .where('state', '=', sql.lit('active'))
        .returning((eb) => [
          'url',
          'events',
          'secret',
          eb
            .case()
            .when('previous_secret_until', '>', sql<Date>`now()`)
            .then(eb.ref('previous_secret'))
            .end()
            .as('previous_secret'),
          eb.cast<string>('position_txid', 'text').as('position_txid'),
          eb.cast<string>('position_change_id', 'text').as('position_change_id'),
          eb.cast<string>('horizon_txid', 'text').as('horizon_txid'),
          eb.cast<string>('horizon_change_id', 'text').as('horizon_change_id'),
          'triggers',
          'failed_attempts',
          sql<number>`greatest(0, ceil(extract(epoch FROM ${eb.ref('next_attempt_at')} - now()) * 1000))::int`.as(
            'wait_ms',
          ),
        ]),
    UNNAMED,
  ),
  take: prepare(
    { holder: param<string>(), leaseMs: param<number>(), running: param<string[]>(), limit: param<number>() },
    (p) =>
      kysely
        .updateTable('webhook_subscriptions')
        .set({ lease_holder: p.holder, lease_until: inMs(p.leaseMs) })
        .where('id', 'in', (eb) =>
          eb
            .selectFrom('webhook_subscriptions')
            .select('id')
            .where('state', '=', sql.lit('active'))
            .where((eb) => eb.not(eb('id', '=', eb.fn.any(sql<string[]>`${p.running}::uuid[]`))))
            .where((eb) =>
              eb.or([
                eb('lease_holder', 'is', NULL),
                eb('lease_holder', '=', p.holder),
                eb('lease_until', '<', sql<Date>`now()`),
              ]),
            )
            .orderBy('lease_until', (order) => order.nullsFirst())
            .limit(p.limit)
            .forUpdate()
            .skipLocked(),
        )
        .returning('id'),
    UNNAMED,
  ),
  /**
   * The position moves past the changes delivered (and those skipped among them), and the attempts
   * that delivered them are recorded: one statement for a run of changes, only while the lease is
   * still this instance's and the position is where this deliverer left it (an operator's replay
   * moves it).
   */
  advance: prepare(
    {
      id: param<string>(),
      holder: param<string>(),
      txid: param<string>(),
      changeId: param<string>(),
      horizonTxid: param<string>(),
      horizonChangeId: param<string>(),
      triggers: param<string>(),
      webhookIds: param<string[]>(),
      events: param<string[]>(),
      attempts: param<number[]>(),
      statuses: param<number[]>(),
      durations: param<number[]>(),
      heldTxid: param<string>(),
      heldChangeId: param<string>(),
    },
    (p) =>
      kysely
        .with('moved', (db) =>
          db
            .updateTable('webhook_subscriptions')
            .set({
              position_txid: bigint(p.txid),
              position_change_id: bigint(p.changeId),
              horizon_txid: bigint(p.horizonTxid),
              horizon_change_id: bigint(p.horizonChangeId),
              triggers: p.triggers,
              failed_attempts: sql.lit(0),
              next_attempt_at: NULL,
            })
            .where('id', '=', p.id)
            .where('lease_holder', '=', p.holder)
            .where((eb) =>
              eb(
                eb.refTuple('position_txid', 'position_change_id'),
                '=',
                eb.tuple(bigint(p.heldTxid), bigint(p.heldChangeId)),
              ),
            )
            .returning('id'),
        )
        .with('recorded', (db) =>
          db
            .insertInto('webhook_deliveries')
            .columns(['subscription_id', 'webhook_id', 'event', 'attempt', 'status', 'duration_ms'])
            .expression((eb) =>
              eb
                .selectFrom([
                  'moved',
                  sql<{
                    webhook_id: string;
                    event: string;
                    attempt: number;
                    status: number;
                    duration_ms: number;
                  }>`unnest(
                    ${p.webhookIds}::text[], ${p.events}::text[], ${p.attempts}::int[], ${p.statuses}::int[], ${p.durations}::int[]
                  )`.as<'d'>(sql`d(webhook_id, event, attempt, status, duration_ms)`),
                ])
                .select(['moved.id', 'd.webhook_id', 'd.event', 'd.attempt', 'd.status', 'd.duration_ms']),
            )
            .returning(sql<number>`1`.as('one')),
        )
        .selectFrom('moved')
        .select(sql<number>`count(*)::int`.as('moved')),
    UNNAMED,
  ),
  /** A failed attempt recorded, and the next scheduled or the subscription disabled, under the same conditions. */
  fail: prepare(
    {
      id: param<string>(),
      holder: param<string>(),
      waitMs: param<number>(),
      disable: param<boolean>(),
      reason: param<string>(),
      webhookId: param<string>(),
      event: param<string>(),
      attempt: param<number>(),
      status: param<number | null>(),
      error: param<string>(),
      durationMs: param<number>(),
      heldTxid: param<string>(),
      heldChangeId: param<string>(),
    },
    (p) =>
      kysely
        .with('failed', (db) =>
          db
            .updateTable('webhook_subscriptions')
            .set((eb) => ({
              failed_attempts: eb('failed_attempts', '+', sql.lit(1)),
              next_attempt_at: inMs(p.waitMs),
              state: eb.case().when(p.disable).then(sql.lit('disabled')).else(eb.ref('state')).end(),
              reason: eb.case().when(p.disable).then(p.reason).else(eb.ref('reason')).end(),
              lease_holder: eb.case().when(p.disable).then(NULL).else(eb.ref('lease_holder')).end(),
            }))
            .where('id', '=', p.id)
            .where('lease_holder', '=', p.holder)
            .where((eb) =>
              eb(
                eb.refTuple('position_txid', 'position_change_id'),
                '=',
                eb.tuple(bigint(p.heldTxid), bigint(p.heldChangeId)),
              ),
            )
            .returning('id'),
        )
        .insertInto('webhook_deliveries')
        .columns(['subscription_id', 'webhook_id', 'event', 'attempt', 'status', 'error', 'duration_ms'])
        .expression((eb) =>
          eb
            .selectFrom('failed')
            .select([
              'id',
              p.webhookId.as('webhook_id'),
              p.event.as('event'),
              p.attempt.as('attempt'),
              p.status.as('status'),
              p.error.as('error'),
              p.durationMs.as('duration_ms'),
            ]),
        )
        .returning('delivery_id'),
    UNNAMED,
  ),
  behind: prepare(
    { id: param<string>(), holder: param<string>(), reason: param<string>() },
    (p) =>
      kysely
        .updateTable('webhook_subscriptions')
        .set({ state: sql.lit('behind'), reason: p.reason, lease_holder: NULL })
        .where('id', '=', p.id)
        .where('lease_holder', '=', p.holder),
    UNNAMED,
  ),
  release: prepare(
    { id: param<string>(), holder: param<string>() },
    (p) =>
      kysely
        .updateTable('webhook_subscriptions')
        .set({ lease_holder: NULL, lease_until: NULL })
        .where('id', '=', p.id)
        .where('lease_holder', '=', p.holder),
    UNNAMED,
  ),
  states: prepare({}, () => kysely.selectFrom('webhook_subscriptions').select(['id', 'state']), UNNAMED),
  pruneAttempts: prepare(
    { days: param<number>() },
    (p) =>
      kysely
        .deleteFrom('webhook_deliveries')
        .where('attempted_at', '<', sql<Date>`now() - make_interval(days => ${p.days})`),
    UNNAMED,
  ),
};

type HeldRow = Awaited<ReturnType<typeof statements.renew.run>>[number];

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

function heldOf(row: HeldRow): Held {
  return {
    url: row.url,
    events: row.events,
    secrets: row.previous_secret ? [row.secret, row.previous_secret] : [row.secret],
    position: { txid: row.position_txid, changeId: row.position_change_id },
    horizon: { txid: row.horizon_txid, changeId: row.horizon_change_id },
    triggers: row.triggers,
    failedAttempts: row.failed_attempts,
    waitMs: row.wait_ms,
  };
}

/** What an instance is known by in lease_holder: its host, its process and a random part. */
const instanceName = () => `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

export function webhookDelivery(query: Query, { retryDelays, cursorOf, live, logger }: DeliveryOptions) {
  const me = instanceName();
  /** The subscriptions this instance delivers, each its loop's promise. */
  const running = new Map<string, Promise<void>>();
  let closed = false;
  /** Deliverers waiting for news of a change. */
  let waiting: (() => void)[] = [];
  /** How many times news came: a deliverer that read the log before the latest does not wait. */
  let generation = 0;
  const wake = () => {
    generation++;
    const woken = waiting;
    waiting = [];
    for (const resolve of woken) resolve();
  };
  const news = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      waiting.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  /** Where a deliverer's sleep before a retry ends early: the service is stopping. */
  const stopping = new AbortController();
  const pause = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => undefined);

  async function renew(id: string): Promise<Held | undefined> {
    const [row] = await statements.renew.run(query, { id, holder: me, leaseMs: LEASE_MS });
    return row && heldOf(row);
  }

  /** What was delivered since the position last moved, to be recorded with its move. */
  interface Run {
    last?: Change;
    webhookIds: string[];
    events: string[];
    attempts: number[];
    statuses: number[];
    durations: number[];
    /** When the position last moved. */
    since: number;
  }
  const newRun = (): Run => ({
    webhookIds: [],
    events: [],
    attempts: [],
    statuses: [],
    durations: [],
    since: Date.now(),
  });

  /** Moves the position past the run's changes; a lease lost meanwhile stops the deliverer. */
  async function advance(id: string, held: Held, run: Run, state: LogState): Promise<void> {
    if (run.last === undefined) return;
    const { position } = run.last.point;
    const [row] = await statements.advance.run(query, {
      id,
      holder: me,
      txid: position.txid,
      changeId: position.changeId,
      horizonTxid: state.horizon.txid,
      horizonChangeId: state.horizon.changeId,
      triggers: state.triggers,
      webhookIds: run.webhookIds,
      events: run.events,
      attempts: run.attempts,
      statuses: run.statuses,
      durations: run.durations,
      heldTxid: held.position.txid,
      heldChangeId: held.position.changeId,
    });
    if (row?.moved !== 1) throw new LeaseLost();
    held.position = position;
    Object.assign(run, newRun());
  }

  /** A failed attempt recorded, and the next scheduled (or the subscription disabled, when it was the last). */
  async function failed(id: string, held: Held, change: Change, outcome: Outcome, durationMs: number): Promise<void> {
    const webhookId = webhookIdOf(change);
    const number = held.failedAttempts + 1;
    webhookDeliveries.inc({ subscription: id, outcome: 'failed' });
    const disable = number > retryDelays.length;
    const waitMs = disable ? 0 : Math.max(retryDelays[number - 1], retryAfterMs(outcome.retryAfter) ?? 0);
    const reason = `${number} attempts at ${webhookId} failed, the last: ${outcome.error ?? 'unknown'}`;
    const recorded = await statements.fail.run(query, {
      id,
      holder: me,
      waitMs,
      disable,
      reason,
      webhookId,
      event: eventOf(change),
      attempt: number,
      status: outcome.status ?? null,
      error: (outcome.error ?? '').slice(0, 500),
      durationMs,
      heldTxid: held.position.txid,
      heldChangeId: held.position.changeId,
    });
    if (recorded.length === 0) throw new LeaseLost();
    if (disable) {
      webhookSubscriptionsDisabled.inc();
      logger.warn(
        { subscription: id, reason },
        'webhook subscription disabled: its attempts ran out; `npm run webhooks -- replay` it once its receiver is back',
      );
      throw new Stopped();
    }
    logger.info(
      { subscription: id, webhookId, attempt: number, retryInMs: waitMs, err: outcome.error },
      'webhook attempt failed',
    );
  }

  /**
   * One round: the lease renewed, the next page of the log read, its changes delivered in order,
   * the position moved past those delivered every MOVE_EVERY_MS (and at a failure, and at the
   * page's end). A crash sends again what was delivered since it last moved: at least once.
   */
  async function round(id: string): Promise<void> {
    const held = await renew(id);
    if (!held) throw new LeaseLost();
    if (held.waitMs > 0) return pause(Math.min(held.waitMs, RENEW_MS));
    const seen = generation;
    const { changes, state } = await changesAfter(query, { position: held.position }, PAGE);
    // The capture is off: changes may be escaping the log, wait until it is on again.
    if (!state.counting) return pause(IDLE_MS);
    const capture = held.triggers !== null && held.triggers !== state.triggers;
    if (capture || !isFollowable({ position: held.position }, held.horizon, state.horizon)) {
      const reason = capture
        ? 'the change capture was switched off and on since its position: changes may be missing; replay --from a time'
        : 'the change log was pruned past its position (CHANGES_RETENTION_DAYS): changes may be missing; replay --from a time or cursor';
      await statements.behind.run(query, { id, holder: me, reason });
      logger.warn({ subscription: id, reason }, 'webhook subscription is behind the change log');
      throw new Stopped();
    }
    const run = newRun();
    for (const change of changes) {
      if (closed) break;
      const event = eventOf(change);
      if (held.events.includes(event)) {
        const webhookId = webhookIdOf(change);
        const body = bodyOf(change, cursorOf(change.point, state));
        const started = Date.now();
        const outcome = await send(held.url, signedHeaders(held.secrets, webhookId, body), body);
        const durationMs = Date.now() - started;
        if (!outcome.ok) {
          await advance(id, held, run, state);
          return failed(id, held, change, outcome, durationMs);
        }
        webhookDeliveries.inc({ subscription: id, outcome: 'delivered' });
        webhookLag.set({ subscription: id }, Math.max(0, (Date.now() - change.changedAt.getTime()) / 1000));
        run.webhookIds.push(webhookId);
        run.events.push(event);
        run.attempts.push(held.failedAttempts + 1);
        run.statuses.push(outcome.status ?? 0);
        run.durations.push(durationMs);
        held.failedAttempts = 0;
      }
      run.last = change;
      if (Date.now() - run.since >= MOVE_EVERY_MS) await advance(id, held, run, state);
    }
    await advance(id, held, run, state);
    if (changes.length < PAGE && !closed) {
      webhookLag.set({ subscription: id }, 0);
      if (generation === seen) await news(IDLE_MS);
    }
  }

  /** Delivers subscription `id` while this instance holds its lease. */
  async function deliver(id: string): Promise<void> {
    // The lease is renewed beside the deliveries too: an attempt may wait for its receiver 5 s.
    const renewing = setInterval(() => {
      renew(id).catch(() => undefined);
    }, RENEW_MS);
    let failing = false;
    try {
      while (!closed) {
        try {
          await round(id);
          failing = false;
        } catch (err) {
          if (err instanceof LeaseLost || err instanceof Stopped) return;
          if (!failing) logger.warn({ subscription: id, err: message(err) }, 'webhook delivery failed; trying again');
          failing = true;
          await pause(IDLE_MS);
        }
      }
    } finally {
      clearInterval(renewing);
      webhookLag.remove({ subscription: id });
    }
  }

  async function scan(): Promise<void> {
    const taken = await statements.take.run(query, {
      holder: me,
      leaseMs: LEASE_MS,
      running: [...running.keys()],
      limit: TAKE_AT_ONCE,
    });
    for (const { id } of taken) {
      if (running.has(id) || closed) continue;
      running.set(
        id,
        deliver(id).finally(() => running.delete(id)),
      );
      followLive();
    }
    const states = await statements.states.run(query, {});
    webhookSubscriptionStates.reset();
    for (const row of states) webhookSubscriptionStates.set({ subscription: row.id, state: row.state }, 1);
  }

  let scanning: Promise<void> | undefined;
  let failingScan = false;
  const scanner = setInterval(() => {
    if (scanning || closed) return;
    scanning = scan()
      .then(() => {
        failingScan = false;
      })
      .catch((err) => {
        if (!failingScan) logger.warn({ err: message(err) }, 'looking for webhook subscriptions failed; trying again');
        failingScan = true;
      })
      .finally(() => (scanning = undefined));
  }, SCAN_MS);
  scanner.unref();

  const pruner = setInterval(() => {
    statements.pruneAttempts.run(query, { days: ATTEMPTS_KEPT_DAYS }).catch(() => undefined);
  }, PRUNE_ATTEMPTS_EVERY_MS);
  pruner.unref();

  /**
   * The live feed's one poll per instance wakes the deliverers when changes commit: followed while
   * this instance delivers a subscription (the feed forgets a follower once it has ended).
   */
  let follower: { ended: boolean } | undefined;
  function followLive(): void {
    if (closed || (follower && !follower.ended)) return;
    const mine = { ended: false };
    follower = mine;
    const ended = () => {
      if (closed || running.size === 0) mine.ended = true;
      return mine.ended;
    };
    void (async () => {
      while (!ended()) {
        try {
          const { state } = await changesAfter(query, START, 0);
          const first = await live.read({ position: state.complete });
          if (ended()) return;
          return live.follow(first, {
            get ended() {
              return ended();
            },
            receive: (changes) => {
              if (changes.length > 0) wake();
            },
            drained: () => Promise.resolve(),
            closing: () => {
              mine.ended = true;
            },
          });
        } catch {
          await pause(IDLE_MS);
        }
      }
    })();
  }

  return {
    /** This instance's name in lease_holder. */
    name: me,
    /** Stops delivering: attempts in flight end (their changes are sent again by whoever takes over), leases are let go. */
    async close(): Promise<void> {
      closed = true;
      clearInterval(scanner);
      clearInterval(pruner);
      stopping.abort();
      wake();
      await scanning;
      const ids = [...running.keys()];
      // An attempt in flight may wait for its receiver; whoever takes over sends it again.
      await withinTime(Promise.all(running.values()), CLOSE_MS);
      await Promise.all(ids.map((id) => statements.release.run(query, { id, holder: me }).catch(() => undefined)));
    },
  };
}

/**
 * Another instance holds the lease now, or the subscription was removed, disabled or replayed from
 * elsewhere (its position is not the one this deliverer moved it to): this loop stops, and the
 * next scan starts again from the row as it is, if the lease is still this instance's.
 */
class LeaseLost extends Error {}
/** The subscription stopped itself (disabled, behind). */
class Stopped extends Error {}

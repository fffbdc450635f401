import type { Pool } from 'pg';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * What GET /metrics shows, in Prometheus's text format: requests by route template and status,
 * their latency, the event streams open, the database pools, database errors, the replica, and
 * the process itself.
 * Any layer may record here; this module depends on nothing of ours.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const labelNames = ['method', 'route', 'status'] as const;

/** Requests answered by method, route template and status: its `_count` counts them. */
export const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from the request to the last byte of the response, by method, route template and status (_count: the requests)',
  labelNames,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** Tokens refused, by why (docs/reference/callers.md#refusals): the reason a 401 or 403 gives. */
export const authRefusals = new Counter({
  name: 'http_auth_refusals_total',
  help: 'Requests refused for their token or API key, by reason: no-token (401), expired, revoked, foreign, malformed, issuance-closed, unknown-key, insufficient-scope, token-endpoint-closed (403)',
  labelNames: ['reason'],
  registers: [registry],
});

export const databaseErrors = new Counter({
  name: 'db_errors_total',
  help: 'Database failures: connections lost or refused, queries cut off, fallbacks from the replica',
  labelNames: ['pool'],
  registers: [registry],
});

export const databaseReads = new Counter({
  name: 'db_reads_total',
  help: 'Reads (a query, or a list snapshot), by where they were served: replica, primary, or primary-fallback (the replica failed)',
  labelNames: ['pool'],
  registers: [registry],
});

export const replicaLag = new Gauge({
  name: 'db_replica_lag_seconds',
  help: 'How far the replica is behind the primary, as of the last check (0 without a replica)',
  registers: [registry],
});

export const eventStreams = new Gauge({
  name: 'http_event_streams',
  help: 'Event streams open: GET /bikes/changes answered as text/event-stream, until each ends',
  registers: [registry],
});

const pools = new Map<string, Pool>();

new Gauge({
  name: 'db_pool_clients',
  help: 'Clients of each database pool: total, idle, and requests waiting for one',
  labelNames: ['pool', 'state'],
  registers: [registry],
  collect() {
    this.reset();
    for (const [name, pool] of pools) {
      this.set({ pool: name, state: 'total' }, pool.totalCount);
      this.set({ pool: name, state: 'idle' }, pool.idleCount);
      this.set({ pool: name, state: 'waiting' }, pool.waitingCount);
    }
  },
});

/** Shows a pool in the gauges, and counts its lost connections as database errors. */
export function watchPool(name: string, pool: Pool): void {
  pools.set(name, pool);
  pool.on('error', () => databaseErrors.inc({ pool: name }));
}

/** Attempts to deliver a webhook, by subscription and outcome (delivered, failed): docs/webhooks.md#what-to-watch. */
export const webhookDeliveries = new Counter({
  name: 'webhook_deliveries_total',
  help: 'Attempts to deliver a change to a webhook subscription, by subscription and outcome (delivered: answered 2xx; failed)',
  labelNames: ['subscription', 'outcome'],
  registers: [registry],
});

export const webhookLag = new Gauge({
  name: 'webhook_subscription_lag_seconds',
  help: 'How far behind the change log each subscription this instance delivers is: the age of the last change delivered, 0 once caught up',
  labelNames: ['subscription'],
  registers: [registry],
});

export const webhookSubscriptionStates = new Gauge({
  name: 'webhook_subscriptions',
  help: 'Each webhook subscription, by its state: active, disabled (its attempts ran out) or behind (pruning passed it)',
  labelNames: ['subscription', 'state'],
  registers: [registry],
});

export const webhookSubscriptionsDisabled = new Counter({
  name: 'webhook_subscriptions_disabled_total',
  help: 'Webhook subscriptions this instance disabled because every attempt at a change failed',
  registers: [registry],
});

/** Reads by id and by handle through the read cache (docs/reference/database.md#the-read-cache), by result. */
const readCacheReads = new Counter({
  name: 'db_cache_reads_total',
  help: 'Reads by id or by handle through the read cache: hit (from memory), miss (read and kept), bypass (the cache may not answer: its last poll is older than its bound)',
  labelNames: ['result'],
  registers: [registry],
});

/** The read cache's counters, each series made once. */
export const readCacheCounters = () => ({
  hit: readCacheReads.labels('hit'),
  miss: readCacheReads.labels('miss'),
  bypass: readCacheReads.labels('bypass'),
});

import { setTimeout } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { Pool } from 'pg';
import { createApp, metricsApp } from './app';
import { loadOrCreateSecret } from './auth/secret';
import type { KeySetTiming } from './auth/provider';
import { createTokens } from './auth/tokens';
import { startReadCache } from './bikes/read-cache';
import { createBikeRepository, type StoredBike } from './bikes/repository';
import { type Config, ConfigError, readConfig } from './config';
import { isDatabaseUnavailable } from './db/errors';
import { watchCatalogIdentity } from './db/catalog-identity';
import { apiKeys } from './db/api-keys';
import { prepareToServe, type Retention, roleMayChangeSchema } from './db/migrate';
import { connectPool, queryOn, type ServicePool, writeOn } from './db/pool';
import { databaseReadiness } from './db/readiness';
import { failing, type ServerState } from './db/server-watch';
import { sharedLimit } from './db/rate-limits';
import { replicaReads } from './db/replica';
import { DOCS_PAGE } from './http/docs-router';
import { cursors } from './http/cursors';
import { abuseLimits } from './http/limits';
import { listen } from './http/listener';
import { createLogger, type LogFormat, type Logger } from './logger';
import { type DatabaseServer, openDatabaseServer } from './postgres/database-server';
import { pruneChanges } from './feed/changes';
import { changeFeed } from './feed/following';
import { liveFeed } from './feed/live';
import { readCacheCounters, watchPool } from './metrics';
import { withinTime } from './timeout';
import { webhookDelivery } from './webhooks/delivery';

/** Requests in flight may finish for this long; the pool and PostgreSQL stop in the rest of 10 s. */
const SHUTDOWN_GRACE_MS = 8_000;
/** How often idempotency keys past their lifetime are deleted. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;
/** How often the change log is pruned. */
const PRUNE_CHANGES_EVERY_MS = 60 * 1000;
/** How long a shutdown waits for the pool to close (it can hang on a database that is down). */
const POOL_CLOSE_MS = 1_000;
/** How long start-up waits for an external database to accept connections. */
const DATABASE_WAIT_MS = 30_000;

/** Timings a test shortens; the service runs with the defaults. */
export interface ServiceTuning {
  /** How often an event stream gets a comment (HEARTBEAT_MS in src/http/event-stream.ts). */
  heartbeatMs?: number;
  /** How the identity provider's key set is kept (KEY_SET_TIMING in src/auth/provider.ts). */
  keySetTiming?: KeySetTiming;
}

export interface Service {
  port: number;
  /** METRICS_PORT's listener, when set. */
  metricsPort: number | undefined;
  /** Stops accepting connections, finishes requests in flight, closes the pool, stops an embedded PostgreSQL. */
  stop(): Promise<void>;
}

/** Prepares the database (prepareToServe) once it answers. */
async function prepareWhenReachable(server: DatabaseServer, retention: Retention, logger: Logger): Promise<void> {
  const deadline = Date.now() + DATABASE_WAIT_MS;
  for (;;) {
    try {
      await prepareToServe(server, retention, (message) => logger.info(message));
      return;
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() > deadline) throw err;
      logger.warn('database not reachable yet, retrying');
      await setTimeout(1_000);
    }
  }
}

/**
 * A change of a database's state (src/db/server-watch.ts), once: a requests' 503 while it is down
 * or hangs is not logged again (src/http/errors.ts). Busy is no fault: a loaded machine.
 */
function logServerState(logger: Logger, pool: string, to: ServerState, from: ServerState): void {
  if (failing(to)) logger.warn({ pool, state: to.name, err: to.reason }, `database ${to.name}: requests fail at once`);
  else if (failing(from)) logger.info({ pool, state: to.name, was: from.name }, 'database answers again');
  else logger.debug({ pool, state: to.name, was: from.name }, `database ${to.name}`);
}

async function closeWithin(pool: Pool, logger: Logger): Promise<void> {
  const result = await withinTime(
    pool.end().catch(() => undefined),
    POOL_CLOSE_MS,
  );
  if (result === 'timeout') logger.warn('database pool did not close in time');
}

export async function startService(config: Config, logger: Logger, tuning: ServiceTuning = {}): Promise<Service> {
  const databaseServer = await openDatabaseServer(config, logger);
  const pools: ServicePool[] = [];
  const connect = (name: string, url: string) => {
    const pool = connectPool(url, (err) => logger.warn({ err: err.message, pool: name }, 'database connection lost'), {
      ServerClient: databaseServer.ServerClient,
      preparedStatements: config.preparedStatements,
      onServerState: (to, from) => logServerState(logger, name, to, from),
    });
    watchPool(name, pool);
    pools.push(pool);
    return pool;
  };
  const closePools = () => Promise.all(pools.map((pool) => closeWithin(pool, logger)));
  try {
    const jwtSecret = config.jwtSecret ?? loadOrCreateSecret(config.dataDir);
    // Each migration takes its lock inside its own transaction, so directUrl may be a transaction
    // pooler too; it is DATABASE_DIRECT_URL only when that is set (a role with more rights).
    await prepareWhenReachable(databaseServer, config, logger);
    const primary = connect('primary', databaseServer.url);
    const { role, may } = await roleMayChangeSchema(primary);
    if (may) {
      logger.warn(
        { role },
        "the service's queries run as a role that owns the catalog's tables or is a superuser, so they can " +
          'change or drop the schema; give DATABASE_URL a role of its own and DATABASE_DIRECT_URL the one that ' +
          'migrates (docs/reference/running-the-service.md#when-the-service-role-owns-the-catalog)',
      );
    }
    const replica = databaseServer.replicaUrl
      ? replicaReads(primary, connect('replica', databaseServer.replicaUrl))
      : undefined;
    // Its poll and its misses read the primary (docs/reference/database.md#the-read-cache).
    const cache =
      config.readCacheEntries > 0
        ? startReadCache<StoredBike>(queryOn(primary), {
            entries: config.readCacheEntries,
            counters: readCacheCounters(),
          })
        : undefined;
    const identity = await watchCatalogIdentity(queryOn(primary), () => {
      cache?.flush();
      logger.warn(
        "the catalog's identity changed (a restore, a database made anew, a failover): ETags given before no longer match",
      );
    });
    // Its writes evict from the cache; its reads (X-Read-From: primary) do not go through it.
    const bikesOnPrimary = createBikeRepository({ writes: primary, evicts: cache });
    const rates = {
      tokens: sharedLimit(primary, 'tokens', config.limits.tokensPerMinute),
      writes: sharedLimit(primary, 'writes', config.limits.writesPerMinute),
    };
    // Idempotency keys past their lifetime go, every hour (docs/reference/caching-and-conditions.md#idempotency-keys); a
    // failure waits for the next.
    const pruning = setInterval(() => {
      bikesOnPrimary.pruneIdempotencyKeys().catch((err: Error) => logger.warn({ err: err.message }, 'pruning failed'));
    }, PRUNE_EVERY_MS);
    pruning.unref();
    // Changes past the retention, every minute (docs/reference/browse-and-sync.md#the-change-feed).
    const pruningChanges = setInterval(() => {
      pruneChanges(queryOn(primary), config.changesRetentionDays).then(
        (deleted) => deleted > 0 && logger.debug({ deleted }, 'pruned the change log'),
        (err: Error) => logger.warn({ err: err.message }, 'pruning the change log failed'),
      );
    }, PRUNE_CHANGES_EVERY_MS);
    pruningChanges.unref();
    // Event streams read the primary: a replica's delay would be theirs
    // (docs/reference/browse-and-sync.md#streams-read-the-primary).
    const live = liveFeed(bikesOnPrimary.reads.query, {
      onError: (err) =>
        logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'reading the change log for event streams failed; trying again',
        ),
    });
    // Webhooks (docs/webhooks.md): this instance delivers the subscriptions whose lease it holds.
    const webhooks = webhookDelivery(queryOn(primary), {
      retryDelays: config.webhookRetryDelays,
      cursorOf: changeFeed(cursors(jwtSecret), identity.current, live).cursorOf,
      live,
      logger,
    });
    const app = createApp({
      bikes: createBikeRepository({ writes: primary, reads: replica, cache }),
      bikesOnPrimary,
      catalogIdentity: identity.current,
      cursors: cursors(jwtSecret),
      tokens: createTokens(jwtSecret, {
        issuance: config.tokenIssuance,
        provider: config.identityProvider,
        keySetTiming: tuning.keySetTiming,
      }),
      keys: apiKeys(writeOn(primary)),
      logger,
      readiness: databaseReadiness(primary),
      corsOrigin: config.corsOrigin,
      limits: abuseLimits(rates, config.limits),
      trustedProxies: config.trustedProxies,
      servesMetrics: config.metricsPort === undefined,
      live,
      maxEventStreams: config.maxEventStreams,
      heartbeatMs: tuning.heartbeatMs,
    });
    const listener = await listen(app.callback(), config.port);
    const metricsListener =
      config.metricsPort === undefined
        ? undefined
        : await listen(metricsApp().callback(), config.metricsPort, config.metricsHost);

    return {
      port: listener.port,
      metricsPort: metricsListener?.port,
      async stop() {
        clearInterval(pruning);
        clearInterval(pruningChanges);
        const closing = Promise.all([listener.close(SHUTDOWN_GRACE_MS), metricsListener?.close(SHUTDOWN_GRACE_MS)]);
        // Event streams never end by themselves: each ends now, with a hint to reconnect
        // (docs/reference/browse-and-sync.md#when-a-stream-ends).
        await webhooks.close();
        await live.close();
        await closing;
        replica?.stop();
        cache?.stop();
        identity.stop();
        rates.tokens.stop();
        rates.writes.stop();
        await closePools();
        await databaseServer.stop();
      },
    };
  } catch (err) {
    await closePools();
    // Only a PostgreSQL this process started: one it adopted may be serving another instance
    // (a second `npm start` that finds the port taken must not stop the first one's database).
    await databaseServer.stop();
    throw err;
  }
}

/**
 * `npm start` execs node, so npm is our parent. A SIGKILL to npm reaches no one, and this
 * process would go on serving alone: once npm is gone we are re-parented, and stop.
 */
function whenNpmDies(onGone: () => void): void {
  if (!process.env.npm_lifecycle_event) return;
  const npm = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === npm) return;
    clearInterval(timer);
    onGone();
  }, 1_000);
  timer.unref();
}

/** `--pretty-logs` (what `npm run dev` passes): lines for a person instead of JSON. */
function logFormatOf(args: string[]): LogFormat {
  const { values } = parseArgs({ args, options: { 'pretty-logs': { type: 'boolean' } } });
  return values['pretty-logs'] ? 'pretty' : 'json';
}

/** Where a person finds the service listening on `port`: the API, and its docs page. */
function addressesOf(port: number): { url: string; docs: string } {
  const url = `http://localhost:${port}`;
  return { url, docs: `${url}${DOCS_PAGE}` };
}

async function main(): Promise<void> {
  const logFormat = logFormatOf(process.argv.slice(2));
  let config: Config;
  try {
    config = readConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`bike catalog: ${err.message}`);
    process.exit(1);
  }
  const logger = createLogger(config.logLevel, logFormat);

  // Signals are taken before anything starts (initdb alone blocks for seconds): one that arrives
  // while the service is still starting stops it as soon as it is up, so an embedded PostgreSQL
  // is never left behind.
  const started: { service?: Promise<Service> } = {};
  let stopping = false;
  const shutdown = (reason: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, 'shutting down');
    // Handlers run from the event loop, so by then `started.service` is set.
    void started
      .service!.then((service) => service.stop())
      .then(
        () => {
          logger.info('stopped');
          process.exit(exitCode);
        },
        (err) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  // SIGHUP: the terminal that ran `npm start` was closed.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => shutdown(signal));
  // A bug that escapes every handler still gets an orderly stop of the embedded PostgreSQL.
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception');
    shutdown('uncaught exception', 1);
  });
  process.on('unhandledRejection', (err) => {
    logger.fatal({ err }, 'unhandled promise rejection');
    shutdown('unhandled promise rejection', 1);
  });
  whenNpmDies(() => shutdown('npm exited'));

  started.service = startService(config, logger).then(
    (service) => {
      const { url, docs } = addressesOf(service.port);
      logger.info(
        {
          port: service.port,
          metricsPort: service.metricsPort,
          database: config.databaseUrl ? 'external' : 'embedded',
          tokenIssuance: config.tokenIssuance,
          identityProvider: config.identityProvider?.issuer,
        },
        `listening on ${url} — API docs at ${docs}`,
      );
      return service;
    },
    (err) => {
      console.error('bike catalog failed to start:', err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );

  await started.service;
}

if (require.main === module) {
  main().catch((err) => {
    console.error('bike catalog failed to start:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

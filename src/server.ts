import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { loadOrCreateSecret } from './auth/secret';
import { createTokens } from './auth/tokens';
import { createBikeRepository } from './bikes/repository';
import { type Config, ConfigError, readConfig } from './config';
import { openDatabaseServer } from './db/database';
import { migrate } from './db/migrate';
import { connectDatabase } from './db/prisma';
import { isDatabaseUnavailable } from './http/errors';
import { databaseReadiness } from './http/health-router';
import { createLogger, type Logger } from './logger';

/** How long a shutdown waits for requests in flight before it closes their connections. */
const SHUTDOWN_GRACE_MS = 10_000;
/** How long start-up waits for an external database to accept connections. */
const DATABASE_WAIT_MS = 30_000;

export interface Service {
  port: number;
  /** Stops accepting connections, finishes requests in flight, closes the pool, stops an embedded PostgreSQL. */
  stop(): Promise<void>;
}

async function migrateWhenReachable(url: string, logger: Logger): Promise<void> {
  const deadline = Date.now() + DATABASE_WAIT_MS;
  for (;;) {
    try {
      await migrate(url, (message) => logger.info(message));
      return;
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() > deadline) throw err;
      logger.warn('database not reachable yet, retrying');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export async function startService(config: Config, logger: Logger): Promise<Service> {
  const databaseServer = await openDatabaseServer(config, logger);
  try {
    const jwtSecret = config.jwtSecret ?? loadOrCreateSecret(config.dataDir);
    await migrateWhenReachable(databaseServer.url, logger);
    const db = connectDatabase(databaseServer.url, (err) => logger.warn({ err: err.message }, 'database connection lost'));
    const app = createApp({
      bikes: createBikeRepository(db.prisma),
      tokens: createTokens(jwtSecret),
      logger,
      readiness: databaseReadiness(db.pool),
      corsOrigin: config.corsOrigin,
    });
    const server = http.createServer(
      {
        // Room for a 100 KB Authorization header, so an oversized token is judged (403), not refused.
        maxHeaderSize: 256 * 1024,
        // A slow client cannot hold a connection forever.
        headersTimeout: 10_000,
        requestTimeout: 30_000,
        keepAliveTimeout: 5_000,
      },
      app.callback(),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, () => resolve());
    });
    const { port } = server.address() as AddressInfo;

    return {
      port,
      async stop() {
        const closed = new Promise((resolve) => server.close(resolve));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        await closed;
        clearTimeout(timer);
        await db.close();
        await databaseServer.stop();
      },
    };
  } catch (err) {
    await databaseServer.stop();
    throw err;
  }
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = readConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`bike catalog: ${err.message}`);
    process.exit(1);
  }
  const logger = createLogger(config.logLevel);
  const service = await startService(config, logger);
  logger.info({ port: service.port, database: config.databaseUrl ? 'external' : 'embedded' }, 'bike catalog listening');

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    service.stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

if (require.main === module) {
  main().catch((err) => {
    console.error('bike catalog failed to start:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

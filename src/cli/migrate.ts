import { readConfig } from '../config';
import { openDatabaseServer } from '../postgres/database-server';
import { prepareDatabase } from '../db/migrate';
import { createLogger } from '../logger';

/**
 * npm run db:migrate, and the compose stacks' migrate service: applies pending migrations as
 * DATABASE_DIRECT_URL's role (else DATABASE_URL's), or to the embedded database, and grants
 * DATABASE_URL's role its rights on the catalog.
 */
async function main(): Promise<void> {
  const config = readConfig(process.env, { signsTokens: false });
  const logger = createLogger(config.logLevel);
  const server = await openDatabaseServer(config, logger);
  try {
    const { applied } = await prepareDatabase(server, config, (message) => logger.info(message));
    logger.info(applied.length ? `applied ${applied.length} migration(s)` : 'database is up to date');
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error('migration failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});

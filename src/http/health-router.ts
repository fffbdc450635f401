import Router from '@koa/router';
import type { Pool } from 'pg';
import { type Migration, pendingMigrations, readMigrations } from '../db/migrate';
import { withinTime } from '../timeout';

/** Whether the service can serve the API now; `reason` says why not, in a few words. */
export type ReadinessCheck = () => Promise<{ ready: true } | { ready: false; reason: string }>;

/** A readiness answer comes within this time, even from a database that hangs. */
const READINESS_TIMEOUT_MS = 2_000;

/**
 * Ready when PostgreSQL answers and every committed migration is recorded as applied.
 * The migrations are read from disk once: the ones this build of the service expects.
 */
export function databaseReadiness(
  pool: Pick<Pool, 'query'>,
  migrations: Migration[] = readMigrations(),
): ReadinessCheck {
  return async () => {
    try {
      const pending = await withinTime(pendingMigrations(pool, migrations), READINESS_TIMEOUT_MS);
      if (pending === 'timeout') return { ready: false, reason: 'database not answering' };
      if (pending.length > 0) return { ready: false, reason: `${pending.length} migration(s) not applied` };
      return { ready: true };
    } catch (err) {
      // 42P01: no _prisma_migrations table, so nothing was ever migrated into this database.
      const missingTable = (err as { code?: unknown }).code === '42P01';
      return { ready: false, reason: missingTable ? 'migrations not applied' : 'database not answering' };
    }
  };
}

/**
 * GET /healthz: 200 while the process is up (liveness). GET /readyz: 200 when the database is
 * usable, 503 otherwise (readiness). Plain text; a 503 here is an answer, not an error, so it
 * is not thrown to the error middleware and not logged as one.
 */
export function healthRouter(readiness: ReadinessCheck): Router {
  const router = new Router();

  router.get('/healthz', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/plain';
    ctx.body = 'OK';
  });

  router.get('/readyz', async (ctx) => {
    const result = await readiness();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/plain';
    ctx.status = result.ready ? 200 : 503;
    ctx.body = result.ready ? 'OK' : `Service Unavailable: ${result.reason}`;
  });

  return router;
}

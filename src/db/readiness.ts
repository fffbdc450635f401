import { withinTime } from '../timeout';
import { type Migration, pendingMigrations, readMigrations } from './migrate';
import type { ServicePool } from './pool';

/** Whether the database can serve the API now; `reason` says why not, in a few words. */
export type Readiness = { ready: true } | { ready: false; reason: string };

/** A readiness answer comes within this time, even from a database that hangs. */
const READINESS_TIMEOUT_MS = 2_000;

/**
 * Ready when PostgreSQL answers, asked as a request asks it (through the pool's watch on the
 * server, which fails it at once while it finds the server down or hung: a 200 here does not come
 * before requests are served again), and every committed migration is recorded as applied. The
 * migrations are read from disk once: the ones this build of the service expects.
 */
export function databaseReadiness(
  pool: Pick<ServicePool, 'query' | 'server'>,
  migrations: Migration[] = readMigrations(),
): () => Promise<Readiness> {
  return async () => {
    try {
      const pending = await withinTime(
        pool.server.unlessDown(() => pendingMigrations(pool, migrations)),
        READINESS_TIMEOUT_MS,
      );
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

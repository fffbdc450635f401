import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, type PoolClient } from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type { PrismaClient };

export interface Database {
  prisma: PrismaClient;
  /** The pool under Prisma, for the readiness check's plain query. */
  pool: Pool;
  close(): Promise<void>;
}

/** A query stuck on a half-dead connection must not hold a request forever. */
const QUERY_TIMEOUT_MS = 30_000;

export interface DatabaseOptions {
  /** How long a query may run before its connection is closed; 30 s unless a test shortens it. */
  queryTimeoutMs?: number;
}

/**
 * Closes the connection of any client checked out for longer than the limit, which fails its
 * query ("Connection terminated", a 503) and lets the pool replace it.
 *
 * This stands in for pg's own `query_timeout`, whose per-query timer keeps the query, and so
 * every row it reads, reachable until the next full garbage collection: each 1000-row batch of
 * /bikes/all was promoted to the old generation, and the service spent three times the baseline's
 * time in GC. One interval over the checked-out clients holds no query.
 */
function cutOffStuckClients(pool: Pool, limitMs: number, onCutOff: (err: Error) => void): () => void {
  const checkedOutAt = new Map<PoolClient, number>();
  pool.on('acquire', (client) => checkedOutAt.set(client, Date.now()));
  pool.on('release', (_err, client) => checkedOutAt.delete(client));
  pool.on('remove', (client) => checkedOutAt.delete(client as PoolClient));
  const timer = setInterval(
    () => {
      const now = Date.now();
      for (const [client, since] of checkedOutAt) {
        if (now - since <= limitMs) continue;
        checkedOutAt.delete(client);
        onCutOff(new Error(`a database query ran for over ${limitMs / 1000} s; its connection was closed`));
        client.connection.stream.destroy();
      }
    },
    Math.min(1_000, limitMs),
  );
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * One pg pool under one Prisma client. Connecting gives up after 1.5 s, so while PostgreSQL is
 * down (or hangs) requests get their 503 within 2 s instead of queueing, and the pool reconnects
 * by itself when it is back.
 */
export function connectDatabase(
  databaseUrl: string,
  onPoolError: (err: Error) => void,
  { queryTimeoutMs = QUERY_TIMEOUT_MS }: DatabaseOptions = {},
): Database {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: 10,
    connectionTimeoutMillis: 1_500,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection that PostgreSQL drops (restart, outage) must not crash the process.
  pool.on('error', onPoolError);
  const stopCuttingOff = cutOffStuckClients(pool, queryTimeoutMs, onPoolError);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    prisma,
    pool,
    async close() {
      stopCuttingOff();
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

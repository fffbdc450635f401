import { PrismaPg } from '@prisma/adapter-pg';
import { Pool } from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type { PrismaClient };

export interface Database {
  prisma: PrismaClient;
  /** The pool under Prisma, for the readiness check's plain query. */
  pool: Pool;
  close(): Promise<void>;
}

/**
 * One pg pool under one Prisma client. Connecting gives up after 2 s, so while PostgreSQL is down
 * requests fail fast (503) instead of queueing, and the pool reconnects by itself when it is back.
 */
export function connectDatabase(databaseUrl: string, onPoolError: (err: Error) => void): Database {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: 10,
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
    // A query stuck on a half-dead connection must not hold a request forever.
    query_timeout: 30_000,
  });
  // An idle connection that PostgreSQL drops (restart, outage) must not crash the process.
  pool.on('error', onPoolError);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    prisma,
    pool,
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

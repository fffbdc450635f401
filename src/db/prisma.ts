import { PrismaPg } from '@prisma/adapter-pg';
import type { Pool } from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type { PrismaClient };

/**
 * Prisma Client on the service's own pg pool (the primary's), through the pg driver adapter:
 * no Rust engine and no second pool, so the pool's limits, its cut-off of stuck queries and its
 * metrics cover Prisma's queries too. Closing the pool is the pool owner's business.
 */
export function createPrismaClient(pool: Pool): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg(pool) });
}

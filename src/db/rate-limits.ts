import { RateLimiterPostgres } from 'rate-limiter-flexible';
import { queryOn, type ServicePool } from './pool';

/**
 * rate-limiter-flexible's counters in PostgreSQL (the table rate_limits), shared by every
 * instance. The library names its statements, which a transaction pooler cannot keep
 * (docs/decisions.md, rule 21): it is given the pool behind a query function that sends them
 * unnamed.
 */
export function rateLimiter(pool: ServicePool, name: string, perMinute: number): RateLimiterPostgres {
  const query = queryOn(pool);
  const unnamed = {
    query: ({ text, values }: { text: string; values: unknown[] }) => query(text, values),
  };
  return new RateLimiterPostgres({
    storeClient: unnamed,
    storeType: 'pool',
    tableName: 'rate_limits',
    // Made by the migration 20261125180000_rate_limits (UNLOGGED); the service's role may not create tables.
    tableCreated: true,
    keyPrefix: name,
    points: perMinute,
    duration: 60,
    clearExpiredByTimeout: true,
  });
}

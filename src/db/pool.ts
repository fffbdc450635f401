import { Pool, type PoolClient } from 'pg';

/** A query stuck on a half-dead connection must not hold a request forever. */
const QUERY_TIMEOUT_MS = 30_000;

export interface PoolOptions {
  /** How long a query may run before its connection is closed; 30 s unless a test shortens it. */
  queryTimeoutMs?: number;
}

/**
 * Closes the connection of any client checked out for longer than the limit, which fails its
 * query ("Connection terminated", a 503) and lets the pool replace it. (pg's own query_timeout
 * keeps every query's rows reachable until a full garbage collection; one interval holds none.)
 */
function cutOffStuckClients(pool: Pool, limitMs: number, onCutOff: (err: Error) => void): void {
  const checkedOutAt = new Map<PoolClient, number>();
  pool.on('acquire', (client) => checkedOutAt.set(client, Date.now()));
  pool.on('release', (_err, client) => checkedOutAt.delete(client));
  pool.on('remove', (client) => checkedOutAt.delete(client as PoolClient));
  const timer = setInterval(
    () => {
      if (pool.ended) clearInterval(timer);
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
}

/**
 * The pg pool every query runs on. Connecting gives up after 1.5 s, so while PostgreSQL is down
 * (or hangs) requests get their 503 within 2 s instead of queueing, and the pool reconnects by
 * itself when it is back.
 */
export function connectPool(
  databaseUrl: string,
  onError: (err: Error) => void,
  { queryTimeoutMs = QUERY_TIMEOUT_MS }: PoolOptions = {},
): Pool {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: 10,
    connectionTimeoutMillis: 1_500,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection that PostgreSQL drops (restart, outage) must not crash the process.
  pool.on('error', onError);
  cutOffStuckClients(pool, queryTimeoutMs, onError);
  return pool;
}

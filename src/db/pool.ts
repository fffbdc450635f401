import net from 'node:net';
import { Client, Pool, type PoolClient } from 'pg';
import { withinTime } from '../timeout';

/** A query stuck on a half-dead connection must not hold a request forever. */
const QUERY_TIMEOUT_MS = 30_000;

/**
 * Set on the service's role (in its database, at every start), so that they hold through any
 * pooler: PostgreSQL itself cancels a statement that runs, or waits for a lock, too long, before
 * the pool gives up on it (QUERY_TIMEOUT_MS), and rolls its transaction back. A write answered
 * 503 for a timeout has therefore not committed, and never will. A statement whose client is
 * gone is cancelled too (PostgreSQL 14 and later). `since`: the server_version_num that has it.
 */
export const ROLE_SETTINGS = {
  statement_timeout: { value: '25s', since: 0 },
  lock_timeout: { value: '5s', since: 0 },
  client_connection_check_interval: { value: '1s', since: 140000 },
};

export interface PoolOptions {
  /** How long a query may run before its connection is closed; 30 s unless a test shortens it. */
  queryTimeoutMs?: number;
  /** pg's Client, or one that connects only to a server it can prove is the one meant (the embedded server's). */
  ServerClient?: typeof Client;
}

/** How long a cut-off waits for its cancel request to be taken. */
const CANCEL_WAIT_MS = 1_000;

/**
 * Asks the server to cancel what `client` is running: a CancelRequest (the protocol's own, which
 * poolers pass on to the right server) on a connection of its own, which the server closes once
 * it has acted on it.
 */
function cancelStatement(client: PoolClient): Promise<void> {
  return new Promise((resolve) => {
    if (client.processID === null || client.secretKey === null) return resolve();
    const request = Buffer.alloc(16);
    request.writeInt32BE(16, 0);
    request.writeInt32BE(CANCEL_REQUEST_CODE, 4);
    request.writeInt32BE(client.processID, 8);
    request.writeInt32BE(client.secretKey, 12);
    const socket = net.connect(client.port, client.host, () => socket.end(request));
    socket.once('close', () => resolve());
    socket.once('error', () => resolve());
  });
}

/** The CancelRequest message code (PostgreSQL protocol, 55.7). */
const CANCEL_REQUEST_CODE = 80877102;

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
        // The statement is cancelled on the server first, so the 503 that follows is for a write
        // that did not commit. (One the server cannot hear of, as when it hangs, is in the hands
        // of its statement_timeout and client_connection_check_interval: ROLE_SETTINGS.)
        void withinTime(cancelStatement(client), CANCEL_WAIT_MS).then(() => client.connection.stream.destroy());
      }
    },
    Math.min(1_000, limitMs),
  );
  timer.unref();
}

/** A server that leaves a trivial query unanswered this long on a connection of its own hangs. */
const HANG_AFTER_MS = 1_000;
const HANG_CHECK_EVERY_MS = 250;

/**
 * Closes every connection of the pool while the server hangs (a stopped PgBouncer, a frozen
 * host), so that what waits on them fails at once (503) instead of at the 30 s cut-off: a
 * SELECT 1 every 250 ms, on a connection of its own, unanswered for 1 s, means it hangs. (A
 * server that is down refuses connections by itself.) A write in flight then may still commit
 * when the server wakes: its outcome cannot be known (docs/decisions.md, rule 18).
 */
function closeConnectionsWhileHung(
  pool: Pool,
  connectionString: string,
  ServerClient: typeof Client,
  onHang: (err: Error) => void,
): void {
  const connections = new Set<PoolClient>();
  pool.on('connect', (client) => connections.add(client));
  pool.on('remove', (client) => connections.delete(client as PoolClient));
  let probe: Client | undefined;
  let asking = false;
  const drop = (client: Client) => {
    client.on('error', () => undefined);
    client.connection.stream.destroy();
  };
  const ask = async () => {
    probe ??= await (async () => {
      const client = new ServerClient({ connectionString, connectionTimeoutMillis: HANG_AFTER_MS });
      client.on('error', () => undefined);
      await client.connect();
      return client;
    })();
    if ((await withinTime(probe.query('SELECT 1'), HANG_AFTER_MS)) !== 'timeout') return;
    onHang(new Error(`the database did not answer within ${HANG_AFTER_MS / 1000} s; its connections were closed`));
    for (const client of connections) drop(client);
    drop(probe);
    probe = undefined;
  };
  const timer = setInterval(() => {
    if (pool.ended) {
      clearInterval(timer);
      if (probe) drop(probe);
      return;
    }
    if (asking) return;
    asking = true;
    ask()
      .catch(() => {
        // Refused or broken: the server is down or restarting, which the pool sees by itself.
        if (probe) drop(probe);
        probe = undefined;
      })
      .finally(() => (asking = false));
  }, HANG_CHECK_EVERY_MS);
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
  { queryTimeoutMs = QUERY_TIMEOUT_MS, ServerClient = Client }: PoolOptions = {},
): Pool {
  const pool = new Pool({
    Client: ServerClient,
    connectionString: databaseUrl,
    max: 10,
    connectionTimeoutMillis: 1_500,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection that PostgreSQL drops (restart, outage) must not crash the process.
  pool.on('error', onError);
  cutOffStuckClients(pool, queryTimeoutMs, onError);
  closeConnectionsWhileHung(pool, databaseUrl, ServerClient, onError);
  return pool;
}

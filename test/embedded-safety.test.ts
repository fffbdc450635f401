import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { serverUser } from '../src/postgres/server-user';
import { client, newBike } from './support/bikes';
import { spawnService, type ServiceProcess } from './support/process';
import { tempDataDir } from './support/temp-dir';

/**
 * The embedded database does no harm to what is not its own: it deletes nothing it did not make,
 * stops only the server it started, and its queries run without a superuser's rights.
 */

const SERVER = path.join(__dirname, '..', 'dist', 'server.js');

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM');
  expect((await service.exited).code).toBe(0);
}

/** Runs the built service until it exits; its exit code and stderr. */
async function runUntilExit(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const { DATABASE_URL: _url, JWT_SECRET: _secret, ...inherited } = process.env;
  const child = spawn(process.execPath, [SERVER], {
    env: { ...inherited, PORT: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stderr };
}

/** The superuser's connection to the embedded server of `dataDir`, found through the service's own files. */
async function asSuperuser<T>(dataDir: string, work: (db: Client) => Promise<T>): Promise<T> {
  const pid = fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
  const password = fs.readFileSync(path.join(dataDir, 'postgres-password'), 'utf8');
  const db = new Client({ host: '127.0.0.1', port: Number(pid[3]), user: 'postgres', password, database: 'bikes' });
  await db.connect();
  try {
    return await work(db);
  } finally {
    await db.end();
  }
}

describe('a DATA_DIR/postgres that holds something other than a cluster', () => {
  it.each([
    [
      'a directory of files',
      (target: string) => {
        fs.mkdirSync(path.join(target, 'backups'), { recursive: true });
        fs.writeFileSync(path.join(target, 'precious.txt'), 'keep me');
        fs.writeFileSync(path.join(target, 'backups', '2026-11-01.dump'), 'keep me too');
      },
    ],
    ['a file', (target: string) => fs.writeFileSync(target, 'keep me')],
  ])('when it is %s, the service exits 1 with one line that says so, and removes nothing', async (_what, plant) => {
    const dataDir = tempDataDir('foreign');
    try {
      const target = path.join(dataDir, 'postgres');
      plant(target);
      const before = spawnSync('find', [target, '-printf', '%p %s %m\n']).stdout.toString();

      const { code, stderr } = await runUntilExit({ DATA_DIR: dataDir });
      expect(code).toBe(1);
      expect(stderr.trimEnd().split('\n')).toEqual([
        expect.stringMatching(/is not a PostgreSQL cluster \(it holds .*\); nothing was changed: move it away/),
      ]);
      expect(spawnSync('find', [target, '-printf', '%p %s %m\n']).stdout.toString()).toBe(before);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it.each([
    ['a directory of files', ['precious.txt'], /it holds precious.txt/],
    ['an empty directory', [], /it holds nothing, behind a link/],
  ])(
    'when it is a link to %s elsewhere, it exits 1 and that directory survives as it was',
    async (_what, files, why) => {
      const dataDir = tempDataDir('foreign-link');
      const elsewhere = tempDataDir('elsewhere');
      try {
        for (const file of files) fs.writeFileSync(path.join(elsewhere, file), 'keep me');
        fs.symlinkSync(elsewhere, path.join(dataDir, 'postgres'));
        const { code, stderr } = await runUntilExit({ DATA_DIR: dataDir });
        expect(code).toBe(1);
        expect(stderr).toMatch(why);
        expect(fs.readdirSync(elsewhere)).toEqual(files);
        expect(fs.statSync(elsewhere).uid).toBe(process.getuid?.());
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
        fs.rmSync(elsewhere, { recursive: true, force: true });
      }
    },
  );
});

describe('two services on one DATA_DIR', () => {
  it('when both start at once on a fresh DATA_DIR, they make one cluster and both serve', async () => {
    const dataDir = tempDataDir('race');
    try {
      const started = await Promise.allSettled([
        spawnService({ DATA_DIR: dataDir }),
        spawnService({ DATA_DIR: dataDir }),
      ]);
      const [a, b] = started.map((result) => (result.status === 'fulfilled' ? result.value : undefined));
      try {
        expect(started.map((result) => (result.status === 'rejected' ? String(result.reason) : 'serving'))).toEqual([
          'serving',
          'serving',
        ]);
        if (!a || !b) return;
        const token = (await (await fetch(`${a.baseUrl}/api/user`, { method: 'POST' })).json()) as { token: string };
        const created = await client(a.baseUrl, token.token).create(newBike());
        const read = await fetch(`${b.baseUrl}/bikes/${created.id}`);
        expect(read.status).toBe(200);
        // Nothing but the cluster, the secrets and the log: no second cluster, no leftover staging directory.
        expect(fs.readdirSync(dataDir).sort()).toEqual([
          'jwt-secret',
          'postgres',
          'postgres-app-password',
          'postgres-password',
          'postgres.log',
        ]);
      } finally {
        if (b) await stop(b);
        if (a) await stop(a);
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('when the one that started the database stops first, the other still serves, and stops it when it stops', async () => {
    const dataDir = tempDataDir('adopt-outlives');
    try {
      const starter = await spawnService({ DATA_DIR: dataDir });
      const adopter = await spawnService({ DATA_DIR: dataDir });
      await stop(starter);
      expect((await fetch(`${adopter.baseUrl}/bikes/all`)).status).toBe(200);
      await stop(adopter);
      expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('when the one that adopted the running database stops, the one that started it still serves', async () => {
    const dataDir = tempDataDir('adopt');
    try {
      const starter = await spawnService({ DATA_DIR: dataDir });
      try {
        const adopter = await spawnService({ DATA_DIR: dataDir });
        expect(adopter.output()).toMatch(/adopting the PostgreSQL server already running/);
        await stop(adopter);
        expect((await fetch(`${starter.baseUrl}/bikes/all`)).status).toBe(200);
      } finally {
        await stop(starter);
      }
      expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the embedded database’s rights and files', () => {
  let dataDir: string;
  let service: ServiceProcess;
  beforeAll(async () => {
    dataDir = tempDataDir('least-privilege');
    service = await spawnService({ DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await stop(service);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs the service’s queries as a role that is no superuser and may not create roles or run programs', async () => {
    // A request, so the pool holds a connection to look at.
    expect((await fetch(`${service.baseUrl}/bikes/all`)).status).toBe(200);
    const roles = await asSuperuser(dataDir, async (db) => {
      const { rows } = await db.query<{
        rolname: string;
        rolsuper: boolean;
        rolcreaterole: boolean;
        runs_programs: boolean;
      }>(
        `SELECT DISTINCT r.rolname, r.rolsuper, r.rolcreaterole,
                pg_has_role(r.oid, 'pg_execute_server_program', 'MEMBER') AS runs_programs
           FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
          WHERE a.datname = 'bikes' AND a.pid <> pg_backend_pid()`,
      );
      return rows;
    });
    expect(roles).toEqual([{ rolname: 'bike_catalog', rolsuper: false, rolcreaterole: false, runs_programs: false }]);
  });

  it('does not warn that the service’s queries could change the schema: their role owns nothing', () => {
    expect(service.output()).toContain('listening on');
    expect(service.output()).not.toContain('can change or drop the schema');
  });

  it('keeps the server’s log readable by its owner only', () => {
    expect(fs.statSync(path.join(dataDir, 'postgres.log')).mode & 0o777).toBe(0o600);
  });

  it('starts PostgreSQL without the service’s secrets in its environment', () => {
    const pid = fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0];
    const environment = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
    expect(environment.map((entry) => entry.split('=')[0]).sort()).toEqual(['LC_ALL', 'PATH']);
  });
});

describe('the secrets in DATA_DIR', () => {
  it('after starts that make the role, find it made, and run with the server logging every statement, the secret files are 0600 (made so again), and neither postgres.log nor the service’s output holds a password or the signing secret, nor did any statement fail into the log', async () => {
    const dataDir = tempDataDir('secrets-in-logs');
    try {
      const outputs: string[] = [];
      const startAndStop = async (whileRunning: () => Promise<unknown> = async () => undefined) => {
        const service = await spawnService({ DATA_DIR: dataDir });
        await whileRunning();
        await stop(service);
        outputs.push(service.output());
      };
      await startAndStop();
      // In force from the next start, whose setting of the role's password is then logged too.
      await startAndStop(() => asSuperuser(dataDir, (db) => db.query("ALTER SYSTEM SET log_statement = 'all'")));
      const secretFiles = ['postgres-password', 'postgres-app-password', 'jwt-secret'];
      // As a copy without its modes would leave them: the start makes them the owner's only again.
      for (const name of secretFiles) fs.chmodSync(path.join(dataDir, name), 0o644);
      await startAndStop();

      const secrets = secretFiles.map((name) => {
        const file = path.join(dataDir, name);
        expect({ name, mode: fs.statSync(file).mode & 0o777 }).toEqual({ name, mode: 0o600 });
        return fs.readFileSync(file, 'utf8').trim();
      });
      const log = fs.readFileSync(path.join(dataDir, 'postgres.log'), 'utf8');
      expect(log).toMatch(/LOG: {2}statement: /); // it did log every statement
      expect(log).not.toMatch(/ERROR: /);
      for (const text of [log, ...outputs]) {
        expect(secrets.map((secret) => text.includes(secret))).toEqual(secrets.map(() => false));
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('JWT_SECRET and JWT_SECRET_FILE', () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDataDir('secrets');
    fs.writeFileSync(path.join(dir, 'short'), 'abc\n');
    fs.writeFileSync(path.join(dir, 'placeholder'), `${'a'.repeat(64)}\n`);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['shorter than 32 bytes', { JWT_SECRET: 'abc' }, 'got 3 bytes and 3'],
    ['a file holding a short one', { JWT_SECRET_FILE: 'short' }, 'got 3 bytes and 3'],
    ['a placeholder of one repeated character', { JWT_SECRET: 'x'.repeat(40) }, 'got 40 bytes and 1'],
    ['a file holding a placeholder', { JWT_SECRET_FILE: 'placeholder' }, 'got 64 bytes and 1'],
  ])('%s: the service refuses to start with one line, without the secret', async (_case, given, figures) => {
    const env = Object.fromEntries(
      Object.entries(given).map(([name, value]) => [name, name.endsWith('_FILE') ? path.join(dir, value) : value]),
    );
    const { code, stderr } = await runUntilExit({ DATA_DIR: path.join(dir, 'data'), ...env });
    expect(code).toBe(1);
    expect(stderr.trimEnd().split('\n')).toEqual([
      `bike catalog: JWT_SECRET must be at least 32 bytes long with at least 8 different characters, ${figures}; ` +
        'make one with: openssl rand -base64 32',
    ]);
    expect(stderr).not.toMatch(/abc\b|xxxx|aaaa/);
  });

  it.each([
    [
      'both are set',
      { JWT_SECRET: 'x', JWT_SECRET_FILE: '/nonexistent' },
      'JWT_SECRET and JWT_SECRET_FILE are both set: set one of them',
    ],
    [
      'the file cannot be read',
      { JWT_SECRET_FILE: '/nonexistent/secret' },
      'JWT_SECRET_FILE: cannot read /nonexistent/secret (ENOENT)',
    ],
  ])('%s: the service refuses to start and says why', async (_case, env, message) => {
    const { code, stderr } = await runUntilExit({ DATA_DIR: path.join(dir, 'data'), ...env });
    expect(code).toBe(1);
    expect(stderr.trimEnd().split('\n')).toEqual([`bike catalog: ${message}`]);
  });
});

const user = serverUser();
if (!user)
  console.log('embedded-safety.test.ts: the symlink attacks skipped: only root runs PostgreSQL as another user');

/**
 * As root, the server runs as the bike-catalog user. Whoever acts as that user controls every
 * file in the cluster; each attack plants a link (or a lie) there and restarts the service.
 */
(user ? describe : describe.skip)('as root, files the server user plants in the cluster', () => {
  const asServerUser = (command: string, ...args: string[]) => {
    const result = spawnSync(command, args, { uid: user!.uid, gid: user!.gid, stdio: 'pipe' });
    if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}`);
  };

  let victimDir: string;
  let victim: string;
  beforeEach(() => {
    victimDir = fs.mkdtempSync(path.join('/root', '.bike-catalog-victim-'));
    victim = path.join(victimDir, 'passwd');
    fs.writeFileSync(victim, 'root:x:0:0:root:/root:/bin/bash\n', { mode: 0o600 });
  });
  afterEach(() => fs.rmSync(victimDir, { recursive: true, force: true }));
  const victimIsUntouched = () => {
    const stat = fs.statSync(victim);
    expect({ uid: stat.uid, gid: stat.gid, mode: stat.mode & 0o7777 }).toEqual({ uid: 0, gid: 0, mode: 0o600 });
    expect(fs.readFileSync(victim, 'utf8')).toBe('root:x:0:0:root:/root:/bin/bash\n');
  };

  it('runs PostgreSQL as a user of its own, never the shared postgres account', async () => {
    const dataDir = tempDataDir('server-user');
    try {
      const service = await spawnService({ DATA_DIR: dataDir });
      const pid = fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0];
      const owner = spawnSync('ps', ['-o', 'user=', '-p', pid]).stdout.toString().trim();
      await stop(service);
      expect(owner).toBe('bike-catalog');
      expect(fs.statSync(path.join(dataDir, 'postgres')).uid).toBe(user!.uid);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  /** Starts the service and stops it again; a start that fails on the planted file is an answer too. */
  async function startAndStop(dataDir: string): Promise<void> {
    let service: ServiceProcess;
    try {
      service = await spawnService({ DATA_DIR: dataDir });
    } catch {
      return;
    }
    await stop(service);
  }

  it.each(['embedded.conf', 'postgresql.auto.conf', 'postmaster.pid', 'postmaster.opts', 'postgresql.conf'])(
    'a link from %s to a root-only file: the file stays as it was',
    async (name) => {
      const dataDir = tempDataDir('symlink');
      try {
        await startAndStop(dataDir);
        asServerUser('ln', '-sfn', victim, path.join(dataDir, 'postgres', name));
        await startAndStop(dataDir);
        victimIsUntouched();
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it('a postmaster.pid naming a process of root’s: that process is never signalled', async () => {
    const dataDir = tempDataDir('pid-lie');
    const decoy = spawn('sleep', ['120'], { stdio: 'ignore' });
    try {
      await startAndStop(dataDir);
      const lie = path.join(dataDir, 'postgres', 'postmaster.pid');
      asServerUser('sh', '-c', `printf '%s\n' ${decoy.pid} /x 0 5432 '' 127.0.0.1 > ${lie}`);
      await startAndStop(dataDir);
      expect(decoy.exitCode).toBeNull();
      expect(decoy.signalCode).toBeNull();
    } finally {
      decoy.kill('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('cannot plant anything beside the cluster: the data directory is root’s alone', async () => {
    const dataDir = tempDataDir('data-dir');
    try {
      await startAndStop(dataDir);
      expect(() => asServerUser('ln', '-sfn', victim, path.join(dataDir, 'postgres.log'))).toThrow(/Permission denied/);
      expect(() => asServerUser('ln', '-sfn', victim, path.join(dataDir, 'jwt-secret'))).toThrow(/Permission denied/);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/postgres/embedded-postgres';
import { serverUser } from '../src/postgres/server-user';
import { isStartupMessageOnly, type Neighbour, neighbourListeningOn, NOBODY } from './support/neighbour';
import { freePort, launchService, spawnService } from './support/process';
import { tempDataDir } from './support/temp-dir';
import { PATIENCE_MS, waitFor } from './support/wait';

/**
 * As root, beside other local users (issue 24): what a user who is neither root nor the server
 * user can do to the service through a port or a link, and that it gets nothing.
 */

const asRoot = serverUser() !== undefined;
if (!asRoot) console.log('local-users.test.ts skipped: another local user can only be played by root');

/** The lines of a cluster's postmaster.pid: [0] the pid, [3] the port. */
function postmasterPid(dataDir: string): string[] {
  return fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
}

function isAlive(pid: number): boolean {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // A killed process nobody has reaped yet (a zombie) holds nothing any more.
  return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
}

/**
 * A crash, as after an OOM kill or a power loss: PostgreSQL SIGKILLed, postmaster.pid left behind.
 * (Started by this process, which reaps it, so its pid is free again as after a reboot.)
 */
async function crash(dataDir: string): Promise<void> {
  const pid = Number(postmasterPid(dataDir)[0]);
  const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  process.kill(pid, 'SIGKILL');
  // Its children leave once they see it gone; until then they hold the cluster's shared memory.
  await waitFor('the crashed server’s processes to go', () => ([pid, ...children].some(isAlive) ? undefined : true));
  await waitFor('the crashed server to be reaped', () => (fs.existsSync(`/proc/${pid}`) ? undefined : true));
}

/** The superuser's password of `dataDir`'s cluster: compared with what a neighbour heard, never printed. */
function superuserPassword(dataDir: string): Buffer {
  return fs.readFileSync(path.join(dataDir, 'postgres-password'));
}

async function dataDirectoryOf(adminUrl: string): Promise<string> {
  const db = new Client({ connectionString: adminUrl });
  await db.connect();
  try {
    return (await db.query<{ dir: string }>(`SELECT current_setting('data_directory') AS dir`)).rows[0].dir;
  } finally {
    await db.end();
  }
}

/** Runs `work` while `neighbour` listens, then stops it: what it heard meanwhile. */
async function heardDuring(neighbour: Neighbour, work: () => Promise<void>): Promise<Buffer[]> {
  try {
    await work();
  } catch (err) {
    await neighbour.stop();
    throw err;
  }
  return neighbour.stop();
}

/** It was asked (something tried its port), and heard nothing a client says once it trusts a server. */
function expectNothingPastStartup(heard: Buffer[], dataDir: string): void {
  expect(heard.length).toBeGreaterThan(0);
  expect(heard.some((bytes) => bytes.includes(superuserPassword(dataDir)))).toBe(false);
  expect(heard.map(isStartupMessageOnly)).toEqual(heard.map(() => true));
}

(asRoot ? describe : describe.skip)('as root, another local user listening on the embedded server’s port', () => {
  it.each([
    ['the password in clear', 'cleartext' as const],
    ['SCRAM-SHA-256', 'scram' as const],
  ])(
    'after a crash, a neighbour on the port postmaster.pid names that asks for %s hears nothing past the startup message, and the server starts on another port',
    async (_asking, asks) => {
      const dataDir = tempDataDir('stale-port');
      try {
        const crashed = await startEmbeddedPostgres({ dataDir });
        await crash(dataDir);
        const stalePort = Number(postmasterPid(dataDir)[3]);
        const neighbour = await neighbourListeningOn(stalePort, asks);
        const heard = await heardDuring(neighbour, async () => {
          const postgres = await startEmbeddedPostgres({ dataDir });
          try {
            expect(postgres.port).not.toBe(stalePort);
            expect(await dataDirectoryOf(postgres.adminUrl)).toBe(fs.realpathSync(path.join(dataDir, 'postgres')));
          } finally {
            await postgres.stop();
          }
          // The crashed process's own hold on its server reconnects to that port meanwhile; it lets go here.
          await crashed.stop();
        });
        expectNothingPastStartup(heard, dataDir);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it('a neighbour that takes the port the server is about to start on hears no password, and the start fails with one line', async () => {
    const dataDir = tempDataDir('port-race');
    try {
      const port = await freePort();
      const heard = await heardDuring(await neighbourListeningOn(port, 'cleartext'), () =>
        expect(startEmbeddedPostgres({ dataDir, port, ephemeral: true })).rejects.toThrow(
          /^the embedded PostgreSQL could not start: PostgreSQL did not start; see .*postgres\.log; set DATABASE_URL/,
        ),
      );
      expectNothingPastStartup(heard, dataDir);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/** Runs the service until it exits (or kills it after PATIENCE_MS): its exit code and what it wrote to stderr. */
async function exitOf(env: Record<string, string>): Promise<{ code: number | null; errors: string }> {
  const service = await launchService(env);
  const timer = setTimeout(() => service.child.kill('SIGKILL'), PATIENCE_MS);
  const { code } = await service.exited;
  clearTimeout(timer);
  return { code, errors: service.errors() };
}

(asRoot ? describe : describe.skip)('as root, a DATA_DIR reached through a link', () => {
  let base: string;
  beforeEach(() => {
    base = tempDataDir('links');
    fs.mkdirSync(path.join(base, 'real'), { mode: 0o711 });
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  it('owned by another user is refused with one line naming the link and its owner, and nothing is made through it', async () => {
    const link = path.join(base, 'via');
    fs.symlinkSync(path.join(base, 'real'), link);
    fs.lchownSync(link, NOBODY, NOBODY);
    const { code, errors } = await exitOf({ DATA_DIR: path.join(link, 'data') });
    expect(code).toBe(1);
    expect(errors.trimEnd().split('\n')).toEqual([
      expect.stringContaining(`is not safe to use as root: the link ${link} belongs to user ${NOBODY}`),
    ]);
    expect(fs.readdirSync(path.join(base, 'real'))).toEqual([]);
  });

  it('in a directory another user may write to is refused, naming that directory', async () => {
    const open = path.join(base, 'open');
    fs.mkdirSync(open, { mode: 0o777 });
    fs.chmodSync(open, 0o777);
    fs.symlinkSync(path.join(base, 'real'), path.join(open, 'via'));
    const { code, errors } = await exitOf({ DATA_DIR: path.join(open, 'via', 'data') });
    expect(code).toBe(1);
    expect(errors).toContain(`is not safe to use as root: others may write to ${open}`);
  });

  it('owned by root, in a directory only root can change, is followed: the service serves from its target', async () => {
    const link = path.join(base, 'via');
    fs.symlinkSync(path.join(base, 'real'), link);
    const service = await spawnService({ DATA_DIR: path.join(link, 'data') });
    service.child.kill('SIGTERM');
    expect((await service.exited).code).toBe(0);
    expect(fs.existsSync(path.join(base, 'real', 'data', 'postgres', 'PG_VERSION'))).toBe(true);
  });
});

import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/postgres/embedded-postgres';
import { serverUser } from '../src/postgres/server-user';
import { client, issueToken, newBike } from './support/bikes';
import {
  ANSWERS,
  type Answers,
  FLOOD_BYTES,
  isAtMostTheStartupMessage,
  type Neighbour,
  neighbourListeningOn,
  NOBODY,
} from './support/neighbour';
import { freePort, launchService, type ServiceProcess, spawnService } from './support/process';
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

/** The pids of the server whose postmaster is `pid`: it, and the processes it started. */
function serverProcesses(pid: number): number[] {
  const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  return [pid, ...children];
}

/** SIGKILL to the postmaster; resolves once every process of its server is gone. */
async function kill(pid: number): Promise<void> {
  const processes = serverProcesses(pid);
  process.kill(pid, 'SIGKILL');
  // Its children leave once they see it gone; until then they hold the cluster's shared memory.
  await waitFor('the killed server’s processes to go', () => (processes.some(isAlive) ? undefined : true));
}

/**
 * A crash, as after an OOM kill or a power loss: PostgreSQL SIGKILLed, postmaster.pid left behind,
 * and the process that ran it gone as well: it lets go at once, before it could start the server
 * again (it was started by this process, which reaps it, so its pid is free again as after a reboot).
 */
async function crash(postgres: EmbeddedPostgres, dataDir: string): Promise<void> {
  const pid = Number(postmasterPid(dataDir)[0]);
  const killed = kill(pid);
  const lettingGo = postgres.stop();
  await killed;
  await waitFor('the crashed server to be reaped', () => (fs.existsSync(`/proc/${pid}`) ? undefined : true));
  await lettingGo;
}

/** The superuser's password of `dataDir`'s cluster: compared with what a neighbour heard, never printed. */
function superuserPassword(dataDir: string): Buffer {
  return fs.readFileSync(path.join(dataDir, 'postgres-password'));
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

/** It was asked (something connected to its port), and heard nothing a client says once it trusts a server. */
function expectNothingPastStartup(heard: Buffer[], dataDir: string): void {
  expect(heard.length).toBeGreaterThan(0);
  expect(heard.some((bytes) => bytes.includes(superuserPassword(dataDir)))).toBe(false);
  expect(heard.map(isAtMostTheStartupMessage)).toEqual(heard.map(() => true));
}

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM');
  expect((await service.exited).code).toBe(0);
}

/** A bike made through the service: it answers 200. */
async function expectACreate(baseUrl: string): Promise<void> {
  const res = await client(baseUrl, await issueToken(baseUrl)).request('POST', '/bikes', { body: newBike() });
  expect(res.status).toBe(200);
}

(asRoot ? describe : describe.skip)('as root, another local user listening on the embedded server’s port', () => {
  let dataDir: string;
  beforeAll(() => (dataDir = tempDataDir('stale-port')));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it.each(ANSWERS)(
    'after a crash, a neighbour on the port postmaster.pid names that answers %s hears nothing past the startup message, and the service starts its server on another port and serves',
    async (answers) => {
      await crash(await startEmbeddedPostgres({ dataDir }), dataDir);
      const stalePort = Number(postmasterPid(dataDir)[3]);
      const heard = await heardDuring(await neighbourListeningOn(stalePort, answers), async () => {
        const service = await spawnService({ DATA_DIR: dataDir });
        try {
          expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(200);
          await expectACreate(service.baseUrl);
          expect(Number(postmasterPid(dataDir)[3])).not.toBe(stalePort);
        } finally {
          await stop(service);
        }
      });
      expectNothingPastStartup(heard, dataDir);
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

/**
 * The embedded server killed under a running service, and its port taken by a neighbour before
 * the service could start it there again (docs/operations.md#when-postgresql-stops): the service
 * lives, answers 503 meanwhile, and starts its server again on another port.
 */
(asRoot ? describe : describe.skip)(
  'as root, another local user on the port of the embedded server killed under a running service',
  () => {
    let dataDir: string;
    let service: ServiceProcess;
    beforeAll(async () => {
      dataDir = tempDataDir('killed-under');
      service = await spawnService({ DATA_DIR: dataDir });
    });
    afterAll(async () => {
      await stop(service);
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    /**
     * The server killed, and its port taken by a neighbour that answers as `answers` says, while
     * the service is held: a neighbour faster than the service, whatever this machine's speed.
     */
    async function killAndTakePort(answers: Answers): Promise<{ neighbour: Neighbour; port: number }> {
      const [pid, port] = [0, 3].map((line) => Number(postmasterPid(dataDir)[line]));
      service.child.kill('SIGSTOP');
      try {
        await kill(pid);
        return { neighbour: await neighbourListeningOn(port, answers), port };
      } finally {
        service.child.kill('SIGCONT');
      }
    }

    /** Resolves once the service has logged that its server stopped, `before` being the times it had. */
    const lossHeard = (before: number) =>
      waitFor('the service to hear its server stopped', () =>
        timesLogged(service, STOPPED) > before ? true : undefined,
      );

    /** A request that needs the database: 404 once it is served, 503 while the database is unavailable. */
    const read = async () => (await fetch(`${service.baseUrl}/bikes/${randomUUID()}`)).status;

    it.each(ANSWERS)(
      'a neighbour that answers %s hears nothing past the startup message; the service answers 200 or 503, and serves again from another port',
      async (answers) => {
        const { neighbour, port } = await killAndTakePort(answers);
        const statuses = new Set<number>();
        const heard = await heardDuring(neighbour, async () => {
          await waitFor(
            'the service to serve again',
            async () => {
              const answered = await Promise.all(
                ['/readyz', '/bikes/all'].map(async (route) => (await fetch(`${service.baseUrl}${route}`)).status),
              );
              for (const status of answered) statuses.add(status);
              return answered.every((status) => status === 200) ? true : undefined;
            },
            { everyMs: 100 },
          );
        });
        expect(service.child.exitCode).toBeNull();
        expect([...statuses].filter((status) => status !== 200 && status !== 503)).toEqual([]);
        expect(Number(postmasterPid(dataDir)[3])).not.toBe(port);
        await expectACreate(service.baseUrl);
        expectNothingPastStartup(heard, dataDir);
      },
    );

    it('requests begun while a silent neighbour holds the port answer 503 once the server runs elsewhere, before the service serves from there, rather than wait for the neighbour', async () => {
      const [stopped, started] = [timesLogged(service, STOPPED), timesLogged(service, STARTED)];
      const { neighbour, port } = await killAndTakePort('silent');
      const heard = await heardDuring(neighbour, async () => {
        await lossHeard(stopped);
        // Begun while the server is away: their connections go to the port it left.
        const settled: number[] = [];
        for (const answer of [read(), read()]) void answer.then((status) => settled.push(status));
        // No request meanwhile: each would wait at the old port too, and the pool has ten connections.
        await waitFor('the server to start on another port', () =>
          timesLogged(service, STARTED) > started ? true : undefined,
        );
        // Asked every half second, each on its own: a request that waits at the old port holds no other up.
        let settledWhenServed: number[] | undefined;
        const asked: Promise<void>[] = [];
        await waitFor(
          'the service to serve from its new port',
          () => {
            const answer = read().then((status) => {
              if (status === 404) settledWhenServed ??= [...settled];
            });
            asked.push(answer);
            return settledWhenServed;
          },
          { everyMs: 500 },
        );
        await Promise.all(asked);
        expect(settledWhenServed).toEqual([503, 503]);
      });
      expect(Number(postmasterPid(dataDir)[3])).not.toBe(port);
      expectNothingPastStartup(heard, dataDir);
    });

    it('a neighbour that announces a 2 GB message and floods costs the service no memory: requests answer 503, its RSS grows by far less than the flood, and it serves again', async () => {
      const before = rssOf(service.child.pid as number);
      let most = before;
      const stopped = timesLogged(service, STOPPED);
      const { neighbour } = await killAndTakePort('flood');
      const statuses = new Set<number>();
      const heard = await heardDuring(neighbour, async () => {
        await lossHeard(stopped);
        const early = Promise.all([read(), read()]);
        await waitFor(
          'the service to serve again',
          async () => {
            most = Math.max(most, rssOf(service.child.pid as number));
            const status = await read();
            statuses.add(status);
            return status === 404 ? true : undefined;
          },
          { everyMs: 100 },
        );
        for (const status of await early) statuses.add(status);
      });
      expect([...statuses].filter((status) => status !== 404 && status !== 503)).toEqual([]);
      expect(statuses.has(503)).toBe(true);
      // Each connection to the neighbour would have buffered up to FLOOD_BYTES (400 MB).
      expect(most - before).toBeLessThan(FLOOD_BYTES / 2);
      expectNothingPastStartup(heard, dataDir);
    });
  },
);

/** What the service logs when its embedded server stops under it. */
const STOPPED = /the embedded PostgreSQL on port \d+ stopped; starting it again/g;
/** What it logs when it has started its server (again). */
const STARTED = /embedded PostgreSQL listening on 127\.0\.0\.1:\d+/g;

const timesLogged = (service: ServiceProcess, line: RegExp) => service.output().match(line)?.length ?? 0;

/** The resident memory of process `pid`, in bytes. */
function rssOf(pid: number): number {
  const kilobytes = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kilobytes) * 1024;
}

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

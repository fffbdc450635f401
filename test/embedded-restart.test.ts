import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { asServerUser, serverUser } from '../src/postgres/server-user';
import { binDir } from '../src/postgres/shared-dir';
import { client, issueToken, newBike } from './support/bikes';
import { type ServiceProcess, spawnService } from './support/process';
import { tempDataDir } from './support/temp-dir';
import { waitFor } from './support/wait';

/**
 * The embedded PostgreSQL is the service's own (docs/operations.md#when-postgresql-stops): stopped
 * or killed under a running service while writes run, it is started again, the service serves
 * again by itself, and no write it acknowledged is lost.
 */

/** The pid of the postmaster running on `dataDir`'s cluster, from its postmaster.pid; undefined while there is none. */
function postmasterOf(dataDir: string): number | undefined {
  try {
    return Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

/** pg_ctl on `dataDir`'s cluster, as the user the server runs as. */
function pgCtl(dataDir: string, ...args: string[]): void {
  const user = serverUser();
  const run = spawnSync(path.join(binDir(user), 'pg_ctl'), [...args, '-D', path.join(dataDir, 'postgres')], {
    ...asServerUser(user),
    stdio: 'pipe',
  });
  if (run.status !== 0) throw new Error(`pg_ctl ${args.join(' ')} failed: ${run.stderr}`);
}

interface Writes {
  /** The status of every create answered so far. */
  statuses: number[];
  /** The ids of the bikes whose create answered 200. */
  acknowledged: string[];
  /** Stops the writers; resolves once each has had its last answer. */
  stop(): Promise<void>;
}

/** Creates bikes, four at a time, one after another, until stopped. */
function writing(baseUrl: string, token: string): Writes {
  const api = client(baseUrl, token);
  const writes: Writes = { statuses: [], acknowledged: [], stop: async () => undefined };
  let stopping = false;
  const writer = async () => {
    while (!stopping) {
      const res = await api.request('POST', '/bikes', { body: newBike() });
      writes.statuses.push(res.status);
      if (res.status === 200) writes.acknowledged.push(((await res.json()) as { id: string }).id);
      else await res.arrayBuffer();
    }
  };
  const writers = Promise.all(Array.from({ length: 4 }, writer));
  writes.stop = async () => {
    stopping = true;
    await writers;
  };
  return writes;
}

describe('the embedded PostgreSQL, stopped or killed under a running service', () => {
  let dataDir: string;
  let service: ServiceProcess;
  let token: string;

  beforeAll(async () => {
    dataDir = tempDataDir('restart');
    service = await spawnService({ DATA_DIR: dataDir });
    token = await issueToken(service.baseUrl);
  });
  afterAll(async () => {
    service.child.kill('SIGTERM');
    expect((await service.exited).code).toBe(0);
    // The server it started again is stopped with it.
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it.each([
    ['killed (SIGKILL to its postmaster, as an OOM kill does)', (pid: number) => process.kill(pid, 'SIGKILL')],
    ['stopped cleanly (pg_ctl stop -m fast)', () => pgCtl(dataDir, 'stop', '-m', 'fast')],
  ])(
    'when it is %s while creates run, the service lives, answers each 200, 503 or 504, serves again by itself, and keeps every bike it acknowledged',
    async (_how, stopIt) => {
      const before = postmasterOf(dataDir)!;
      const writes = writing(service.baseUrl, token);
      try {
        await waitFor('creates to be acknowledged', () => (writes.acknowledged.length >= 5 ? true : undefined));
        stopIt(before);
        await waitFor(
          'a server of its own again, and /readyz to answer 200',
          async () => {
            const now = postmasterOf(dataDir);
            const ready = now !== undefined && now !== before && (await fetch(`${service.baseUrl}/readyz`)).status;
            return ready === 200 ? true : undefined;
          },
          { everyMs: 200 },
        );
        const acknowledged = writes.acknowledged.length;
        await waitFor('creates to be acknowledged again', () =>
          writes.acknowledged.length > acknowledged ? true : undefined,
        );
      } finally {
        await writes.stop();
      }

      expect(service.child.exitCode).toBeNull();
      expect(writes.statuses.filter((status) => ![200, 503, 504].includes(status))).toEqual([]);
      const api = client(service.baseUrl, token);
      const missing: string[] = [];
      for (const id of writes.acknowledged) {
        if ((await api.request('GET', `/bikes/${id}`)).status !== 200) missing.push(id);
      }
      expect(missing).toEqual([]);
      expect(service.output()).toMatch(/the embedded PostgreSQL on port \d+ stopped; starting it again/);
    },
  );
});

describe('the embedded PostgreSQL of two services on one DATA_DIR, killed under both', () => {
  it('is started again by one and adopted by the other; both serve, and it stops with the last one', async () => {
    const dataDir = tempDataDir('restart-two');
    try {
      const first = await spawnService({ DATA_DIR: dataDir });
      const second = await spawnService({ DATA_DIR: dataDir });
      try {
        process.kill(postmasterOf(dataDir)!, 'SIGKILL');
        // How each has its server again, as it says once the server is back (its pools may reach
        // it a moment before).
        const again = (output: string) =>
          output
            .split('stopped; starting it again')[1]
            ?.match(/embedded PostgreSQL listening on|adopting the PostgreSQL server already running/)?.[0];
        const how = await waitFor(
          'both to have their server again',
          () => {
            const both = [first, second].map((service) => again(service.output()));
            return both.every(Boolean) ? both : undefined;
          },
          { everyMs: 200 },
        );
        expect(how.sort()).toEqual([
          'adopting the PostgreSQL server already running',
          'embedded PostgreSQL listening on',
        ]);
        for (const service of [first, second]) {
          await waitFor(
            'both to serve again',
            async () => ((await fetch(`${service.baseUrl}/readyz`)).status === 200 ? true : undefined),
            { everyMs: 200 },
          );
        }
        const made = await client(first.baseUrl, await issueToken(first.baseUrl)).create(newBike());
        expect((await fetch(`${second.baseUrl}/bikes/${made.id}`)).status).toBe(200);
      } finally {
        for (const service of [second, first]) {
          service.child.kill('SIGTERM');
          expect((await service.exited).code).toBe(0);
        }
      }
      expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

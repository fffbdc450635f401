import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Bike } from '../../src/bikes/bike';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/postgres/embedded-postgres';
import { serverUser } from '../../src/postgres/server-user';
import { migrate } from '../../src/db/migrate';
import { client, newBike } from '../support/bikes';
import { freePort, spawnService } from '../support/process';
import { startTestService, type TestService } from '../support/service';
import { isAlive, postgresPidsFor, seedBikes } from './support/postgres';
import { waitFor } from '../support/wait';
import { tempDataDir } from '../support/temp-dir';

/**
 * PostgreSQL stopped and started again under a running service (docs/reference/requests-and-answers.md#no-5xx-from-input): requests that
 * need it answer 503 at once, the rest keep working, and the service serves again by itself,
 * without a restart, once PostgreSQL is back on the same port.
 */

describe('the service, while its PostgreSQL is stopped and started again', () => {
  let dataDir: string;
  let port: number;
  let pg: EmbeddedPostgres;
  let svc: TestService;

  const startPostgres = () => startEmbeddedPostgres({ dataDir, port, ephemeral: true });

  beforeAll(async () => {
    dataDir = tempDataDir('outage');
    port = await freePort();
    pg = await startPostgres();
    await migrate(pg.adminUrl);
    svc = await startTestService({ databaseUrl: pg.adminUrl });
  });
  afterAll(async () => {
    await svc?.stop();
    await pg?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 503 to every request that needs the database, and recovers by itself once PostgreSQL is back', async () => {
    const api = client(svc.baseUrl, await svc.token());
    const before = await api.create();
    // Warm the pool: its idle connections are the ones PostgreSQL's shutdown will cut.
    await Promise.all(Array.from({ length: 8 }, () => api.request('GET', `/bikes/${before.id}`)));

    await pg.stop();

    const { id, handle, ...fields } = before;
    const needsDatabase: Array<[string, string, unknown?]> = [
      ['GET', '/bikes/all'],
      ['GET', `/bikes/${id}`],
      ['GET', `/bikes/by-handle/${handle}`],
      ['GET', '/bikes/search/by-title?query=Hybrid'],
      ['POST', '/bikes/', newBike()],
      ['PUT', `/bikes/${id}`, { id, handle, ...fields, title: 'Replaced during the outage' }],
      ['PATCH', `/bikes/${id}`, { title: 'Patched during the outage' }],
      ['DELETE', `/bikes/${id}`],
    ];
    const latencies: number[] = [];
    // Several rounds, some in parallel: the pool must not pile up waiting connections.
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        needsDatabase.map(async ([method, path, body]) => {
          const started = performance.now();
          const res = await api.request(method, path, { body });
          await res.arrayBuffer();
          const ms = performance.now() - started;
          latencies.push(ms);
          return {
            call: `${method} ${path}`,
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
          };
        }),
      );
      for (const result of results) expect(result).toEqual({ call: result.call, status: 503, retryAfter: '1' });
    }
    console.log(
      `outage: ${latencies.length} requests answered 503, slowest ${Math.max(...latencies).toFixed(0)} ms, median ${latencies.sort((a, b) => a - b)[latencies.length >> 1].toFixed(0)} ms`,
    );

    // What needs no database still works; readiness says why it is not ready.
    expect((await api.request('POST', '/api/user', { body: { username: 'during-outage' } })).status).toBe(200);
    expect((await api.request('GET', '/healthz')).status).toBe(200);
    expect((await api.request('GET', '/readyz')).status).toBe(503);

    pg = await startPostgres();
    const backAt = performance.now();
    await waitFor('the service to serve reads again', async () =>
      (await api.request('GET', `/bikes/${id}`)).status === 200 ? true : undefined,
    );
    const recoveryMs = performance.now() - backAt;
    console.log(`outage: the service served again ${recoveryMs.toFixed(0)} ms after PostgreSQL accepted connections`);

    // Everything works again, and nothing the outage refused was written.
    const res = await api.request('GET', `/bikes/${id}`);
    expect(await res.json()).toEqual(before);
    const after = await api.create();
    expect((await api.request('GET', '/readyz')).status).toBe(200);
    const all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    expect(all).toEqual([before, after]);
  });

  it('when PostgreSQL stops while /bikes/all is streaming, the client gets a broken response, never a short array that parses', async () => {
    await seedBikes(pg.adminUrl, 20_000, 'Outage Stream Bike');
    const res = await fetch(`${svc.baseUrl}/bikes/all`);
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    // One small read, then PostgreSQL goes away while most of the catalog is still unsent.
    const first = await reader.read();
    expect(first.done).toBe(false);
    await pg.stop();
    let text = Buffer.from(first.value!).toString('utf8');
    let broken = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
      }
    } catch {
      broken = true;
    }
    // The client held back, so the server could not have sent every batch before the stop.
    expect(broken).toBe(true);
    expect(() => JSON.parse(text)).toThrow();
    expect(text.length).toBeLessThan(20_000 * 200);
    pg = await startPostgres();
    await waitFor('reads to work again', async () =>
      (await fetch(`${svc.baseUrl}/bikes/search/by-title?query=Outage`)).status === 200 ? true : undefined,
    );
  });
});

describe('the service on its embedded PostgreSQL, when an operator restarts that server by hand', () => {
  let dataDir: string;
  afterAll(() => {
    for (const pid of postgresPidsFor(dataDir)) if (isAlive(pid)) process.kill(pid, 'SIGQUIT');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves again from the server the operator started by hand (`pg_ctl stop`, then `pg_ctl start`), adopting it, and stops it at shutdown', async () => {
    dataDir = tempDataDir('pg-ctl');
    const service = await spawnService({ DATA_DIR: dataDir });
    try {
      const clusterDir = path.join(dataDir, 'postgres');
      const postmasterPid = () =>
        Number(fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const first = postmasterPid();
      // The pg_ctl beside the running server's binary (as root from a private clone, a copy the postgres user can reach).
      const pgCtl = path.join(path.dirname(fs.readlinkSync(`/proc/${first}/exe`)), 'pg_ctl');
      const pgCtlRun = (...args: string[]) =>
        execFileSync(pgCtl, [...args, '-D', clusterDir], { ...serverUser(), stdio: 'ignore', env: { LC_ALL: 'C' } });

      // No port given: the server finds it in the cluster's own configuration. Its log goes into
      // the cluster, as DATA_DIR is root's alone. The service, which would start the server again
      // itself a second after it stopped (docs/operations.md#when-postgresql-stops), is held
      // meanwhile: an operator quicker than it, whatever this machine's speed.
      const handLog = path.join(clusterDir, 'started-by-hand.log');
      service.child.kill('SIGSTOP');
      try {
        pgCtlRun('stop', '-m', 'fast', '-w');
        pgCtlRun('start', '-w', '-l', handLog);
      } finally {
        service.child.kill('SIGCONT');
      }
      const second = postmasterPid();
      expect(second).not.toBe(first);
      await waitFor('the service to adopt it', () =>
        /adopting the PostgreSQL server already running/.test(service.output()) ? true : undefined,
      );
      expect((await fetch(`${service.baseUrl}/bikes/all`)).status).toBe(200);

      service.child.kill('SIGTERM');
      expect(await service.exited).toEqual({ code: 0, signal: null });
      expect(isAlive(second)).toBe(false);
      expect(postgresPidsFor(dataDir)).toEqual([]);
      expect(fs.readFileSync(handLog, 'utf8')).toMatch(/database system is shut down\s*$/);
    } finally {
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
    }
  });
});

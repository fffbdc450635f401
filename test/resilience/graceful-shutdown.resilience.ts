import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { Bike } from '../../src/bikes/bike';
import { freePort, type ServiceProcess, spawnService } from '../support/process';
import { countBikes, isAlive, postgresLog, postgresPidsFor, seedBikes } from './support/postgres';
import { waitFor } from '../support/wait';
import { tempDataDir } from '../support/temp-dir';

/**
 * SIGTERM while a large /bikes/all is streaming (docs/decisions.md: stop accepting connections,
 * finish requests in flight, close the pool, stop an embedded PostgreSQL cleanly, exit 0),
 * against the built service on its embedded PostgreSQL.
 */

/** Far more than the socket buffers hold, so a reader that pauses holds the response in flight. */
const BIKES = 30_000;

/** The embedded server's connection string, from the files the service keeps in DATA_DIR. */
function embeddedUrl(dataDir: string): string {
  const password = fs.readFileSync(path.join(dataDir, 'postgres-password'), 'utf8').trim();
  const port = fs
    .readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')
    .split('\n')[3]
    .trim();
  return `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/bikes`;
}

function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

describe('the service process, sent SIGTERM while /bikes/all streams', () => {
  let dataDir: string;
  let service: ServiceProcess | undefined;

  beforeAll(() => {
    dataDir = tempDataDir('shutdown');
  });
  afterAll(async () => {
    if (service && service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
    for (const pid of postgresPidsFor(dataDir)) if (isAlive(pid)) process.kill(pid, 'SIGQUIT');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('finishes the response whole, refuses new connections, stops its PostgreSQL cleanly and exits 0', async () => {
    service = await spawnService({ DATA_DIR: dataDir });
    const port = Number(new URL(service.baseUrl).port);
    await seedBikes(embeddedUrl(dataDir), BIKES, 'Shutdown Bike');
    const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);

    let sigtermAt = 0;
    let refusedWhileStreaming = false;
    const body = await new Promise<{ text: string; headers: http.IncomingHttpHeaders; finishedAt: number }>(
      (resolve, reject) => {
        http
          .get(`${service!.baseUrl}/bikes/all`, (res) => {
            expect(res.statusCode).toBe(200);
            const chunks: Buffer[] = [];
            let received = 0;
            res.on('data', (chunk: Buffer) => {
              chunks.push(chunk);
              received += chunk.length;
              if (sigtermAt === 0 && received > 512 * 1024) {
                // The response is held in flight (the reader pauses) until the listener is seen
                // closed, then read to its end: no race between the two, however busy the machine.
                res.pause();
                sigtermAt = performance.now();
                service!.child.kill('SIGTERM');
                void waitFor(
                  'the listening socket to close',
                  async () => ((await connectionRefused(port)) ? true : undefined),
                  { everyMs: 20 },
                ).then(() => {
                  refusedWhileStreaming = !res.complete;
                  res.resume();
                }, reject);
              }
            });
            res.on('end', () =>
              resolve({
                text: Buffer.concat(chunks).toString('utf8'),
                headers: res.headers,
                finishedAt: performance.now(),
              }),
            );
            res.on('error', reject);
          })
          .on('error', reject);
      },
    );

    // The response in flight completed whole, though SIGTERM came early in it.
    const bikes = JSON.parse(body.text) as Bike[];
    expect(bikes).toHaveLength(BIKES);
    expect(bikes[BIKES - 1].title).toBe(`Shutdown Bike ${BIKES}`);
    // New connections were refused while it was still streaming.
    expect(refusedWhileStreaming).toBe(true);
    expect(await connectionRefused(port)).toBe(true);

    const exit = await service.exited;
    const exitedAfterMs = performance.now() - sigtermAt;
    expect(exit).toEqual({ code: 0, signal: null });

    // The embedded PostgreSQL was stopped cleanly: no process left, the log says so.
    expect(isAlive(postmaster)).toBe(false);
    expect(postgresPidsFor(dataDir)).toEqual([]);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    expect(postgresLog(dataDir)).toMatch(/received fast shutdown request[\s\S]*database system is shut down\s*$/);
    expect(service.output()).toMatch(/"msg":"stopped"/);
    console.log(
      `shutdown: ${(body.text.length / 1e6).toFixed(1)} MB response finished ${(body.finishedAt - sigtermAt).toFixed(0)} ms after SIGTERM; ` +
        `process exited 0 ${exitedAfterMs.toFixed(0)} ms after SIGTERM`,
    );
  });

  it('when a client stops reading, cuts its response after the grace period (not before) and still exits 0', async () => {
    service = await spawnService({ DATA_DIR: dataDir });
    // Far more than the socket buffers hold (the previous test may have seeded them already).
    if ((await countBikes(embeddedUrl(dataDir))) < BIKES) await seedBikes(embeddedUrl(dataDir), BIKES, 'Stalled Bike');
    const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    let sigtermAt = 0;
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http
        .get(`${service!.baseUrl}/bikes/all`, (res) => {
          res.once('data', () => {
            // Never read again: the server's socket buffer fills and the response stalls.
            res.pause();
            sigtermAt = performance.now();
            service!.child.kill('SIGTERM');
            resolve(res);
          });
        })
        .on('error', reject);
    });
    const exit = await service.exited;
    const exitedAfterMs = performance.now() - sigtermAt;
    // The server cut the connection: reading on, the client finds the response incomplete.
    const ended = new Promise<boolean>((resolve) => {
      response.on('error', () => undefined);
      response.once('close', () => resolve(response.complete));
    });
    response.resume();
    expect(await ended).toBe(false);
    expect(exit).toEqual({ code: 0, signal: null });
    // Not before the grace (SHUTDOWN_GRACE_MS, 8 s, in src/server.ts); how long after depends on the machine.
    expect(exitedAfterMs).toBeGreaterThan(7_000);
    expect(isAlive(postmaster)).toBe(false);
    expect(postgresPidsFor(dataDir)).toEqual([]);
    console.log(
      `shutdown: a stalled reader was cut and the process exited 0 ${exitedAfterMs.toFixed(0)} ms after SIGTERM`,
    );
  });
});

/** The process tree `npm start` makes: npm, then the service it runs (the start script execs node). */
function childrenOf(pid: number): number[] {
  return execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
    .filter(([, ppid]) => ppid === pid)
    .map(([child]) => child);
}

describe('the service run by `npm start`, when npm itself is killed', () => {
  const dataDirs: string[] = [];
  afterAll(() => {
    for (const dir of dataDirs) {
      for (const pid of postgresPidsFor(dir)) if (isAlive(pid)) process.kill(pid, 'SIGQUIT');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`when npm gets ${signal}, the service stops by itself and leaves no PostgreSQL behind`, async () => {
      const dataDir = tempDataDir('npm');
      dataDirs.push(dataDir);
      const port = await freePort();
      const { DATABASE_URL: _url, JWT_SECRET: _secret, ...env } = process.env;
      // --ignore-scripts skips the prestart build (npm test:resilience has built dist/ already).
      const npm = spawn('npm', ['start', '--ignore-scripts'], {
        cwd: path.join(__dirname, '..', '..'),
        env: { ...env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      });
      const npmExited = new Promise((resolve) => npm.once('exit', resolve));
      try {
        await waitFor(
          'npm start to serve',
          async () =>
            (await fetch(`http://127.0.0.1:${port}/healthz`).then(
              (r) => r.ok,
              () => false,
            )) || undefined,
          { everyMs: 200 },
        );
        const [servicePid] = childrenOf(npm.pid!);
        expect(servicePid).toBeGreaterThan(0);
        const postmaster = Number(
          fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
        );

        const killedAt = performance.now();
        npm.kill(signal);
        await npmExited;
        await waitFor('the service to exit', () => (isAlive(servicePid) ? undefined : true));
        await waitFor('its PostgreSQL to exit', () => (isAlive(postmaster) ? undefined : true));
        const goneAfterMs = performance.now() - killedAt;
        expect(postgresPidsFor(dataDir)).toEqual([]);
        expect(postgresLog(dataDir)).toMatch(/database system is shut down\s*$/);
        expect(await connectionRefused(port)).toBe(true);
        console.log(`npm start, npm sent ${signal}: service and PostgreSQL gone ${goneAfterMs.toFixed(0)} ms later`);
      } finally {
        if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
      }
    });
  }
});

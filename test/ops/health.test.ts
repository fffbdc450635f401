import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Client } from 'pg';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/postgres/embedded-postgres';
import { freePort, spawnService, type ServiceProcess } from '../support/process';
import { capturedLog } from '../support/log';
import { startTestService, type TestService } from '../support/service';
import { tempDataDir } from '../support/temp-dir';
import { waitFor } from '../support/wait';

async function get(url: string): Promise<{ status: number; type: string | null; body: string }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

describe('GET /healthz and GET /readyz, over a database of their own', () => {
  let svc: TestService;
  const { lines, logger } = capturedLog();
  beforeAll(async () => {
    svc = await startTestService({ logger });
  });
  afterAll(() => svc.stop());

  it('GET /healthz: while the process is up, it answers 200 "OK" in plain text, not cached', async () => {
    const res = await fetch(`${svc.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.text()).toBe('OK');
  });

  it('GET /readyz: when PostgreSQL answers and every migration is applied, it answers 200 "OK"', async () => {
    expect(await get(`${svc.baseUrl}/readyz`)).toMatchObject({
      status: 200,
      type: expect.stringMatching(/^text\/plain/),
      body: 'OK',
    });
  });

  it('GET /readyz: when a committed migration is not recorded as applied, it answers 503, and 200 once it is', async () => {
    const [latest] = await withClient(svc.databaseUrl, async (client) => {
      const { rows } = await client.query('SELECT * FROM "_prisma_migrations" ORDER BY migration_name DESC LIMIT 1');
      await client.query('DELETE FROM "_prisma_migrations" WHERE id = $1', [rows[0].id]);
      return rows;
    });
    try {
      expect(await get(`${svc.baseUrl}/readyz`)).toMatchObject({
        status: 503,
        type: expect.stringMatching(/^text\/plain/),
        body: 'Service Unavailable: 1 migration(s) not applied',
      });
    } finally {
      await withClient(svc.databaseUrl, (client) =>
        client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
           VALUES ($1, $2, $3, $4, $5, $6)`,
          [
            latest.id,
            latest.checksum,
            latest.finished_at,
            latest.migration_name,
            latest.started_at,
            latest.applied_steps_count,
          ],
        ),
      );
    }
    expect(await get(`${svc.baseUrl}/readyz`)).toMatchObject({ status: 200, body: 'OK' });
  });

  it('a database failing every request the same way while it answers the watch: each a 503, one warning for them all', async () => {
    // The table gone (an operator's mistake, a restore under way): PostgreSQL answers the watch's
    // question, so nothing judges it down, and each read fails with the same words
    // (docs/reference/requests-and-answers.md#a-database-that-is-busy-down-or-hung).
    await withClient(svc.databaseUrl, (client) => client.query('ALTER TABLE bikes RENAME TO bikes_away'));
    const before = lines.length;
    const started = Date.now();
    try {
      const statuses = [];
      for (let i = 0; i < 20; i++) statuses.push((await fetch(`${svc.baseUrl}/bikes?limit=1`)).status);
      expect(statuses).toEqual(Array(20).fill(503));
    } finally {
      await withClient(svc.databaseUrl, (client) => client.query('ALTER TABLE bikes_away RENAME TO bikes'));
    }
    // One line for the same words in each 10 s (however slow this machine took them), not one a request.
    const windows = Math.ceil((Date.now() - started) / 10_000);
    const warned = lines.slice(before).filter((line) => line.msg === 'database unavailable');
    expect(warned.length).toBeGreaterThanOrEqual(1);
    expect(warned.length).toBeLessThanOrEqual(windows);
    for (const line of warned) expect(line).toMatchObject({ err: expect.stringMatching(/bikes/) });
    expect((await fetch(`${svc.baseUrl}/bikes?limit=1`)).status).toBe(200);
  });

  it('GET /readyz: when the database has no migration record at all, it answers 503', async () => {
    await withClient(svc.databaseUrl, (client) =>
      client.query('ALTER TABLE "_prisma_migrations" RENAME TO "_prisma_migrations_away"'),
    );
    try {
      expect(await get(`${svc.baseUrl}/readyz`)).toMatchObject({
        status: 503,
        body: 'Service Unavailable: migrations not applied',
      });
    } finally {
      await withClient(svc.databaseUrl, (client) =>
        client.query('ALTER TABLE "_prisma_migrations_away" RENAME TO "_prisma_migrations"'),
      );
    }
    expect(await get(`${svc.baseUrl}/readyz`)).toMatchObject({ status: 200, body: 'OK' });
  });
});

describe('GET /readyz while PostgreSQL stops and starts again under the running service', () => {
  let dataDir: string;
  let postgres: EmbeddedPostgres | undefined;
  let port: number;
  let service: ServiceProcess;

  beforeAll(async () => {
    // A PostgreSQL of this file's own, on a fixed port, so it can be stopped and started again.
    dataDir = tempDataDir('readyz');
    port = await freePort();
    postgres = await startEmbeddedPostgres({ dataDir, port, ephemeral: true });
    service = await spawnService({
      DATABASE_URL: postgres.adminUrl,
      JWT_SECRET: randomBytes(32).toString('base64url'),
      // Health checks are logged at debug (docs/operations.md): this test reads them.
      LOG_LEVEL: 'debug',
    });
  });

  afterAll(async () => {
    service?.child.kill('SIGTERM');
    await service?.exited;
    await postgres?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 200 while up, 503 once it stops while /healthz stays 200, 200 again after the restart, and logs none of it as an error', async () => {
    expect(await get(`${service.baseUrl}/readyz`)).toMatchObject({ status: 200, body: 'OK' });

    await postgres?.stop();
    postgres = undefined;
    const down = await get(`${service.baseUrl}/readyz`);
    expect(down).toMatchObject({
      status: 503,
      type: expect.stringMatching(/^text\/plain/),
      body: 'Service Unavailable: database not answering',
    });
    expect(await get(`${service.baseUrl}/healthz`)).toMatchObject({ status: 200, body: 'OK' });

    postgres = await startEmbeddedPostgres({ dataDir, port, ephemeral: true });
    const back = await waitFor(
      '/readyz to answer 200 again',
      async () => {
        const res = await get(`${service.baseUrl}/readyz`);
        return res.status === 200 ? res : undefined;
      },
      { everyMs: 200 },
    );
    expect(back).toMatchObject({ status: 200, body: 'OK' });
    // Ready means served: the first 200 comes once requests no longer fail at once.
    expect((await get(`${service.baseUrl}/bikes`)).status).toBe(200);

    const lines = service
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; path?: string; status?: number; msg: string });
    const probes = lines.filter((line) => line.path === '/readyz' || line.path === '/healthz');
    expect(probes.map((line) => line.status)).toEqual(expect.arrayContaining([200, 503]));
    // Request lines only, at debug level: a 503 from /readyz is an answer, not an error or a warning.
    expect(probes.every((line) => line.level === 20 && line.msg === 'request')).toBe(true);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
  });
});

import { Client } from 'pg';
import { countBikes } from './resilience/support/postgres';
import { client, newBike } from './support/bikes';
import { startTestService, type TestService } from './support/service';
import { waitFor } from './support/wait';

/**
 * A 503 means nothing was written (docs/decisions.md#a-5xx-says-what-was-written): PostgreSQL
 * itself cuts off a statement that waits for a lock or runs too long, and rolls it back, before the
 * service answers 503; and a service kept busy meanwhile waits, it does not fail
 * (docs/decisions.md#busy-is-not-down).
 */
describe('a write while another session holds a lock on the catalog', () => {
  let svc: TestService;
  let holder: Client;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.stop());
  beforeEach(async () => {
    holder = new Client({ connectionString: svc.databaseUrl });
    await holder.connect();
    // As an operator's psql session would be: no statement timeout of the service's role.
    await holder.query('SET statement_timeout = 0');
    await holder.query('BEGIN');
  });
  afterEach(() => holder.end());

  it('when it holds an open transaction that updated no row, a create goes through: writers share no row', async () => {
    await holder.query('UPDATE bikes SET title = title WHERE false');
    const api = client(svc.baseUrl, await svc.token());
    const started = Date.now();
    const res = await api.request('POST', '/bikes/', { body: newBike() });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(4_000);
    await holder.query('COMMIT');
  });

  it('when it holds the table for 2.5 s, 30 creates at once queue for the pool and the lock, and all answer 200: busy is not down', async () => {
    await holder.query('LOCK TABLE bikes IN EXCLUSIVE MODE');
    const api = client(svc.baseUrl, await svc.token());
    const release = setTimeout(() => void holder.query('COMMIT'), 2_500);
    try {
      const statuses = await Promise.all(
        Array.from({ length: 30 }, async () => (await api.request('POST', '/bikes/', { body: newBike() })).status),
      );
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
    } finally {
      clearTimeout(release);
    }
  }, 30_000);

  it('when it holds the table itself, the create answers 503 with Retry-After, and the bike never appears', async () => {
    await holder.query('LOCK TABLE bikes IN EXCLUSIVE MODE');
    const before = await countBikes(svc.databaseUrl);
    const bike = newBike();
    const api = client(svc.baseUrl, await svc.token());
    const res = await api.request('POST', '/bikes/', { body: bike });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');

    // The lock goes away: had the insert been left waiting on the server, it would commit now.
    await holder.query('COMMIT');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await countBikes(svc.databaseUrl)).toBe(before);
    const search = await fetch(`${svc.baseUrl}/bikes/search/by-title?query=${encodeURIComponent(bike.title)}`);
    expect(await search.json()).toEqual([]);
  }, 30_000);
});

describe("the service's connections ended by the server", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc.stop());

  it('(as an administrator does, or a database dropped and made anew) are replaced: the server is up, and no request is answered 503', async () => {
    const api = client(svc.baseUrl, await svc.token());
    const bike = await api.create(newBike());
    const admin = new Client({ connectionString: svc.databaseUrl });
    await admin.connect();
    try {
      // The watch on the server has asked its SELECT 1 on its own connection.
      await waitFor(
        'the watch on the server',
        async () => {
          const { rows } = await admin.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT 1'`,
          );
          return rows.length > 0 || undefined;
        },
        5_000,
      );
      // Every connection of the service, the watch's included, each waited for to end.
      const { rows } = await admin.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid, 5000) AS ended FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((row) => row.ended)).toBe(true);
    } finally {
      await admin.end();
    }
    // Let the service hear of it, then read for longer than the watch takes to ask again.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const statuses: number[] = [];
    for (const until = Date.now() + 1_000; Date.now() < until;) {
      statuses.push((await api.request('GET', `/bikes/${bike.id}`)).status);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });
});

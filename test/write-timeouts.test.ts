import { Client } from 'pg';
import type { Bike } from '../src/bikes/bike';
import { countBikes } from './resilience/support/postgres';
import { client, newBike } from './support/bikes';
import { startTestService, type TestService } from './support/service';
import { readMetrics, valueOf } from './support/metrics';
import { waitFor } from './support/wait';

/**
 * A 503 means nothing was written (docs/reference/requests-and-answers.md#a-5xx-says-what-was-written): PostgreSQL
 * itself cuts off a statement that waits for a lock or runs too long, and rolls it back, before the
 * service answers 503; and a service kept busy meanwhile waits, it does not fail
 * (docs/reference/requests-and-answers.md#busy-is-not-down).
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
    // Had it waited for the holder, it would have waited until lock_timeout (5 s) and answered 503:
    // the holder commits only after the answer.
    const res = await api.request('POST', '/bikes/', { body: newBike() });
    expect(res.status).toBe(200);
    await holder.query('COMMIT');
  });

  it('when it holds the table until 30 creates at once queue for the pool and the lock, all answer 200 once it lets go: busy is not down', async () => {
    await holder.query('LOCK TABLE bikes IN EXCLUSIVE MODE');
    const api = client(svc.baseUrl, await svc.token());
    const sent = Promise.all(
      Array.from({ length: 30 }, async () => (await api.request('POST', '/bikes/', { body: newBike() })).status),
    );
    // Every connection of the pool waits for the lock, and requests wait for a connection.
    await waitFor('creates to queue for the pool', async () =>
      valueOf(await readMetrics(svc.baseUrl), 'db_pool_clients', { pool: 'primary', state: 'waiting' }) > 0
        ? true
        : undefined,
    );
    await holder.query('COMMIT');
    const statuses = await sent;
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });

  it("when its transaction and a PATCH deadlock and PostgreSQL rolls the PATCH back (40P01), the PATCH runs again and answers 200 once the holder commits: the deadlock was the holder's, not the client's", async () => {
    const api = client(svc.baseUrl, await svc.token());
    const bike = await api.create(newBike({ totalInventory: 1 }));
    // The PATCH's session is the one that finds the deadlock (1 s after it began to wait) as long as
    // the holder's own check comes later; should the holder's come first all the same (a machine
    // that stalled the holder over a second), the holder is rolled back instead and the round is
    // tried again: only a round whose PATCH was rolled back shows the run again.
    for (let round = 1; ; round++) {
      await holder.query(`SET LOCAL deadlock_timeout = '10s'`);
      // Every catalog version slot, which a write's trigger takes after its row...
      await holder.query('SELECT slot FROM catalog_version_slots FOR UPDATE');
      const patched = api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: 7 } });
      await waitFor('the PATCH to wait for a slot', async () => {
        const { rows } = await holder.query(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        );
        return rows.length > 0 ? true : undefined;
      });
      // ...then the row the PATCH holds: each waits for the other.
      const holderRolledBack = await holder
        .query('UPDATE bikes SET total_inventory = total_inventory + 1 WHERE id = $1', [bike.id])
        .then(
          () => false,
          (err: { code?: string }) => {
            if (err.code !== '40P01') throw err;
            return true;
          },
        );
      await holder.query(holderRolledBack ? 'ROLLBACK' : 'COMMIT');
      const res = await patched;
      expect(res.status).toBe(200);
      if (!holderRolledBack || round === 5) {
        expect({ holderRolledBack, totalInventory: ((await res.json()) as Bike).totalInventory }).toEqual({
          holderRolledBack: false,
          totalInventory: 7,
        });
        break;
      }
      await holder.query('BEGIN');
    }
  });

  it('when it holds the table itself, the create answers 503 with Retry-After, and the bike never appears', async () => {
    await holder.query('LOCK TABLE bikes IN EXCLUSIVE MODE');
    const before = await countBikes(svc.databaseUrl);
    const bike = newBike();
    const api = client(svc.baseUrl, await svc.token());
    const res = await api.request('POST', '/bikes/', { body: bike });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');

    // PostgreSQL cut the insert off (lock_timeout) before the service answered: no session waits
    // for the lock any more, so none can commit once it goes.
    const { rows: waiting } = await holder.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    expect(waiting).toEqual([]);
    await holder.query('COMMIT');
    expect(await countBikes(svc.databaseUrl)).toBe(before);
    const search = await fetch(`${svc.baseUrl}/bikes/search/by-title?query=${encodeURIComponent(bike.title)}`);
    expect(await search.json()).toEqual([]);
  });
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
    const watchAsked = async (besides: number[]) => {
      const { rows } = await admin.query(
        `SELECT 1 FROM pg_stat_activity
          WHERE datname = current_database() AND query = 'SELECT 1' AND pid <> ALL($1::int[])`,
        [besides],
      );
      return rows.length > 0 || undefined;
    };
    const statuses: number[] = [];
    try {
      // The watch on the server has asked its SELECT 1 on its own connection.
      await waitFor('the watch on the server', () => watchAsked([]));
      // Every connection of the service, the watch's included, each waited for to end.
      const { rows } = await admin.query<{ pid: number; ended: boolean }>(
        `SELECT pid, pg_terminate_backend(pid, 60000) AS ended FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((row) => row.ended)).toBe(true);
      // Reads, until the watch has asked again on a connection of its own made since.
      const ended = rows.map((row) => row.pid);
      await waitFor(
        'the watch to ask again',
        async () => {
          statuses.push((await api.request('GET', `/bikes/${bike.id}`)).status);
          return watchAsked(ended);
        },
        { everyMs: 20 },
      );
    } finally {
      await admin.end();
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });
});

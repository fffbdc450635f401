import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { readMigrations } from '../../src/db/migrate';
import type { Bike } from '../../src/bikes/bike';
import { client, issueToken, newBike } from '../support/bikes';
import { createEmptyTestDatabase } from '../support/databases';
import { openEventStream } from '../support/event-stream';
import { spawnService, type ServiceProcess } from '../support/process';
import { type Bouncer, missing, PGBOUNCER, startPgBouncer } from '../support/servers';
import { countStatements, type StatementCounter } from '../support/statement-counter';
import { waitFor } from '../support/wait';

const why = missing(PGBOUNCER);
if (why) console.log(`pgbouncer.test.ts skipped: ${why}`);

/**
 * DATABASE_URL pointing at a real PgBouncer (Debian's 1.18) in transaction pooling mode, where a
 * connection is the client's only for one transaction: no session state, no named prepared
 * statements (the service, told nothing, finds that it talks to a pooler and prepares none:
 * docs/reference/database.md#prepared-statements). Migrations lock inside each of their transactions, so
 * they may run through it too. What the service sends PgBouncer is read on the way (a proxy).
 */
(why ? describe.skip : describe)('the service through PgBouncer in transaction pooling mode', () => {
  let direct: string;
  let bouncer: Bouncer;
  let sent: StatementCounter;
  let svc: ServiceProcess;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    // A database nothing has migrated yet, migrated here through the direct URL (for a role with
    // more rights, as in deploy/bike-catalog-scaled/docker-compose.yml).
    direct = await createEmptyTestDatabase();
    bouncer = await startPgBouncer(direct);
    sent = await countStatements(bouncer.url);
    svc = await spawnService({
      DATABASE_URL: sent.url,
      DATABASE_DIRECT_URL: direct,
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    api = client(svc.baseUrl, await issueToken(svc.baseUrl));
  });
  afterAll(async () => {
    svc?.child.kill('SIGTERM');
    await svc?.exited;
    await sent?.close();
    await bouncer?.remove();
  });

  it('migrated the database through the direct URL, and is ready', async () => {
    expect((await fetch(`${svc.baseUrl}/readyz`)).status).toBe(200);
  });

  it('serves every route: create, get by id and by handle, search, replace, patch, delete', async () => {
    const created = await api.create(newBike());
    const read = async (path: string) => (await api.request('GET', path)).json();
    expect(await read(`/bikes/${created.id}`)).toEqual(created);
    expect(await read(`/bikes/by-handle/${created.handle}`)).toEqual(created);
    expect(await read(`/bikes/search/by-title?query=${encodeURIComponent(created.title)}`)).toEqual([created]);
    const replaced = { ...created, ...newBike({ vendor: 'Replaced' }), id: created.id, handle: 'replaced' };
    expect(await (await api.request('PUT', `/bikes/${created.id}`, { body: replaced })).json()).toEqual(replaced);
    const patched = await (await api.request('PATCH', `/bikes/${created.id}`, { body: { totalInventory: 1 } })).json();
    expect(patched).toEqual({ ...replaced, totalInventory: 1 });
    expect((await api.request('DELETE', `/bikes/${created.id}`)).status).toBe(200);
    expect((await api.request('GET', `/bikes/${created.id}`)).status).toBe(404);
  });

  it("records each write's caller in the change log, for its own transaction only (docs/reference/callers.md#who-changed-what)", async () => {
    const created = await api.create(newBike());
    const { id: _id, handle: _handle, ...fields } = created;
    expect((await api.request('PATCH', `/bikes/${created.id}`, { body: { totalInventory: 2 } })).status).toBe(200);
    // SQL through the same pooler, on whichever server connection it lends: the database role.
    const bySql = new Client({ connectionString: bouncer.url });
    await bySql.connect();
    try {
      for (let i = 0; i < 5; i++) {
        await bySql.query('UPDATE bikes SET total_inventory = total_inventory + 1 WHERE id = $1', [created.id]);
        expect(
          (await api.request('PUT', `/bikes/${created.id}`, { body: { ...fields, id: created.id, handle: 'h' } }))
            .status,
        ).toBe(200);
      }
    } finally {
      await bySql.end();
    }
    expect((await api.request('DELETE', `/bikes/${created.id}`)).status).toBe(200);
    const db = new Client({ connectionString: direct });
    await db.connect();
    try {
      const role = (await db.query<{ role: string }>('SELECT session_user AS role')).rows[0].role;
      const { rows } = await db.query(
        'SELECT kind, changed_by, changed_by_proven FROM bike_changes WHERE bike_id = $1 ORDER BY txid, change_id',
        [created.id],
      );
      const tester = { changed_by: 'tester', changed_by_proven: false };
      const sql = { kind: 'update', changed_by: `sql:${role}`, changed_by_proven: true };
      expect(rows).toEqual([
        { kind: 'create', ...tester },
        { kind: 'update', ...tester },
        ...Array.from({ length: 5 }, () => [sql, { kind: 'update', ...tester }]).flat(),
        { kind: 'delete', ...tester },
      ]);
    } finally {
      await db.end();
    }
  });

  it('streams a list of many batches, oldest first, and answers 304 while it is unchanged', async () => {
    const db = new Client({ connectionString: direct });
    await db.connect();
    await db.query(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       SELECT gen_random_uuid(), 'pooled-' || n, 'Pooled ' || n, 'Road', 'now', 'd', 'v', true, n, 1, 'USD', 2, 'USD'
       FROM generate_series(1, 700) AS n`,
    );
    await db.end();
    const res = await api.request('GET', '/bikes/all');
    const bikes = (await res.json()) as Bike[];
    const pooled = bikes.filter((bike) => bike.title.startsWith('Pooled '));
    expect(pooled.map((bike) => bike.totalInventory)).toEqual(Array.from({ length: 700 }, (_, i) => i + 1));
    const etag = res.headers.get('etag') as string;
    const again = await api.request('GET', '/bikes/all', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    await api.create(newBike());
    expect((await api.request('GET', '/bikes/all', { headers: { 'if-none-match': etag } })).status).toBe(200);
  });

  it('keeps its guarantees under concurrency: 100 parallel creates all stored, parallel patches of different fields all kept', async () => {
    const created = await Promise.all(Array.from({ length: 100 }, () => api.create(newBike())));
    const ids = new Set(created.map((bike) => bike.id));
    expect(ids.size).toBe(100);
    const all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    expect(all.filter((bike) => ids.has(bike.id))).toHaveLength(100);

    const bike = created[0];
    const changes = [{ vendor: 'V' }, { productType: 'P' }, { description: 'D' }, { totalInventory: 77 }];
    const answers = await Promise.all(changes.map((body) => api.request('PATCH', `/bikes/${bike.id}`, { body })));
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200]);
    expect(await (await api.request('GET', `/bikes/${bike.id}`)).json()).toEqual(
      Object.assign({ ...bike }, ...changes),
    );
  });

  it('keeps an Idempotency-Key (one bike for retries at once), If-Match and the rate limits through it', async () => {
    const fields = newBike();
    const headers = { 'idempotency-key': `through-pgbouncer-${randomUUID()}` };
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => api.request('POST', '/bikes/', { body: fields, headers })),
    );
    expect(replies.every((res) => res.status === 200 || res.status === 409)).toBe(true);
    const again = await api.request('POST', '/bikes/', { body: fields, headers });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('ratelimit')).toMatch(/^"writes";r=\d+;t=\d+$/);
    const bikes = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    expect(bikes.filter((bike) => bike.title === fields.title)).toHaveLength(1);

    const etag = again.headers.get('etag') as string;
    const { id } = (await again.json()) as Bike;
    const stale = await api.request('PATCH', `/bikes/${id}`, {
      body: { vendor: 'x' },
      headers: { 'if-match': '"old"' },
    });
    expect(stale.status).toBe(412);
    const current = await api.request('PATCH', `/bikes/${id}`, {
      body: { vendor: 'x' },
      headers: { 'if-match': etag },
    });
    expect(current.status).toBe(200);
  });

  it('streams the changes as events through it: the poll alone, no LISTEN (docs/reference/browse-and-sync.md#one-poll-per-instance)', async () => {
    const start = (await api.request('GET', '/bikes/search/by-title?query=none-such')).headers.get('catalog-cursor');
    const events = await openEventStream(`${svc.baseUrl}/bikes/changes?since=${encodeURIComponent(start as string)}`);
    try {
      expect(events.status).toBe(200);
      const bike = await api.create(newBike());
      await waitFor('the event', () => events.events.find((event) => event.data.includes(bike.id)));
      expect(JSON.parse(events.events[0].data)).toMatchObject({ type: 'upsert', id: bike.id, bike });
    } finally {
      events.close();
    }
  });

  it('prepared no statement by name through it: every one it ran, a page and a GET by id too, was parsed unnamed', async () => {
    const bike = await api.create(newBike());
    for (let i = 0; i < 10; i++) {
      expect((await api.request('GET', `/bikes/${bike.id}`)).status).toBe(200);
      expect((await api.request('GET', '/bikes?limit=5')).status).toBe(200);
    }
    const parsed = sent.parsed();
    expect(parsed.filter(({ text }) => /from "bikes" where "id" = \$1$/.test(text)).length).toBeGreaterThanOrEqual(10);
    expect(parsed.filter(({ name }) => name !== '')).toEqual([]);
  });
});

(why ? describe.skip : describe)(
  'migrations through PgBouncer in transaction mode, with no DATABASE_DIRECT_URL',
  () => {
    const INSTANCES = 4;
    let direct: string;
    let bouncer: Bouncer;
    let services: ServiceProcess[] = [];

    beforeAll(async () => {
      direct = await createEmptyTestDatabase();
      bouncer = await startPgBouncer(direct);
    });
    afterAll(async () => {
      for (const svc of services) svc.child.kill('SIGTERM');
      await Promise.all(services.map((svc) => svc.exited));
      await bouncer?.remove();
    });

    it(`${INSTANCES} services started at once on an empty database all serve, and each migration is applied once`, async () => {
      // Fewer server connections (4) than waiting migrators would not matter either: the one
      // holding the lock already has its connection.
      const env = {
        DATABASE_URL: bouncer.url,
        DATABASE_DIRECT_URL: '',
        JWT_SECRET: randomBytes(32).toString('base64url'),
      };
      const started = await Promise.allSettled(Array.from({ length: INSTANCES }, () => spawnService(env)));
      services = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      expect(started.filter((result) => result.status === 'rejected')).toEqual([]);

      for (const svc of services) expect((await fetch(`${svc.baseUrl}/readyz`)).status).toBe(200);
      // One catalog: a bike made through one instance reads back through every other.
      const created = await client(services[0].baseUrl, await issueToken(services[0].baseUrl)).create(newBike());
      for (const svc of services) {
        expect(await (await client(svc.baseUrl).request('GET', `/bikes/${created.id}`)).json()).toEqual(created);
      }

      const db = new Client({ connectionString: direct });
      await db.connect();
      try {
        const { rows } = await db.query<{ migration_name: string; times: number; finished: boolean }>(
          `SELECT migration_name, count(*)::int AS times, bool_and(finished_at IS NOT NULL AND rolled_back_at IS NULL) AS finished
           FROM "_prisma_migrations" GROUP BY migration_name ORDER BY migration_name`,
        );
        expect(rows).toEqual(readMigrations().map((m) => ({ migration_name: m.name, times: 1, finished: true })));
      } finally {
        await db.end();
      }
    });
  },
);

/**
 * DATABASE_PREPARED_STATEMENTS=on through a PgBouncer that does not keep prepared statements
 * (1.18, transaction mode): a statement a connection prepared is unknown on the next server
 * connection (26000), or one prepared by another client has its name there (42P05). Each is
 * refused before it runs: run again unnamed, and the pool prepares nothing more
 * (docs/reference/database.md#prepared-statements). No write answers 500.
 */
(why ? describe.skip : describe)('DATABASE_PREPARED_STATEMENTS=on through PgBouncer 1.18 in transaction mode', () => {
  let bouncer: Bouncer;
  let sent: StatementCounter;
  let svc: ServiceProcess;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    const direct = await createEmptyTestDatabase();
    bouncer = await startPgBouncer(direct);
    sent = await countStatements(bouncer.url);
    svc = await spawnService({
      DATABASE_URL: sent.url,
      DATABASE_DIRECT_URL: direct,
      DATABASE_PREPARED_STATEMENTS: 'on',
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    api = client(svc.baseUrl, await issueToken(svc.baseUrl));
  });
  afterAll(async () => {
    svc?.child.kill('SIGTERM');
    await svc?.exited;
    await sent?.close();
    await bouncer?.remove();
  });

  it('answers every write 200, reads back what each wrote, and lists whole, never a 500', async () => {
    const statuses: number[] = [];
    const bikes = await Promise.all(
      Array.from({ length: 8 }, async (_, worker) => {
        const made: Bike[] = [];
        for (let i = 0; i < 15; i++) {
          const res = await api.request('POST', '/bikes/', { body: newBike({ vendor: `Prepared ${worker}` }) });
          statuses.push(res.status);
          if (res.status !== 200) continue;
          const bike = (await res.json()) as Bike;
          const patched = await api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: i } });
          statuses.push(patched.status);
          const read = await api.request('GET', `/bikes/${bike.id}`);
          statuses.push(read.status);
          if (read.status === 200) made.push((await read.json()) as Bike);
          const listed = await api.request('GET', '/bikes?limit=5');
          statuses.push(listed.status);
        }
        return made;
      }),
    );
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    const all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    const stored = new Map(all.map((bike) => [bike.id, bike]));
    for (const bike of bikes.flat()) expect(stored.get(bike.id)).toEqual(bike);
    // It did prepare them by name, as told: the refusals are what it met and answered.
    expect(sent.parsed().filter(({ name }) => name !== '').length).toBeGreaterThan(0);
    expect(svc.output()).not.toMatch(/unexpected error/);
  });
});

import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { readConfig } from '../../src/config';
import { startService, type Service } from '../../src/server';
import { client, issueToken, newBike } from '../support/bikes';
import {
  type Bouncer,
  missing,
  PGBOUNCER,
  POSTGRES_15,
  type Postgres15,
  startPgBouncer,
  startPrimary,
  startReplica,
} from '../support/servers';
import { waitFor } from '../support/wait';

const why = missing(PGBOUNCER, `${POSTGRES_15}/postgres`);
if (why) console.log(`primary-away.test.ts skipped: ${why}`);

/**
 * The primary side away (docs/reference/database.md#reads-while-the-primary-is-away): the service reaches the primary through
 * PgBouncer and reads a streaming replica. With PgBouncer stopped, or hanging (SIGSTOP), reads
 * answer 200 from the replica, marked X-Stale; writes answer 503 with Retry-After, open pooled
 * connections included, while PgBouncer still hangs (the service's own time limits answer them,
 * not PgBouncer waking); once PgBouncer is back, everything is as before.
 */
(why ? describe.skip : describe)('reads while the primary side is away', () => {
  let primary: Postgres15;
  let replica: Postgres15;
  let bouncer: Bouncer;
  let service: Service;
  let api: ReturnType<typeof client>;
  let bike: Bike;

  beforeAll(async () => {
    primary = await startPrimary();
    const admin = new Client({ connectionString: primary.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE bikes').finally(() => admin.end());
    replica = await startReplica(primary);
    bouncer = await startPgBouncer(primary.url('bikes'));
    const config = readConfig({
      PORT: '0',
      DATABASE_URL: bouncer.url,
      DATABASE_DIRECT_URL: primary.url('bikes'),
      DATABASE_REPLICA_URL: replica.url('bikes'),
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    service = await startService(config, pino({ level: 'silent' }));
    const baseUrl = `http://127.0.0.1:${service.port}`;
    api = client(baseUrl, await issueToken(baseUrl));
    bike = await api.create(newBike());
    await waitFor(
      'the replica to have the bike',
      async () => ((await api.request('GET', `/bikes/${bike.id}`)).status === 200 ? true : undefined),
      { everyMs: 20 },
    );
  });
  afterAll(async () => {
    await service?.stop();
    await bouncer?.remove();
    await replica?.stop();
    await primary?.stop();
    replica?.remove();
    primary?.remove();
  });

  /** A create's status and Retry-After. */
  async function create(): Promise<{ status: number; retryAfter: string | null }> {
    const res = await api.request('POST', '/bikes/', { body: newBike() });
    return { status: res.status, retryAfter: res.headers.get('retry-after') };
  }

  /** Reads that answer 200 from the replica, marked stale, once the service has seen the primary go. */
  async function expectStaleReads(): Promise<void> {
    const res = await waitFor(
      'reads marked stale',
      async () => {
        const reply = await api.request('GET', `/bikes/${bike.id}`);
        return reply.headers.get('x-stale') ? reply : undefined;
      },
      { everyMs: 50 },
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(bike);
    expect(res.headers.get('x-stale')).toMatch(/^as-of=\d{4}-\d\d-\d\dT[\d:.]+Z; age=\d+\.\d{3}$/);
    for (const path of ['/bikes/all', `/bikes/by-handle/${bike.handle}`]) {
      const other = await api.request('GET', path);
      expect({ path, status: other.status }).toEqual({ path, status: 200 });
    }
  }

  async function expectNormalAgain(): Promise<void> {
    await waitFor(
      'writes to work again',
      async () => ((await api.request('POST', '/bikes/', { body: newBike() })).status === 200 ? true : undefined),
      { everyMs: 100 },
    );
    await waitFor(
      'reads no longer marked stale',
      async () => ((await api.request('GET', `/bikes/${bike.id}`)).headers.get('x-stale') ? undefined : true),
      { everyMs: 50 },
    );
  }

  it('PgBouncer stopped: reads answer 200 from the replica, marked X-Stale; writes 503', async () => {
    await bouncer.stop();
    try {
      await expectStaleReads();
      expect(await create()).toEqual({ status: 503, retryAfter: '1' });
    } finally {
      await bouncer.start();
    }
    await expectNormalAgain();
  });

  /**
   * A write the service sent, waiting on a lock held on the primary, when PgBouncer hangs: the
   * service cannot know whether it will commit (PgBouncer runs it when it wakes), and says so.
   */
  async function writeWhilePgBouncerHangs(lock: string, write: () => Promise<Response>): Promise<Response> {
    const holder = new Client({ connectionString: primary.url('bikes') });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(lock);
      const sent = write();
      // The write has reached PostgreSQL and waits for the lock.
      await waitFor(
        'the write to wait for its lock',
        async () =>
          (
            await holder.query<{ n: string }>(
              "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = 'bikes'",
            )
          ).rows[0].n === '1'
            ? true
            : undefined,
        { everyMs: 20 },
      );
      bouncer.signal('hang');
      await holder.query('COMMIT');
      // Answered while PgBouncer still hangs: it is resumed only after.
      return await sent;
    } finally {
      await holder.end();
    }
  }

  it('PgBouncer hanging (SIGSTOP) under a PATCH it had taken: 504, outcome unknown, naming the bike; the PATCH then commits when it wakes', async () => {
    const target = await api.create(newBike({ vendor: 'before' }));
    try {
      const res = await writeWhilePgBouncerHangs(`SELECT 1 FROM bikes WHERE id = '${target.id}' FOR UPDATE`, () =>
        api.request('PATCH', `/bikes/${target.id}`, { body: { vendor: 'after' } }),
      );
      expect(res.status).toBe(504);
      expect(res.headers.get('write-outcome')).toBe('unknown');
      expect(res.headers.get('content-location')).toBe(`/bikes/${target.id}`);
      expect(res.headers.get('retry-after')).toBeNull();
    } finally {
      bouncer.signal('resume');
    }
    await expectNormalAgain();
    const read = await api.request('GET', `/bikes/${target.id}`, { headers: { 'x-read-from': 'primary' } });
    expect(((await read.json()) as Bike).vendor).toBe('after');
  });

  it('PgBouncer hanging under a POST without a key: 504 names the id it was made under, and reading it tells whether it was', async () => {
    const fields = newBike();
    let location: string | null;
    try {
      const res = await writeWhilePgBouncerHangs('LOCK TABLE bikes IN SHARE MODE', () =>
        api.request('POST', '/bikes/', { body: fields }),
      );
      expect(res.status).toBe(504);
      expect(res.headers.get('write-outcome')).toBe('unknown');
      location = res.headers.get('content-location');
      expect(location).toMatch(/^\/bikes\/[0-9a-f-]{36}$/);
    } finally {
      bouncer.signal('resume');
    }
    await expectNormalAgain();
    // The create committed when PgBouncer woke: the client finds it instead of creating it twice.
    const found = await api.request('GET', location as string, { headers: { 'x-read-from': 'primary' } });
    expect(found.status).toBe(200);
    expect(((await found.json()) as Bike).title).toBe(fields.title);
  });

  it('PgBouncer hanging (SIGSTOP): the same; a write sent on an open pooled connection is 504 (outcome unknown), the next 503, while it still hangs', async () => {
    // The pool's connections are open and idle when it hangs.
    await Promise.all(Array.from({ length: 5 }, () => api.create(newBike())));
    bouncer.signal('hang');
    try {
      expect((await create()).status).toBe(504);
      await expectStaleReads();
      expect((await create()).status).toBe(503);
    } finally {
      bouncer.signal('resume');
    }
    await expectNormalAgain();
  });
});

import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import pino from 'pino';
import type { Bike } from '../../src/bikes/bike';
import { readConfig } from '../../src/config';
import { MAX_REPLICA_LAG_MS } from '../../src/db/replica';
import { type Service, startService } from '../../src/server';
import { client, issueToken, newBike } from '../support/bikes';
import { readMetrics, valueOf } from '../support/metrics';
import { missing, type Postgres15, POSTGRES_15, startPrimary, startReplica } from '../support/servers';
import { waitFor } from '../support/wait';

const why = missing(
  path.join(POSTGRES_15, 'postgres'),
  path.join(POSTGRES_15, 'pg_basebackup'),
  '/usr/share/postgresql/15/extension/pg_trgm.control',
);
if (why) console.log(`replica.test.ts skipped: ${why}`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Polls every 20 ms for up to 15 s. */
const eventually = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 15_000, 20);

/**
 * DATABASE_REPLICA_URL: the read routes read a real streaming replica (Debian's PostgreSQL 15,
 * pg_basebackup -R), writes go to the primary, and a replica that is down or behind sends the
 * reads back to the primary without a single 5xx.
 */
(why ? describe.skip : describe)('reads from a streaming replica', () => {
  let primary: Postgres15;
  let replica: Postgres15;
  let service: Service;
  let baseUrl: string;
  let api: ReturnType<typeof client>;
  const reads = async (pool: 'primary' | 'replica') => valueOf(await readMetrics(baseUrl), 'db_reads_total', { pool });

  beforeAll(async () => {
    primary = await startPrimary();
    const admin = new Client({ connectionString: primary.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE bikes');
    await admin.end();
    replica = await startReplica(primary);
    const config = readConfig({
      PORT: '0',
      DATABASE_URL: primary.url('bikes'),
      DATABASE_REPLICA_URL: replica.url('bikes'),
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    service = await startService(config, pino({ level: 'silent' }));
    baseUrl = `http://127.0.0.1:${service.port}`;
    api = client(baseUrl, await issueToken(baseUrl));
  }, 120_000);
  afterAll(async () => {
    await service?.stop();
    await replica?.stop();
    await primary?.stop();
    replica?.remove();
    primary?.remove();
  });

  it('writes on the primary, and reads what the replica has replayed, from the replica', async () => {
    const created = await api.create(newBike());
    const before = await reads('replica');
    const read = await eventually('the replica has the bike', async () => {
      const res = await api.request('GET', `/bikes/${created.id}`);
      return res.status === 200 ? ((await res.json()) as Bike) : undefined;
    });
    expect(read).toEqual(created);
    expect(await reads('replica')).toBeGreaterThan(before);
  });

  it('replays a committed write within milliseconds (the lag a client may see)', async () => {
    const bike = await api.create(newBike());
    const db = new Client({ connectionString: primary.url('bikes') });
    const standby = new Client({ connectionString: replica.url('bikes') });
    await Promise.all([db.connect(), standby.connect()]);
    const lags: number[] = [];
    try {
      for (let i = 0; i < 30; i++) {
        await db.query('UPDATE bikes SET total_inventory = $1 WHERE id = $2', [i, bike.id]);
        const committed = performance.now();
        await eventually('the replica replays it', async () => {
          const { rows } = await standby.query('SELECT total_inventory FROM bikes WHERE id = $1', [bike.id]);
          return rows[0]?.total_inventory === i ? true : undefined;
        });
        lags.push(performance.now() - committed);
      }
    } finally {
      await Promise.all([db.end(), standby.end()]);
    }
    lags.sort((a, b) => a - b);
    console.log(`replica replay lag over 30 writes: median ${lags[15].toFixed(1)} ms, max ${lags[29].toFixed(1)} ms`);
    expect(lags[29]).toBeLessThan(MAX_REPLICA_LAG_MS);
  });

  it('X-Read-From: primary reads the client’s own writes at once', async () => {
    const bike = await api.create(newBike());
    for (let i = 0; i < 20; i++) {
      await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: `Vendor ${i}` } });
      const res = await api.request('GET', `/bikes/${bike.id}`, { headers: { 'x-read-from': 'primary' } });
      expect(((await res.json()) as Bike).vendor).toBe(`Vendor ${i}`);
    }
  });

  it('sends reads to the primary while the replica lags beyond the bound, and back once it catches up', async () => {
    const bike = await api.create(newBike({ vendor: 'Before' }));
    await eventually('the replica has the bike', async () =>
      (await api.request('GET', `/bikes/${bike.id}`)).status === 200 ? true : undefined,
    );
    const standby = new Client({ connectionString: replica.url('bikes') });
    await standby.connect();
    try {
      await standby.query('SELECT pg_wal_replay_pause()');
      await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: 'After' } });
      // Once the replica is further behind than the bound, reads show the write (from the primary).
      const seen = await waitFor(
        'reads to see the write',
        async () => {
          const res = await api.request('GET', `/bikes/${bike.id}`);
          return ((await res.json()) as Bike).vendor === 'After' ? true : undefined;
        },
        MAX_REPLICA_LAG_MS + 5_000,
        20,
      );
      expect(seen).toBe(true);
      const onReplica = await reads('replica');
      await api.request('GET', `/bikes/${bike.id}`);
      expect(await reads('replica')).toBe(onReplica);
    } finally {
      await standby.query('SELECT pg_wal_replay_resume()');
      await standby.end();
    }
    const onReplica = await reads('replica');
    await eventually('reads to come back to the replica', async () => {
      await api.request('GET', `/bikes/${bike.id}`);
      return (await reads('replica')) > onReplica ? true : undefined;
    });
  });

  it('answers every read while the replica is killed mid-load, and goes back to it once it is restarted', async () => {
    const bikes = await Promise.all(Array.from({ length: 5 }, () => api.create(newBike())));
    await eventually('the replica has the bikes', async () =>
      (await api.request('GET', `/bikes/${bikes[4].id}`)).status === 200 ? true : undefined,
    );
    const statuses: number[] = [];
    let loading = true;
    const load = Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        for (let i = worker; loading; i++) {
          const path = i % 2 ? `/bikes/${bikes[i % 5].id}` : '/bikes/all';
          statuses.push((await api.request('GET', path)).status);
        }
      }),
    );
    await sleep(500);
    await replica.stop('kill');
    await sleep(1_500);
    loading = false;
    await load;
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);

    await replica.start();
    const onReplica = await reads('replica');
    await eventually('reads to come back to the replica', async () => {
      await api.request('GET', `/bikes/${bikes[0].id}`);
      return (await reads('replica')) > onReplica ? true : undefined;
    });
  });
});

import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import pino from 'pino';
import type { Bike } from '../../src/bikes/bike';
import { readConfig } from '../../src/config';
import { MAX_REPLICA_LAG_MS } from '../../src/db/replica';
import { type Service, startService } from '../../src/server';
import { client, issueToken, newBike } from '../support/bikes';
import type { Logger } from '../../src/logger';
import { capturedLog } from '../support/log';
import { readMetrics, valueOf } from '../support/metrics';
import { missing, type Postgres15, POSTGRES_15, startPrimary, startReplica } from '../support/servers';
import { waitFor } from '../support/wait';

const why = missing(
  path.join(POSTGRES_15, 'postgres'),
  path.join(POSTGRES_15, 'pg_basebackup'),
  '/usr/share/postgresql/15/extension/pg_trgm.control',
);
if (why) console.log(`replica.test.ts skipped: ${why}`);

/** The service's database on `server`, empty: the service migrates it. */
async function createBikesDatabase(server: Postgres15): Promise<void> {
  const admin = new Client({ connectionString: server.url('postgres') });
  await admin.connect();
  await admin.query('CREATE DATABASE bikes').finally(() => admin.end());
}

/** Polls every 20 ms. */
const eventually = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, { everyMs: 20 });

/** Reads the service at `baseUrl` has counted as served by `pool` (db_reads_total). */
const readsOn = async (baseUrl: string, pool: string) =>
  valueOf(await readMetrics(baseUrl), 'db_reads_total', { pool }) ?? 0;

/** Pauses a standby's replay, and waits until it has paused: pg_wal_replay_pause only asks for it. */
async function pauseReplay(standby: Client): Promise<void> {
  await standby.query('SELECT pg_wal_replay_pause()');
  await eventually('the replay to pause', async () => {
    const { rows } = await standby.query<{ state: string }>('SELECT pg_get_wal_replay_pause_state() AS state');
    return rows[0].state === 'paused' ? true : undefined;
  });
}

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
    await createBikesDatabase(primary);
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
  });
  afterAll(async () => {
    await service?.stop();
    await replica?.stop();
    await primary?.stop();
    replica?.remove();
    primary?.remove();
  });

  it('writes on the primary, and reads what the replica has replayed, from the replica', async () => {
    const created = await api.create(newBike());
    // Until the replica has replayed the create, and qualifies (a replica judged behind, as on a
    // loaded machine a moment, leaves the reads to the primary): a read it served gives the bike.
    const read = await eventually('the replica to serve the bike', async () => {
      const before = await reads('replica');
      const res = await api.request('GET', `/bikes/${created.id}`);
      const servedByReplica = (await reads('replica')) > before;
      return res.status === 200 && servedByReplica ? ((await res.json()) as Bike) : undefined;
    });
    expect(read).toEqual(created);
  });

  it('X-Read-From: primary reads the client’s own writes at once', async () => {
    const bike = await api.create(newBike());
    for (let i = 0; i < 20; i++) {
      await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: `Vendor ${i}` } });
      const res = await api.request('GET', `/bikes/${bike.id}`, { headers: { 'x-read-from': 'primary' } });
      expect(((await res.json()) as Bike).vendor).toBe(`Vendor ${i}`);
    }
  });

  it('reads X-Read-From as a list: any element primary reads the primary, and every read is counted where it was served', async () => {
    const bike = await api.create(newBike());
    for (const value of ['primary, replica', 'replica ,PRIMARY', 'nearest, primary']) {
      const [primaryBefore, replicaBefore] = [await reads('primary'), await reads('replica')];
      await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: value } });
      const res = await api.request('GET', `/bikes/${bike.id}`, { headers: { 'x-read-from': value } });
      expect({ value, vendor: ((await res.json()) as Bike).vendor }).toEqual({ value, vendor: value });
      expect({ value, primary: (await reads('primary')) - primaryBefore }).toEqual({ value, primary: 1 });
      expect({ value, replica: (await reads('replica')) - replicaBefore }).toEqual({ value, replica: 0 });
    }
  });

  it('reports the lag however large: with replay paused, it grows past twice the bound, never more than the time since the replica was in step', async () => {
    const standby = new Client({ connectionString: replica.url('bikes') });
    await standby.connect();
    try {
      // All the replica can lack after it has replayed up to where the primary stood at `inStep`
      // was written since: the lag (Date.now(), the service's clock) cannot be longer than that,
      // however late a busy machine takes the service's notes of the primary's positions.
      const inStep = Date.now();
      const onPrimary = new Client({ connectionString: primary.url('bikes') });
      await onPrimary.connect();
      const { rows } = await onPrimary
        .query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
        .finally(() => onPrimary.end());
      await eventually('the replica to replay up to the primary', async () => {
        const replayed = await standby.query<{ done: boolean }>(
          'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done',
          [rows[0].lsn],
        );
        return replayed.rows[0].done || undefined;
      });
      await pauseReplay(standby);
      await api.create(newBike());
      const lag = await eventually('the lag to pass twice the bound', async () => {
        const seconds = valueOf(await readMetrics(baseUrl), 'db_replica_lag_seconds', {});
        return seconds > (2 * MAX_REPLICA_LAG_MS) / 1000 ? seconds : undefined;
      });
      expect(lag).toBeLessThanOrEqual((Date.now() - inStep) / 1000);
    } finally {
      await standby.query('SELECT pg_wal_replay_resume()');
      await standby.end();
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
      await pauseReplay(standby);
      await api.request('PATCH', `/bikes/${bike.id}`, { body: { vendor: 'After' } });
      // Once the replica is further behind than the bound, reads show the write (from the primary).
      // Seeing the write alone proves less: a replica read a busy machine left unanswered for its
      // deadline is asked of the primary too.
      await eventually('the lag to pass the bound', async () =>
        valueOf(await readMetrics(baseUrl), 'db_replica_lag_seconds', {}) > MAX_REPLICA_LAG_MS / 1000
          ? true
          : undefined,
      );
      const seen = await waitFor(
        'reads to see the write',
        async () => {
          const res = await api.request('GET', `/bikes/${bike.id}`);
          return ((await res.json()) as Bike).vendor === 'After' ? true : undefined;
        },
        { everyMs: 20 },
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
    // Reads before the kill, and as many again after it, however long they take here.
    const answered = (count: number) =>
      eventually(`${count} reads answered`, async () => (statuses.length >= count ? true : undefined));
    await answered(10);
    await replica.stop('kill');
    await answered(statuses.length + 20);
    loading = false;
    await load;
    expect(statuses.filter((status) => status !== 200)).toEqual([]);

    await replica.start();
    const onReplica = await reads('replica');
    await eventually('reads to come back to the replica', async () => {
      await api.request('GET', `/bikes/${bikes[0].id}`);
      return (await reads('replica')) > onReplica ? true : undefined;
    });
  });
});

/**
 * A replica that cannot serve a read in any way (it hangs, it was promoted, it is not of the
 * primary's cluster, it lacks the tables) never causes a 5xx: the read goes to the primary.
 */
(why ? describe.skip : describe)('a replica that cannot serve', () => {
  let primary: Postgres15;
  let replica: Postgres15;
  const services: Service[] = [];
  let bike: Bike;

  /** The service with DATABASE_REPLICA_URL at `replicaUrl`, and a client of it. */
  async function serviceReadingFrom(replicaUrl: string, logger: Logger = pino({ level: 'silent' })) {
    const config = readConfig({
      PORT: '0',
      DATABASE_URL: primary.url('bikes'),
      DATABASE_REPLICA_URL: replicaUrl,
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    const service = await startService(config, logger);
    services.push(service);
    const baseUrl = `http://127.0.0.1:${service.port}`;
    return { baseUrl, api: client(baseUrl, await issueToken(baseUrl)) };
  }

  /** Every read route, answered 200 with the bike the primary has. */
  async function expectReadsFromThePrimary(baseUrl: string): Promise<void> {
    const api = client(baseUrl, '');
    for (const path of [`/bikes/${bike.id}`, `/bikes/by-handle/${encodeURIComponent(bike.handle)}`]) {
      const res = await api.request('GET', path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(await res.json()).toEqual(bike);
    }
    for (const path of ['/bikes/all', `/bikes/search/by-title?query=${encodeURIComponent(bike.title)}`]) {
      const res = await api.request('GET', path);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(await res.json()).toContainEqual(bike);
    }
  }

  beforeAll(async () => {
    primary = await startPrimary();
    await createBikesDatabase(primary);
    replica = await startReplica(primary);
    const { api } = await serviceReadingFrom(replica.url('bikes'));
    bike = await api.create(newBike());
  });
  afterAll(async () => {
    replica?.signalAll('resume');
    for (const service of services) await service.stop();
    await replica?.stop();
    await primary?.stop();
    replica?.remove();
    primary?.remove();
  });

  it('when the replica URL names a database that was never migrated, every read answers 200 from the primary', async () => {
    // The replica's own "postgres" database: in recovery, of the right cluster, without a table.
    const { baseUrl } = await serviceReadingFrom(replica.url('postgres'));
    await expectReadsFromThePrimary(baseUrl);
  });

  it('when the replica is of another cluster, it is never read', async () => {
    const stranger = await startPrimary();
    try {
      await createBikesDatabase(stranger);
      const { baseUrl } = await serviceReadingFrom(stranger.url('bikes'));
      await expectReadsFromThePrimary(baseUrl);
    } finally {
      await stranger.stop();
      stranger.remove();
    }
  });

  it('when the replica hangs, reads answer 200 from the primary, and none is a 5xx; once a check has found it hung, none waits for it', async () => {
    const { baseUrl } = await serviceReadingFrom(replica.url('bikes'));
    await expectReadsFromThePrimary(baseUrl);
    replica.signalAll('hang');
    try {
      // Reads sent before a check has found it hung wait for it a moment (the next test); once a
      // check has timed out, reads go to the primary straight away.
      await waitFor('a read to go to the primary straight away', async () => {
        const before = await readsOn(baseUrl, 'primary');
        await fetch(`${baseUrl}/bikes/${bike.id}`);
        return (await readsOn(baseUrl, 'primary')) > before ? true : undefined;
      });
      const fallbacks = await readsOn(baseUrl, 'primary-fallback');
      await expectReadsFromThePrimary(baseUrl);
      expect(await readsOn(baseUrl, 'primary-fallback')).toBe(fallbacks);
    } finally {
      replica.signalAll('resume');
    }
  });

  it('a read already sent to the replica when it hangs is answered by the primary, without waiting for the replica', async () => {
    const log = capturedLog();
    const { baseUrl } = await serviceReadingFrom(replica.url('bikes'), log.logger);
    await expectReadsFromThePrimary(baseUrl);
    // Sent as it hangs, before a check has found it hung, these go to the replica first. On a
    // machine so busy that a check finds it hung first, they go to the primary straight away: the
    // replica is then let go, read again, and hung again.
    await waitFor('reads sent to the replica as it hangs', async () => {
      await waitFor('the replica to be read', async () => {
        const before = await readsOn(baseUrl, 'replica');
        await fetch(`${baseUrl}/bikes/${bike.id}`);
        return (await readsOn(baseUrl, 'replica')) > before ? true : undefined;
      });
      const before = await readsOn(baseUrl, 'primary-fallback');
      replica.signalAll('hang');
      try {
        const replies = await Promise.all(
          [`/bikes/${bike.id}`, '/bikes/all'].map((path) => fetch(`${baseUrl}${path}`)),
        );
        expect(replies.map((res) => res.status)).toEqual([200, 200]);
        if ((await readsOn(baseUrl, 'primary-fallback')) === before) return undefined;
        // Answered after the replica's deadline for a read, not after the pool's cut-off of a query
        // that runs too long (30 s), which closes the connection and says so.
        expect(log.lines.filter((line) => /ran for over/.test(String(line.err)))).toEqual([]);
        return true;
      } finally {
        replica.signalAll('resume');
      }
    });
  });

  it('when the replica is promoted, it is no longer read: a row written only there never shows', async () => {
    const { baseUrl } = await serviceReadingFrom(replica.url('bikes'));
    const promoted = new Client({ connectionString: replica.url('bikes') });
    await promoted.connect();
    try {
      await promoted.query('SELECT pg_promote()');
      await promoted.query("UPDATE bikes SET title = 'Written on the promoted replica' WHERE id = $1", [bike.id]);
    } finally {
      await promoted.end();
    }
    // Once a check has seen it promoted (every 250 ms, or later on a busy machine), reads go to the primary.
    await waitFor('a read to go to the primary', async () => {
      const before = await readsOn(baseUrl, 'primary');
      await fetch(`${baseUrl}/bikes/${bike.id}`);
      return (await readsOn(baseUrl, 'primary')) > before ? true : undefined;
    });
    await expectReadsFromThePrimary(baseUrl);
  });
});

/**
 * Behind one replica URL, a balancer that sends each new connection to the next of two replicas,
 * one of which has stopped replaying: every list still comes from one server, so one ETag never
 * stands for two different lists.
 */
(why ? describe.skip : describe)('a replica URL that alternates between two replicas', () => {
  let primary: Postgres15;
  const replicas: Postgres15[] = [];
  let balancer: net.Server;
  let service: Service;

  beforeAll(async () => {
    primary = await startPrimary();
    await createBikesDatabase(primary);
    replicas.push(await startReplica(primary), await startReplica(primary));
    let next = 0;
    balancer = net.createServer((socket) => {
      const upstream = net.connect(replicas[next++ % 2].port, '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => balancer.listen(0, '127.0.0.1', resolve));
    const replicaUrl = new URL(replicas[0].url('bikes'));
    replicaUrl.port = String((balancer.address() as net.AddressInfo).port);
    const config = readConfig({
      PORT: '0',
      DATABASE_URL: primary.url('bikes'),
      DATABASE_REPLICA_URL: replicaUrl.toString(),
      JWT_SECRET: randomBytes(32).toString('base64url'),
    });
    service = await startService(config, pino({ level: 'silent' }));
  });
  afterAll(async () => {
    await service?.stop();
    balancer?.close();
    for (const replica of replicas) {
      await replica.stop();
      replica.remove();
    }
    await primary?.stop();
    primary?.remove();
  });

  it('never answers one list ETag with two different lists while the replicas disagree', async () => {
    const baseUrl = `http://127.0.0.1:${service.port}`;
    const api = client(baseUrl, await issueToken(baseUrl));
    await api.create(newBike());
    const lagging = new Client({ connectionString: replicas[1].url('postgres') });
    await lagging.connect();
    const seen = new Map<string, string>();
    try {
      await pauseReplay(lagging);
      for (let i = 0; i < 8; i++) {
        await api.create(newBike());
        const lists = await Promise.all(Array.from({ length: 4 }, () => api.request('GET', '/bikes/all')));
        for (const res of lists) {
          expect(res.status).toBe(200);
          const tag = res.headers.get('etag') as string;
          const body = await res.text();
          expect({ tag, body: seen.get(tag) ?? body }).toEqual({ tag, body });
          seen.set(tag, body);
        }
      }
    } finally {
      await lagging.query('SELECT pg_wal_replay_resume()');
      await lagging.end();
    }
    // Both replicas answered lists: the test saw more than one list per version.
    expect(seen.size).toBeGreaterThan(1);
  });
});

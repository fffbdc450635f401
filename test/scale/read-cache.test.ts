import { randomBytes, randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client as PgClient } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { READ_CACHE_BOUND_MS } from '../../src/bikes/read-cache';
import { client, type Client, newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { startTestService, type TestService } from '../support/service';

/**
 * The read cache (docs/reference/database.md#the-read-cache) on two instances of one database:
 * under 16 writers, no answer through either is older than its bound, a writer reads its own
 * write at once, and X-Read-From: primary does not go through it. Each answer is judged by what
 * had committed: a write has committed once its answer has arrived, and each state of a bike
 * has a version (its ETag's) that grows with every write of it.
 */

/** The version a bike's ETag names (`"<identity>.<representation>.b<version>.<xmin>"`). */
function versionOf(res: Response): bigint {
  const match = /\.b(\d+)\.\d+"$/.exec(res.headers.get('etag') ?? '');
  if (!match) throw new Error(`no bike ETag: ${res.headers.get('etag')}`);
  return BigInt(match[1]);
}

/** Writes of one bike, as they were answered: the version written, and when its answer arrived. */
type Committed = { version: bigint; at: number }[];

/** The newest version of the bike whose write had been answered by `before`. */
const newestBy = (committed: Committed, before: number) =>
  committed.reduce((newest, write) => (write.at < before && write.version > newest ? write.version : newest), -1n);

describe('the read cache, on two instances of one database', () => {
  let services: TestService[];
  let apis: Client[];
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const jwtSecret = randomBytes(32).toString('base64url');
    const env = { READ_CACHE_ENTRIES: '1000' };
    services = await Promise.all([0, 1].map(() => startTestService({ databaseUrl, jwtSecret, env })));
    const token = await services[0].token();
    apis = services.map((service) => client(service.baseUrl, token));
  });
  afterAll(async () => {
    await Promise.all((services ?? []).map((service) => service.stop()));
  });

  /** db_cache_reads_total{result="hit"}: both instances run in this process, so one registry counts both. */
  const hits = async () => {
    const text = await (await fetch(`${services[0].baseUrl}/metrics`)).text();
    return Number(/^db_cache_reads_total\{result="hit"\} (\d+)/m.exec(text)?.[1] ?? 0);
  };

  it('under 16 writers, answers no older than the bound, and each writer reads its own write', async () => {
    const bikes = await Promise.all(Array.from({ length: 12 }, () => apis[0].create(newBike())));
    const committed = new Map<string, Committed>(bikes.map((bike) => [bike.id, []]));
    for (const bike of bikes) {
      const res = await apis[1].request('GET', `/bikes/${bike.id}`, { headers: { 'x-read-from': 'primary' } });
      committed.get(bike.id)!.push({ version: versionOf(res), at: performance.now() });
    }
    const hitsBefore = await hits();
    const late: string[] = [];
    const notOwn: string[] = [];
    let reads = 0;
    const until = performance.now() + 4_000;

    const writer = async (api: Client) => {
      while (performance.now() < until) {
        const bike = bikes[randomInt(bikes.length)];
        const written = await api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: randomInt(1000) } });
        expect(written.status).toBe(200);
        const version = versionOf(written);
        committed.get(bike.id)!.push({ version, at: performance.now() });
        // Its own write, read at once through the instance that wrote it: that state or a later one.
        const read = await api.request('GET', `/bikes/${bike.id}`);
        expect(read.status).toBe(200);
        if (versionOf(read) < version) notOwn.push(`${bike.id}: wrote ${version}, read ${versionOf(read)}`);
        await read.arrayBuffer();
      }
    };
    const reader = async (api: Client, instance: number) => {
      while (performance.now() < until) {
        const bike = bikes[randomInt(bikes.length)];
        const byHandle = randomInt(4) === 0;
        const started = performance.now();
        const res = await api.request('GET', byHandle ? `/bikes/by-handle/${bike.handle}` : `/bikes/${bike.id}`);
        expect(res.status).toBe(200);
        expect(((await res.json()) as Bike).id).toBe(bike.id);
        // Every write answered more than the bound before this read began had committed by then.
        const owed = newestBy(committed.get(bike.id)!, started - READ_CACHE_BOUND_MS);
        if (versionOf(res) < owed) late.push(`instance ${instance}: ${bike.id} at ${versionOf(res)}, ${owed} owed`);
        reads++;
      }
    };
    await Promise.all([
      ...Array.from({ length: 16 }, (_, i) => writer(apis[i % 2])),
      ...Array.from({ length: 4 }, (_, i) => reader(apis[i % 2], i % 2)),
    ]);

    expect(late).toEqual([]);
    expect(notOwn).toEqual([]);
    expect(reads).toBeGreaterThan(0);
    // The answers came (in part) from memory: the cache was under test.
    expect(await hits()).toBeGreaterThan(hitsBefore);
  });

  it('a write made outside the service is read at once with X-Read-From: primary, which does not go through the cache', async () => {
    const bike = await apis[0].create(newBike());
    // Kept in both instances' memory.
    for (const api of apis)
      for (let i = 0; i < 3; i++) await (await api.request('GET', `/bikes/${bike.id}`)).arrayBuffer();
    const sql = new PgClient({ connectionString: databaseUrl });
    await sql.connect();
    try {
      const hitsBefore = await hits();
      for (let i = 1; i <= 5; i++) {
        await sql.query('UPDATE bikes SET total_inventory = $1 WHERE id = $2', [1000 + i, bike.id]);
        for (const api of apis) {
          const res = await api.request('GET', `/bikes/${bike.id}`, { headers: { 'x-read-from': 'primary' } });
          expect(((await res.json()) as Bike).totalInventory).toBe(1000 + i);
        }
      }
      expect(await hits()).toBe(hitsBefore);
    } finally {
      await sql.end();
    }
  });

  it("a list's 304 from the cache's version is never given to the instance's own writer after a write", async () => {
    for (let i = 0; i < 5; i++) {
      const before = await apis[i % 2].request('GET', '/bikes/all');
      const tag = before.headers.get('etag') as string;
      await before.arrayBuffer();
      const bike = await apis[i % 2].create(newBike());
      const after = await apis[i % 2].request('GET', '/bikes/all', { headers: { 'if-none-match': tag } });
      expect(after.status).toBe(200);
      expect(((await after.json()) as Bike[]).map((b) => b.id)).toContain(bike.id);
    }
  });
});

import { randomUUID } from 'node:crypto';
import zlib from 'node:zlib';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { waitFor } from '../support/wait';
import { type RawReply, rawRequest } from './helpers';

/**
 * Conditional GET and compression on the read routes: an ETag on every 200, 304 only while the
 * representation is unchanged (whoever changed it: this instance, another one, plain SQL), and
 * gzip or br that decompress to exactly the plain bytes.
 */

const get = (svc: TestService, path: string, headers: Record<string, string> = {}) =>
  rawRequest(svc.baseUrl, 'GET', path, headers);

function decode(reply: RawReply): string {
  const encoding = reply.headers['content-encoding'];
  if (encoding === 'gzip') return zlib.gunzipSync(reply.body).toString('utf8');
  if (encoding === 'br') return zlib.brotliDecompressSync(reply.body).toString('utf8');
  expect(encoding).toBeUndefined();
  return reply.body.toString('utf8');
}

describe('the read routes, for clients that poll', () => {
  let first: TestService;
  let second: TestService;
  let token: string;
  let bikes: Bike[];

  async function write(svc: TestService, method: string, path: string, body?: unknown): Promise<Bike> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await rawRequest(
      svc.baseUrl,
      method,
      path,
      headers,
      body === undefined ? undefined : JSON.stringify(body),
    );
    expect(res.status).toBe(200);
    return JSON.parse(res.body.toString('utf8')) as Bike;
  }

  beforeAll(async () => {
    first = await startTestService();
    // A second instance on the same database, signing with the same secret.
    second = await startTestService({ databaseUrl: first.databaseUrl, jwtSecret: first.jwtSecret });
    token = await first.token();
    bikes = [];
    for (let i = 0; i < 3; i++) bikes.push(await write(first, 'POST', '/bikes/', newBike()));
  });
  afterAll(async () => {
    await second.stop();
    await first.stop();
  });

  describe('conditional GET', () => {
    const routes = (bike: Bike) => [
      '/bikes/all',
      `/bikes/search/by-title?query=${encodeURIComponent(bike.title.slice(0, 14))}`,
      `/bikes/${bike.id}`,
      `/bikes/by-handle/${encodeURIComponent(bike.handle)}`,
    ];

    it.each(['the list', 'a search', 'a bike by id', 'a bike by handle'])(
      "%s: 200 with an ETag (a bike's strong, a list's weak) and Cache-Control: no-cache, then 304 with no body while nothing changed (GET and HEAD)",
      async (route) => {
        const path = routes(bikes[0])[['the list', 'a search', 'a bike by id', 'a bike by handle'].indexOf(route)];
        const plain = await get(first, path);
        expect(plain.status).toBe(200);
        expect(plain.headers.etag).toMatch(route.startsWith('a bike') ? /^"[^"]+"$/ : /^W\/"[^"]+"$/);
        expect(plain.headers['cache-control']).toBe('no-cache');

        for (const method of ['GET', 'HEAD']) {
          const again = await rawRequest(first.baseUrl, method, path, {
            'if-none-match': plain.headers.etag as string,
          });
          expect({ method, status: again.status }).toEqual({ method, status: 304 });
          expect(again.body.length).toBe(0);
          expect(again.headers.etag).toBe(plain.headers.etag);
        }
        // Another instance answers the same: the list's version lives in the database.
        expect((await get(second, path, { 'if-none-match': plain.headers.etag as string })).status).toBe(304);
        // An ETag among others, or the strong form of it, matches too; another does not.
        const listed = await get(first, path, { 'if-none-match': `W/"other", ${plain.headers.etag}` });
        expect(listed.status).toBe(304);
        // As fetch() sends it: Cache-Control: no-cache speaks to caches, not to this server.
        const fromFetch = {
          'if-none-match': plain.headers.etag as string,
          'cache-control': 'no-cache',
          pragma: 'no-cache',
        };
        expect((await get(first, path, fromFetch)).status).toBe(304);
        expect((await get(first, path, { 'if-none-match': '*' })).status).toBe(304);
        expect((await get(first, path, { 'if-none-match': 'W/"other"' })).status).toBe(200);
      },
    );

    it('HEAD, GET and 304 agree when compressed: the coding, the length and the tag, on every read route and /openapi.json', async () => {
      const long = await write(first, 'POST', '/bikes/', newBike({ description: 'long '.repeat(400) }));
      for (const path of [...routes(long), '/openapi.json']) {
        const viaGet = await get(first, path, { 'accept-encoding': 'gzip' });
        const viaHead = await rawRequest(first.baseUrl, 'HEAD', path, { 'accept-encoding': 'gzip' });
        expect({ path, encoding: viaGet.headers['content-encoding'] }).toEqual({ path, encoding: 'gzip' });
        for (const header of [
          'etag',
          'content-encoding',
          'content-length',
          'transfer-encoding',
          'content-type',
          'vary',
        ]) {
          expect({ path, header, value: viaHead.headers[header] }).toEqual({
            path,
            header,
            value: viaGet.headers[header],
          });
        }
        const tag = viaGet.headers.etag;
        if (tag === undefined) continue;
        const revalidated = await get(first, path, { 'accept-encoding': 'gzip', 'if-none-match': tag });
        expect({ path, status: revalidated.status, etag: revalidated.headers.etag }).toEqual({
          path,
          status: 304,
          etag: tag,
        });
        expect(revalidated.headers.vary).toMatch(/Accept-Encoding/);
      }
    });

    it('HEAD and GET agree: status and every header but the length', async () => {
      for (const path of routes(bikes[1])) {
        const viaGet = await get(first, path, { 'accept-encoding': 'gzip' });
        const viaHead = await rawRequest(first.baseUrl, 'HEAD', path, { 'accept-encoding': 'gzip' });
        expect({ path, status: viaHead.status }).toEqual({ path, status: viaGet.status });
        for (const header of ['etag', 'cache-control', 'content-type', 'vary']) {
          expect({ path, header, value: viaHead.headers[header] }).toEqual({
            path,
            header,
            value: viaGet.headers[header],
          });
        }
      }
    });

    /** The read routes that show `bike`: the list, a search that finds it, by id and by handle. */
    const showing = (bike: Bike) => ({
      list: '/bikes/all',
      search: `/bikes/search/by-title?query=${encodeURIComponent(bike.title)}`,
      byId: `/bikes/${bike.id}`,
      byHandle: `/bikes/by-handle/${encodeURIComponent(bike.handle)}`,
    });

    const sql = async (text: string, values: unknown[]) => {
      const db = new Client({ connectionString: first.databaseUrl });
      await db.connect();
      await db.query(text, values).finally(() => db.end());
    };
    const changes: Array<[string, (bike: Bike) => Promise<unknown>]> = [
      ['a patch', (bike) => write(first, 'PATCH', `/bikes/${bike.id}`, { vendor: 'Patched' })],
      ['a replace', (bike) => write(first, 'PUT', `/bikes/${bike.id}`, { ...bike, totalInventory: 99 })],
      ['a write through another instance', (bike) => write(second, 'PATCH', `/bikes/${bike.id}`, { vendor: 'Second' })],
      ['a write through plain SQL', (bike) => sql('UPDATE bikes SET vendor = $1 WHERE id = $2', ['Desk', bike.id])],
    ];

    it.each(changes)(
      '%s changes the ETags of the list, of a search that finds the bike, and of the bike',
      async (_label, change) => {
        const bike = await write(first, 'POST', '/bikes/', newBike());
        const before: Record<string, string> = {};
        for (const [name, path] of Object.entries(showing(bike)))
          before[name] = (await get(first, path)).headers.etag as string;
        await change(bike);
        for (const [name, path] of Object.entries(showing(bike))) {
          const res = await get(second, path, { 'if-none-match': before[name] });
          expect({ name, status: res.status }).toEqual({ name, status: 200 });
          expect(res.headers.etag).not.toBe(before[name]);
        }
      },
    );

    it("a create changes the list and the searches that find the new bike, and no other bike's ETag", async () => {
      const bike = await write(first, 'POST', '/bikes/', newBike());
      const { list, search, byId } = showing(bike);
      const before = { list: await get(first, list), search: await get(first, search), byId: await get(first, byId) };
      await write(first, 'POST', '/bikes/', { ...newBike(), title: bike.title });
      const tag = (reply: RawReply) => ({ 'if-none-match': reply.headers.etag as string });
      expect((await get(first, list, tag(before.list))).status).toBe(200);
      expect((await get(first, search, tag(before.search))).status).toBe(200);
      expect((await get(first, byId, tag(before.byId))).status).toBe(304);
    });

    it('a delete changes the list ETag, and the bike then answers 404 whatever If-None-Match says', async () => {
      const bike = await write(first, 'POST', '/bikes/', newBike());
      const list = (await get(first, '/bikes/all')).headers.etag as string;
      const one = (await get(first, `/bikes/${bike.id}`)).headers.etag as string;
      await write(first, 'DELETE', `/bikes/${bike.id}`);
      expect((await get(first, '/bikes/all', { 'if-none-match': list })).status).toBe(200);
      expect((await get(first, `/bikes/${bike.id}`, { 'if-none-match': one })).status).toBe(404);
    });

    it("rows changed by the tables' owner with the triggers switched off (DISABLE TRIGGER USER) still change both ETags", async () => {
      const bike = await write(first, 'POST', '/bikes/', newBike());
      const listBefore = (await get(first, '/bikes/all')).headers.etag as string;
      const bikeBefore = (await get(first, `/bikes/${bike.id}`)).headers.etag as string;
      const db = new Client({ connectionString: first.databaseUrl });
      await db.connect();
      try {
        await db.query('ALTER TABLE bikes DISABLE TRIGGER USER');
        await db.query("UPDATE bikes SET title = 'Changed Behind Its Back' WHERE id = $1", [bike.id]);
        for (const [path, tag] of [
          ['/bikes/all', listBefore],
          [`/bikes/${bike.id}`, bikeBefore],
        ]) {
          expect({ path, status: (await get(first, path, { 'if-none-match': tag })).status }).toEqual({
            path,
            status: 200,
          });
        }
        // While they are off, the catalog's version counts no change: the lists carry no tag to send back.
        expect((await get(first, '/bikes/all')).headers.etag).toBeUndefined();
        expect((await get(first, '/bikes/search/by-title?query=Changed')).headers.etag).toBeUndefined();
        // The bike's own tag still changes with every write.
        const whileOff = (await get(first, `/bikes/${bike.id}`)).headers.etag as string;
        await db.query("UPDATE bikes SET vendor = 'Also Behind Its Back' WHERE id = $1", [bike.id]);
        expect((await get(first, `/bikes/${bike.id}`, { 'if-none-match': whileOff })).status).toBe(200);
      } finally {
        // As the migrations made them, whoever writes (plain ENABLE would leave replication sessions out).
        const { rows } = await db.query<{ name: string }>(
          "SELECT tgname AS name FROM pg_trigger WHERE tgrelid = 'bikes'::regclass AND NOT tgisinternal",
        );
        for (const { name } of rows) await db.query(`ALTER TABLE bikes ENABLE ALWAYS TRIGGER ${name}`);
        await db.end();
      }
    });

    it('a write with session_replication_role = replica (pg_restore, logical replication) changes the ETags too', async () => {
      const bike = await write(first, 'POST', '/bikes/', newBike());
      const before = (await get(first, '/bikes/all')).headers.etag as string;
      const db = new Client({ connectionString: first.databaseUrl });
      await db.connect();
      try {
        await db.query('BEGIN');
        await db.query("SET LOCAL session_replication_role = 'replica'");
        await db.query("UPDATE bikes SET title = 'Changed Title' WHERE id = $1", [bike.id]);
        await db.query('COMMIT');
      } finally {
        await db.end();
      }
      expect((await get(first, '/bikes/all', { 'if-none-match': before })).status).toBe(200);
    });

    it.each([
      ['a DELETE of no bike', 'DELETE', () => `/bikes/${randomUUID()}`, undefined],
      ['a PATCH of no bike', 'PATCH', () => `/bikes/${randomUUID()}`, { vendor: 'Nobody' }],
    ])('%s (404) leaves every list ETag as it was', async (_label, method, path, body) => {
      const before = (await get(first, '/bikes/all')).headers.etag as string;
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await rawRequest(first.baseUrl, method, path(), headers, body && JSON.stringify(body));
      expect(res.status).toBe(404);
      expect((await get(first, '/bikes/all', { 'if-none-match': before })).status).toBe(304);
    });

    it('a tag of one catalog is never answered 304 by another, even at the same version and with the same bike', async () => {
      // Two fresh catalogs, each with one bike made the same way: same version, same JSON.
      const [a, b] = [await startTestService(), await startTestService()];
      try {
        const id = '00000000-0000-4000-8000-000000000001';
        const same = { ...newBike(), id, title: 'Same Bike Everywhere', handle: 'same-bike-everywhere' };
        for (const svc of [a, b]) {
          const res = await rawRequest(
            svc.baseUrl,
            'PUT',
            `/bikes/${id}`,
            { authorization: `Bearer ${await svc.token()}`, 'content-type': 'application/json' },
            JSON.stringify(same),
          );
          expect(res.status).toBe(200);
        }
        for (const path of ['/bikes/all', `/bikes/${id}`]) {
          const fromA = await get(a, path);
          const fromB = await get(b, path);
          expect(fromB.body.toString('utf8')).toBe(fromA.body.toString('utf8'));
          expect(fromB.headers.etag).not.toBe(fromA.headers.etag);
          expect((await get(b, path, { 'if-none-match': fromA.headers.etag as string })).status).toBe(200);
        }
      } finally {
        await a.stop();
        await b.stop();
      }
    });

    it('under concurrent writes on two instances, no client is ever answered 304 for a representation that changed', async () => {
      const seen: { path: string; tag: string; body: string }[] = [];
      const paths = ['/bikes/all', `/bikes/search/by-title?query=Hybrid`];
      await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          const svc = i % 2 ? first : second;
          const path = paths[i % paths.length];
          const [read] = await Promise.all([
            get(svc, path),
            i % 3 === 0
              ? write(svc, 'POST', '/bikes/', newBike())
              : write(svc, 'PATCH', `/bikes/${bikes[i % bikes.length].id}`, { totalInventory: i }),
          ]);
          seen.push({ path, tag: read.headers.etag as string, body: read.body.toString('utf8') });
        }),
      );
      // Now that every write has committed: a tag still answered 304 must stand for the current bytes.
      for (const { path, tag, body } of seen) {
        const conditional = await get(first, path, { 'if-none-match': tag });
        if (conditional.status === 304) {
          expect({ path, body: (await get(first, path)).body.toString('utf8') }).toEqual({ path, body });
        } else {
          expect(conditional.status).toBe(200);
        }
      }
    });
  });

  describe('an answer that fails after its ETag was set', () => {
    /** The service's session whose query waits for a lock on bikes (the rows of a list), if any. */
    async function blockedRowsQuery(admin: Client, lockHolder: number): Promise<number | undefined> {
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'
            AND query ~* 'catalog_version_slots|from "?bikes"?' AND pid <> $1`,
        [lockHolder],
      );
      return rows[0]?.pid;
    }

    // The list's statement (its version and its first rows) waits on a lock and is cancelled,
    // which the service answers 503 (database unavailable); the 503 carries no validator.
    it.each(['/bikes/all', '/bikes/search/by-title?query=e'])(
      '%s: the 503 carries neither the ETag nor Cache-Control of the answer it replaced',
      async (path) => {
        const locker = new Client({ connectionString: first.databaseUrl });
        const admin = new Client({ connectionString: first.databaseUrl });
        await locker.connect();
        await admin.connect();
        try {
          const { rows } = await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          await locker.query('BEGIN');
          await locker.query('LOCK TABLE bikes IN ACCESS EXCLUSIVE MODE');
          const reply = get(first, path, { 'x-request-id': 'etag-then-failure' });
          const pid = await waitFor('the rows query to wait for the lock', () => blockedRowsQuery(admin, rows[0].pid));
          await admin.query('SELECT pg_cancel_backend($1)', [pid]);
          const res = await reply;
          expect(res.status).toBe(503);
          expect(res.body.toString('utf8')).toBe('Service Unavailable');
          expect(res.headers['content-type']).toMatch(/^text\/plain/);
          expect(res.headers.etag).toBeUndefined();
          expect(res.headers['cache-control']).toBeUndefined();
          // The error's own headers, and those set before the request reached the routes, stay.
          expect(res.headers['retry-after']).toBe('1');
          expect(res.headers['x-request-id']).toBe('etag-then-failure');
        } finally {
          await locker.query('COMMIT').catch(() => undefined);
          await locker.end();
          await admin.end();
        }
        expect((await get(first, path)).status).toBe(200);
      },
    );
  });

  describe('compression', () => {
    beforeAll(async () => {
      // More bikes than a batch (250), so /bikes/all is written as a stream.
      const db = new Client({ connectionString: first.databaseUrl });
      await db.connect();
      await db.query(
        `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
           total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
         SELECT gen_random_uuid(), 'streamed-' || n, 'Streamed ' || n, 'Road', 'now', 'Described ' || n, 'Vendor',
           n % 2 = 0, n, n + 0.5, 'USD', n + 1.25, 'EUR'
         FROM generate_series(1, 600) AS n`,
      );
      await db.end();
    });

    it.each([
      ['/bikes/all', 'a streamed list'],
      ['/bikes/search/by-title?query=Streamed%2010', 'a search in one batch'],
    ])('%s (%s): gzip and br decompress to exactly the plain bytes, with Vary: Accept-Encoding', async (path) => {
      const plain = await get(first, path);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers.vary).toMatch(/Accept-Encoding/i);
      const list = JSON.parse(plain.body.toString('utf8')) as Bike[];
      expect(list.length).toBeGreaterThan(1);
      for (const encoding of ['gzip', 'br']) {
        const compressed = await get(first, path, { 'accept-encoding': encoding });
        expect(compressed.headers['content-encoding']).toBe(encoding);
        expect(compressed.headers.vary).toMatch(/Accept-Encoding/i);
        expect(compressed.headers.etag).toBe(plain.headers.etag);
        expect(compressed.body.length).toBeLessThan(plain.body.length);
        expect(decode(compressed)).toBe(plain.body.toString('utf8'));
        // The ETag of a compressed answer revalidates like the plain one.
        const revalidated = await get(first, path, {
          'accept-encoding': encoding,
          'if-none-match': compressed.headers.etag as string,
        });
        expect(revalidated.status).toBe(304);
      }
      expect((await get(first, path, { 'accept-encoding': 'br;q=0.5, gzip' })).headers['content-encoding']).toBe(
        'gzip',
      );
      expect((await get(first, path, { 'accept-encoding': 'identity' })).headers['content-encoding']).toBeUndefined();
    });

    it.each(['identity;q=0', '*;q=0', 'identity;q=0, deflate', 'zstd, identity;q=0'])(
      'when the client accepts none of gzip, br and identity (%s), the answer goes out unencoded, never a 5xx',
      async (acceptEncoding) => {
        const plain = await get(first, '/bikes/all');
        const res = await get(first, '/bikes/all', { 'accept-encoding': acceptEncoding });
        expect(res.status).toBe(200);
        expect(res.headers['content-encoding']).toBeUndefined();
        expect(res.body.toString('utf8')).toBe(plain.body.toString('utf8'));
      },
    );

    it('a response under 1 KB is sent as it is', async () => {
      const res = await get(first, `/bikes/${bikes[2].id}`, { 'accept-encoding': 'gzip, br' });
      expect(res.body.length).toBeLessThan(1024);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.headers.vary).toMatch(/Accept-Encoding/i);
    });

    it('a client that sends neither If-None-Match nor Accept-Encoding gets exactly JSON.stringify of the bikes', async () => {
      const list = await get(first, '/bikes/all');
      const bikesNow = JSON.parse(list.body.toString('utf8')) as Bike[];
      expect(list.body.toString('utf8')).toBe(JSON.stringify(bikesNow));
      expect(list.headers['content-type']).toBe('application/json; charset=utf-8');
      const one = await get(first, `/bikes/${bikes[2].id}`);
      expect(one.body.toString('utf8')).toBe(JSON.stringify(JSON.parse(one.body.toString('utf8'))));
      expect(one.headers['content-type']).toBe('application/json; charset=utf-8');
    });
  });
});

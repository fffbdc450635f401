import { randomUUID } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { type RawReply, rawRequest } from './helpers';

/**
 * Writes that say what they expect (docs/reference/caching-and-conditions.md#conditional-writes): If-Match with a bike's strong
 * ETag writes only over that state, atomically, on one instance or two; If-Match: * needs the
 * bike; If-None-Match: * on PUT creates only. A failed precondition is 412 and changes nothing.
 */

describe('conditional writes (If-Match, If-None-Match)', () => {
  let first: TestService;
  let second: TestService;
  let token: string;

  beforeAll(async () => {
    first = await startTestService();
    // A second instance on the same database, signing with the same secret.
    second = await startTestService({ databaseUrl: first.databaseUrl, jwtSecret: first.jwtSecret });
    token = await first.token();
  });
  afterAll(async () => {
    await second.stop();
    await first.stop();
  });

  function send(
    svc: TestService,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string | string[]> = {},
  ): Promise<RawReply> {
    const all: Record<string, string | string[]> = { authorization: `Bearer ${token}`, ...headers };
    if (body !== undefined) all['content-type'] = 'application/json';
    return rawRequest(svc.baseUrl, method, path, all, body === undefined ? undefined : JSON.stringify(body));
  }
  const json = (reply: RawReply) => JSON.parse(reply.body.toString('utf8')) as Bike;

  /** A new bike, and the strong ETag its create answered with. */
  async function created(): Promise<{ bike: Bike; etag: string }> {
    const reply = await send(first, 'POST', '/bikes/', newBike());
    expect(reply.status).toBe(200);
    return { bike: json(reply), etag: reply.headers.etag as string };
  }
  const read = (svc: TestService, id: string) => rawRequest(svc.baseUrl, 'GET', `/bikes/${id}`, {});

  it('gives every written bike a strong ETag, the one a read of it then answers with', async () => {
    const { bike, etag } = await created();
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await read(second, bike.id)).headers.etag).toBe(etag);

    const patched = await send(first, 'PATCH', `/bikes/${bike.id}`, { totalInventory: 1 });
    expect(patched.headers.etag).toMatch(/^"[^"]+"$/);
    expect(patched.headers.etag).not.toBe(etag);
    expect((await read(first, bike.id)).headers.etag).toBe(patched.headers.etag);

    const replaced = await send(first, 'PUT', `/bikes/${bike.id}`, { ...newBike(), id: bike.id, handle: 'h' });
    expect(replaced.headers.etag).not.toBe(patched.headers.etag);
    expect((await read(first, bike.id)).headers.etag).toBe(replaced.headers.etag);
  });

  it.each(['PATCH', 'PUT'])(
    '%s: two editors with the same ETag, on two instances at once: one writes, the other gets 412',
    async (method) => {
      const { bike, etag } = await created();
      const body = (title: string) =>
        method === 'PATCH' ? { title } : { ...newBike(), title, id: bike.id, handle: bike.handle };
      const [a, b] = await Promise.all([
        send(first, method, `/bikes/${bike.id}`, body('from A'), { 'if-match': etag }),
        send(second, method, `/bikes/${bike.id}`, body('from B'), { 'if-match': etag }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 412]);
      const winner = a.status === 200 ? a : b;
      const loser = a.status === 200 ? b : a;
      expect(loser.body.toString('utf8')).toBe('Precondition Failed');
      const stored = await read(first, bike.id);
      expect(json(stored).title).toBe(json(winner).title);
      expect(stored.headers.etag).toBe(winner.headers.etag);
    },
  );

  it('DELETE with a stale ETag is 412 and keeps the bike; with the current one it deletes', async () => {
    const { bike, etag } = await created();
    const changed = await send(first, 'PATCH', `/bikes/${bike.id}`, { vendor: 'changed' });
    const stale = await send(second, 'DELETE', `/bikes/${bike.id}`, undefined, { 'if-match': etag });
    expect(stale.status).toBe(412);
    expect((await read(first, bike.id)).status).toBe(200);
    const current = await send(second, 'DELETE', `/bikes/${bike.id}`, undefined, {
      'if-match': changed.headers.etag as string,
    });
    expect(current.status).toBe(200);
    expect((await read(first, bike.id)).status).toBe(404);
  });

  it('compares strongly: the weak form of the current tag, or a tag of another catalog, matches nothing', async () => {
    const { bike, etag } = await created();
    for (const tag of [`W/${etag}`, '"not-ours"', etag.replace(/\.b\d+\.\d+"$/, '.b99999999999999999.1"')]) {
      const reply = await send(first, 'PATCH', `/bikes/${bike.id}`, { totalInventory: 9 }, { 'if-match': tag });
      expect({ tag, status: reply.status }).toEqual({ tag, status: 412 });
    }
    expect(json(await read(first, bike.id)).totalInventory).toBe(bike.totalInventory);
    // One tag of a list that matches is enough.
    const listed = await send(
      first,
      'PATCH',
      `/bikes/${bike.id}`,
      { totalInventory: 9 },
      {
        'if-match': `"other", ${etag}`,
      },
    );
    expect(listed.status).toBe(200);
  });

  it('If-Match: * needs the bike: PUT on a missing id is 412 and creates nothing; on an existing one it writes', async () => {
    const id = randomUUID();
    const missing = await send(first, 'PUT', `/bikes/${id}`, { ...newBike(), id, handle: 'h' }, { 'if-match': '*' });
    expect(missing.status).toBe(412);
    expect((await read(first, id)).status).toBe(404);

    const { bike } = await created();
    const existing = await send(
      first,
      'PUT',
      `/bikes/${bike.id}`,
      { ...newBike(), id: bike.id, handle: 'h' },
      {
        'if-match': '*',
      },
    );
    expect(existing.status).toBe(200);
  });

  it('If-None-Match: * on PUT creates only: 200 for a new id, then 412 for the same id, which stays as created', async () => {
    const id = randomUUID();
    const fields = { ...newBike(), id, handle: 'first' };
    const made = await send(first, 'PUT', `/bikes/${id}`, fields, { 'if-none-match': '*' });
    expect(made.status).toBe(200);
    const again = await send(second, 'PUT', `/bikes/${id}`, { ...fields, handle: 'second' }, { 'if-none-match': '*' });
    expect(again.status).toBe(412);
    expect(json(await read(first, id)).handle).toBe('first');
  });

  it('reads each field as a list, as a field sent twice arrives: `*` twice or beside a tag is `*`, and an empty If-Match matches nothing', async () => {
    const { bike } = await created();
    const replacement = { ...newBike(), id: bike.id, handle: 'overwritten' };
    for (const ifNoneMatch of [['*', '*'], '*, *', '*, "x"', ['*', '"x"']]) {
      const reply = await send(first, 'PUT', `/bikes/${bike.id}`, replacement, { 'if-none-match': ifNoneMatch });
      expect({ ifNoneMatch, status: reply.status }).toEqual({ ifNoneMatch, status: 412 });
    }
    expect(json(await read(first, bike.id)).handle).toBe(bike.handle);
    expect((await send(first, 'PATCH', `/bikes/${bike.id}`, { vendor: 'x' }, { 'if-match': '' })).status).toBe(412);
    expect((await send(first, 'DELETE', `/bikes/${bike.id}`, undefined, { 'if-match': ['', ''] })).status).toBe(412);
    expect((await send(first, 'PATCH', `/bikes/${bike.id}`, { vendor: 'x' }, { 'if-match': ['*', '*'] })).status).toBe(
      200,
    );
  });

  it('evaluates both fields (RFC 9110 13.2.2): the current tag in If-Match with If-None-Match: * is 412, and If-None-Match naming the current state is 412', async () => {
    const { bike, etag } = await created();
    const both = { 'if-match': etag, 'if-none-match': '*' };
    expect((await send(first, 'PATCH', `/bikes/${bike.id}`, { vendor: 'x' }, both)).status).toBe(412);
    const replacement = { ...newBike(), id: bike.id, handle: 'h' };
    expect((await send(first, 'PUT', `/bikes/${bike.id}`, replacement, both)).status).toBe(412);
    expect((await send(first, 'DELETE', `/bikes/${bike.id}`, undefined, both)).status).toBe(412);
    // If-None-Match with tags: the weak comparison, so the weak form of the current tag is the current state.
    for (const tag of [etag, `W/${etag}`]) {
      const reply = await send(first, 'PUT', `/bikes/${bike.id}`, replacement, { 'if-none-match': tag });
      expect({ tag, status: reply.status }).toEqual({ tag, status: 412 });
    }
    expect(json(await read(first, bike.id)).handle).toBe(bike.handle);
    const other = await send(first, 'PUT', `/bikes/${bike.id}`, replacement, { 'if-none-match': '"another"' });
    expect(other.status).toBe(200);
    const patched = await send(first, 'PATCH', `/bikes/${bike.id}`, { vendor: 'y' }, { 'if-none-match': etag });
    expect(patched.status).toBe(200);
  });

  it('answers in order (docs/reference/requests-and-answers.md#the-order-of-a-writes-answers): 401, then 404 for a missing bike (PATCH, DELETE), then 412, then the fields', async () => {
    const { bike, etag } = await created();
    const stale = { 'if-match': '"stale"' };
    const noToken = await rawRequest(first.baseUrl, 'DELETE', `/bikes/${bike.id}`, stale);
    expect(noToken.status).toBe(401);
    const missing = randomUUID();
    expect((await send(first, 'PATCH', `/bikes/${missing}`, { title: 5 }, stale)).status).toBe(404);
    expect((await send(first, 'DELETE', `/bikes/${missing}`, undefined, { 'if-match': etag })).status).toBe(404);
    // A body that fails its checks, under a precondition that does not hold: the 412 first.
    expect((await send(first, 'PUT', `/bikes/${bike.id}`, { title: 'x' }, stale)).status).toBe(412);
    expect((await send(first, 'PATCH', `/bikes/${bike.id}`, { title: 5 }, stale)).status).toBe(412);
    // Under one that holds, the body's own status.
    expect((await send(first, 'PUT', `/bikes/${bike.id}`, { title: 'x' }, { 'if-match': etag })).status).toBe(404);
    expect((await send(first, 'PATCH', `/bikes/${bike.id}`, { title: 5 }, { 'if-match': etag })).status).toBe(400);
    expect(json(await read(first, bike.id)).title).toBe(bike.title);
  });

  it('a 412 leaves the connection usable for the next request', async () => {
    const { bike } = await created();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const request = (method: string, headers: Record<string, string>, body?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(`${first.baseUrl}/bikes/${bike.id}`, { method, headers, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode as number));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      const body = JSON.stringify({ description: 'x'.repeat(100_000) });
      const headers = { authorization: `Bearer ${token}`, 'if-match': '"stale"', 'content-type': 'application/json' };
      expect(await request('PATCH', headers, body)).toBe(412);
      expect(await request('GET', {})).toBe(200);
      expect(await request('GET', {})).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  it('a write by plain SQL changes the ETag too, so an editor holding the old one gets 412', async () => {
    const { bike, etag } = await created();
    const sql = new Client({ connectionString: first.databaseUrl });
    await sql.connect();
    try {
      await sql.query(`UPDATE bikes SET vendor = 'by SQL' WHERE id = $1`, [bike.id]);
    } finally {
      await sql.end();
    }
    expect((await read(first, bike.id)).headers.etag).not.toBe(etag);
    expect((await send(first, 'PATCH', `/bikes/${bike.id}`, { title: 'x' }, { 'if-match': etag })).status).toBe(412);
  });

  it('a compressed answer names its coding in its ETag, and either tag stands for the same state', async () => {
    const { bike } = await created();
    const long = await send(first, 'PATCH', `/bikes/${bike.id}`, { description: 'long '.repeat(400) });
    const plainTag = long.headers.etag as string;
    const gzipped = await rawRequest(first.baseUrl, 'GET', `/bikes/${bike.id}`, { 'accept-encoding': 'gzip' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.etag).toBe(`${plainTag.slice(0, -1)}-gzip"`);
    expect(JSON.parse(zlib.gunzipSync(gzipped.body).toString('utf8'))).toEqual(json(long));
    const notModified = await rawRequest(first.baseUrl, 'GET', `/bikes/${bike.id}`, {
      'accept-encoding': 'gzip',
      'if-none-match': plainTag,
    });
    expect(notModified.status).toBe(304);
    // The 304 and the HEAD carry what the 200 would: the coded tag, its coding and its length.
    expect(notModified.headers.etag).toBe(gzipped.headers.etag);
    expect(notModified.headers.vary).toMatch(/Accept-Encoding/);
    const head = await rawRequest(first.baseUrl, 'HEAD', `/bikes/${bike.id}`, { 'accept-encoding': 'gzip' });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    for (const header of ['etag', 'content-encoding', 'content-length', 'content-type', 'vary', 'cache-control']) {
      expect({ header, value: head.headers[header] }).toEqual({ header, value: gzipped.headers[header] });
    }
    const written = await send(
      first,
      'PATCH',
      `/bikes/${bike.id}`,
      { totalInventory: 2 },
      {
        'if-match': gzipped.headers.etag as string,
      },
    );
    expect(written.status).toBe(200);
  });
});

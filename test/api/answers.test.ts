import http from 'node:http';
import { client, type Client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';

/**
 * What review issue 30 found the answers did not keep (items 11-15), each through the real server:
 * what the OpenAPI document promises of them.
 */
interface HeaderObject {
  required?: boolean;
}
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, HeaderObject> }> }>>;
}

/** A GET by node:http, for the header names as they went over the wire (fetch lowercases them). */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; names: string[] }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const names = res.rawHeaders.filter((_, i) => i % 2 === 0);
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, names }));
      })
      .on('error', reject);
  });
}

describe('the answers of the API', () => {
  let svc: TestService;
  let api: Client;
  let document: Document;
  beforeAll(async () => {
    svc = await startTestService({ env: { CORS_ORIGIN: 'https://shop.example' } });
    api = client(svc.baseUrl, await svc.token());
    document = (await (await fetch(`${svc.baseUrl}/openapi.json`)).json()) as Document;
  });
  afterAll(() => svc.stop());

  it('refuses a query parameter a route does not know, 400 naming it, on every route (item 14)', async () => {
    const bike = await api.create(newBike());
    for (const target of [
      '/bikes/changes?Since=abc',
      '/bikes/search/by-title?Query=Hybrid',
      '/bikes?Vendor=x',
      '/bikes/all?limit=1',
      `/bikes/${bike.id}?fields=title`,
      `/bikes/by-handle/${bike.handle}?Since=abc`,
    ]) {
      const res = await api.request('GET', target);
      const name = new URLSearchParams(target.split('?')[1]).keys().next().value;
      expect({ target, status: res.status, field: res.headers.get('x-invalid-field') }).toEqual({
        target,
        status: 400,
        field: `query.${name}`,
      });
    }
    // A name that is not plain is not echoed.
    const odd = await api.request('GET', '/bikes/changes?%3Cscript%3E=1');
    expect(odd.status).toBe(400);
    expect(odd.headers.get('x-invalid-field')).toBeNull();
    // PUT answers every failure 404, as the specification says.
    const { id, handle: _handle, ...fields } = bike;
    expect((await api.request('PUT', `/bikes/${id}?dryRun=1`, { body: fields })).status).toBe(404);
    expect((await api.request('GET', '/bikes/changes?since=')).status).toBe(400);
  });

  it('answers a read whose If-Match does not hold 412, and one that holds as without it (RFC 9110 13.1.1; item 15)', async () => {
    const bike = await api.create(newBike());
    const read = await api.request('GET', `/bikes/${bike.id}`);
    const tag = read.headers.get('etag') as string;
    expect((await api.request('GET', `/bikes/${bike.id}`, { headers: { 'if-match': '"other"' } })).status).toBe(412);
    expect((await api.request('GET', `/bikes/${bike.id}`, { headers: { 'if-match': tag } })).status).toBe(200);
    expect((await api.request('GET', `/bikes/${bike.id}`, { headers: { 'if-match': '*' } })).status).toBe(200);
    // A list's tag is weak: the strong comparison of If-Match never matches it.
    const list = await api.request('GET', '/bikes/all');
    const weak = list.headers.get('etag') as string;
    expect(weak).toMatch(/^W\//);
    expect((await api.request('GET', '/bikes/all', { headers: { 'if-match': weak } })).status).toBe(412);
    expect((await api.request('HEAD', '/bikes?limit=1', { headers: { 'if-match': weak } })).status).toBe(412);
    expect((await api.request('GET', '/bikes/all', { headers: { 'if-match': '*' } })).status).toBe(200);
  });

  it("spells X-Request-Id as the registry does on an event stream's error answer (item 15)", async () => {
    const refused = await rawGet(`${svc.baseUrl}/bikes/changes`, {
      accept: 'text/event-stream',
      'last-event-id': 'not-a-cursor',
    });
    expect(refused.status).toBe(400);
    expect(refused.names).toContain('X-Request-Id');
    expect(refused.names).not.toContain('x-request-id');
  });

  it("gives a 304 of a list the validators, not the list's Catalog-Cursor (RFC 9110 15.4.5; item 12)", async () => {
    for (const target of ['/bikes/all', '/bikes/search/by-title?query=a', '/bikes?limit=2']) {
      const first = await api.request('GET', target);
      expect(first.headers.get('catalog-cursor')).not.toBeNull();
      const again = await api.request('GET', target, { headers: { 'if-none-match': first.headers.get('etag') ?? '' } });
      expect({ target, status: again.status, cursor: again.headers.get('catalog-cursor') }).toEqual({
        target,
        status: 304,
        cursor: null,
      });
    }
  });

  it('sends the rate limit on every answer from the limit on, and declares it there, required; a 401 comes before it (item 11)', async () => {
    const create = document.paths['/bikes/'].post.responses;
    expect(create['200'].headers?.RateLimit).toMatchObject({ required: true });
    expect(create['415'].headers?.RateLimit).toMatchObject({ required: true });
    expect(create['401'].headers?.RateLimit).toBeUndefined();
    // 403 comes before it (a token refused) and after it (a key revoked since, refused by the write's
    // own statement: docs/reference/callers.md#api-keys): declared, not required.
    expect(create['403'].headers?.RateLimit).toEqual(expect.not.objectContaining({ required: true }));
    // 404 on an update: a malformed id (before the limit) or a missing bike (after): declared, not required.
    const update = document.paths['/bikes/{id}'].patch.responses;
    expect(update['404'].headers?.RateLimit).toEqual(expect.not.objectContaining({ required: true }));

    const created = await api.request('POST', '/bikes', { body: newBike() });
    expect(created.headers.get('ratelimit')).toMatch(/^"writes";r=\d+;t=\d+$/);
    const coded = await api.request('POST', '/bikes', {
      body: JSON.stringify(newBike()),
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' },
    });
    expect(coded.status).toBe(415);
    expect(coded.headers.get('ratelimit')).toMatch(/^"writes";r=\d+;t=\d+$/);
    const anonymous = await fetch(`${svc.baseUrl}/bikes`, { method: 'POST', body: '{}' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('ratelimit')).toBeNull();
    const missing = await api.request('PATCH', `/bikes/${crypto.randomUUID()}`, { body: { title: 'x' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('ratelimit')).not.toBeNull();
  });

  it('lets a page send a compressed body: the preflight of every body route allows Content-Encoding (item 13)', async () => {
    for (const [method, path] of [
      ['POST', '/bikes'],
      ['PATCH', `/bikes/${crypto.randomUUID()}`],
      ['POST', '/api/user'],
    ]) {
      const res = await fetch(`${svc.baseUrl}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://shop.example',
          'access-control-request-method': method,
          'access-control-request-headers': 'content-type,content-encoding',
        },
      });
      expect(res.status).toBe(204);
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
      expect({ method, path, allowed }).toEqual({
        method,
        path,
        allowed: expect.arrayContaining(['content-encoding']),
      });
    }
  });
});

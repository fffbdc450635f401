import { gzipSync } from 'node:zlib';
import { type Bike, expectExactShape, expectPlainError, newBike, rawRequest, unknownId, useApi } from './helpers';

const MB = 1024 * 1024;

function allowOf(res: { headers: Headers }): string[] {
  return (res.headers.get('allow') ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean)
    .sort();
}

describe('HTTP behaviour shared by every route', () => {
  const api = useApi();

  describe('405 with an Allow header for a known path and a method it does not serve', () => {
    const id = '3f2b8c4e-0c1d-4e5f-9a6b-7c8d9e0f1a2b';
    const cases: Array<[string, string, string[]]> = [
      ['GET', '/api/user', ['POST']],
      ['PUT', '/api/user', ['POST']],
      ['PATCH', '/api/user', ['POST']],
      ['DELETE', '/api/user', ['POST']],
      // The list's path: only its GET and HEAD, never the id route's writes (path matching).
      ['POST', '/bikes/all', ['GET', 'HEAD']],
      ['POST', '/bikes/all/', ['GET', 'HEAD']],
      ['PUT', '/bikes/all', ['GET', 'HEAD']],
      ['PATCH', '/bikes/all', ['GET', 'HEAD']],
      ['DELETE', '/bikes/changes', ['GET', 'HEAD']],
      ['POST', '/bikes/ALL', ['DELETE', 'GET', 'HEAD', 'PATCH', 'PUT']],
      ['POST', '/bikes/search/by-title', ['GET', 'HEAD']],
      ['DELETE', '/bikes/search/by-title?query=x', ['GET', 'HEAD']],
      ['POST', '/bikes/by-handle/some-handle', ['GET', 'HEAD']],
      ['PUT', '/bikes/by-handle/some-handle', ['GET', 'HEAD']],
      ['DELETE', '/bikes/by-handle/some-handle', ['GET', 'HEAD']],
      ['POST', `/bikes/${id}`, ['DELETE', 'GET', 'HEAD', 'PATCH', 'PUT']],
      ['PATCH', '/bikes/', ['GET', 'HEAD', 'POST']],
      ['PATCH', '/bikes', ['GET', 'HEAD', 'POST']],
      ['PUT', '/bikes/', ['GET', 'HEAD', 'POST']],
      ['DELETE', '/bikes', ['GET', 'HEAD', 'POST']],
      ['PURGE', '/bikes/all', ['GET', 'HEAD']],
    ];

    it.each(cases)('%s %s answers 405, Allow: %j', async (method, path, allowed) => {
      const res = await api.request(method, path, { token: null });
      expectPlainError(res, 405, 'Method Not Allowed');
      expect(allowOf(res)).toEqual(allowed);
    });

    it('answers 405 before the token check: a known path never serves that method', async () => {
      expect((await api.request('PUT', '/bikes/', { token: null })).status).toBe(405);
      expect((await api.request('POST', `/bikes/${id}`, { token: 'bad' })).status).toBe(405);
    });

    it('a method refused with 405 changes nothing', async () => {
      const before = await api.all();
      await api.request('POST', '/bikes/all', { json: newBike() });
      await api.request('PUT', '/bikes/', { json: newBike() });
      expect(await api.all()).toEqual(before);
    });
  });

  describe('OPTIONS', () => {
    it.each([
      ['/bikes/all', ['GET', 'HEAD']],
      ['/bikes/', ['GET', 'HEAD', 'POST']],
      [`/bikes/${unknownId()}`, ['DELETE', 'GET', 'HEAD', 'PATCH', 'PUT']],
      ['/api/user', ['POST']],
    ])('on %s answers 204 with Allow: %j', async (path, allowed) => {
      const res = await api.request('OPTIONS', path, { token: null });
      expect(res.status).toBe(204);
      expect(allowOf(res)).toEqual(allowed);
      expect(res.text).toBe('');
    });

    it('on an unknown path answers 404', async () => {
      expect((await api.request('OPTIONS', '/nothing/here', { token: null })).status).toBe(404);
    });
  });

  describe('HEAD works wherever GET does', () => {
    let bike: Bike;
    beforeAll(async () => {
      bike = await api.create();
    });

    it.each([
      ['/bikes/all', 200],
      ['/bikes/search/by-title?query=Hybrid', 200],
      ['/bikes/by-handle/__HANDLE__', 200],
      ['/bikes/__ID__', 200],
      ['/bikes/by-handle/no-such-handle-at-all', 404],
      [`/bikes/${unknownId()}`, 404],
      ['/bikes/not-a-uuid', 404],
      ['/bikes/search/by-title?query=a&query=b', 400],
    ])("HEAD %s answers %i like GET, with GET's headers and no body", async (template, status) => {
      const path = template.replace('__HANDLE__', encodeURIComponent(bike.handle)).replace('__ID__', bike.id);
      const get = await api.request('GET', path, { token: null });
      const head = await api.request('HEAD', path, { token: null });
      expect(get.status).toBe(status);
      expect(head.status).toBe(status);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(head.text).toBe('');
    });

    it('HEAD changes nothing', async () => {
      const before = await api.all();
      await api.request('HEAD', '/bikes/all');
      await api.request('HEAD', `/bikes/${bike.id}`);
      expect(await api.all()).toEqual(before);
    });
  });

  describe('trailing slash', () => {
    it('POST /bikes and POST /bikes/ are the same route: both create', async () => {
      for (const path of ['/bikes', '/bikes/']) {
        const fields = newBike();
        const res = await api.request('POST', path, { json: fields });
        expect(res.status).toBe(200);
        const bike = res.json<Bike>();
        expect(await api.find(bike.id)).toEqual(bike);
      }
    });

    it('POST /bikes checks the token and the body like POST /bikes/', async () => {
      expect((await api.request('POST', '/bikes', { json: newBike(), token: null })).status).toBe(401);
      expect((await api.request('POST', '/bikes', { json: newBike(), token: 'bad' })).status).toBe(403);
      expect((await api.request('POST', '/bikes', { json: {} })).status).toBe(400);
    });

    it('a trailing slash on the read paths reaches the same resource', async () => {
      const bike = await api.create();
      expect((await api.request('GET', `/bikes/${bike.id}/`, { token: null })).json()).toEqual(bike);
      expect(
        (await api.request('GET', `/bikes/by-handle/${encodeURIComponent(bike.handle)}/`, { token: null })).json(),
      ).toEqual(bike);
      expect((await api.request('GET', '/bikes/all/', { token: null })).json()).toEqual(await api.all());
      const search = await api.request('GET', `/bikes/search/by-title/?query=${encodeURIComponent(bike.title)}`, {
        token: null,
      });
      expect(search.json()).toEqual([bike]);
    });
  });

  describe('path matching (docs/reference/http.md#path-matching)', () => {
    const otherSpellings = ['/bikes/ALL', '/bikes/All', '/bikes/%61ll', '/bikes/%61LL', '/bikes/ALL/'];

    it.each(otherSpellings)(
      'when the path is %s, not literally /bikes/all, GET and HEAD answer 404 (an id that is not a UUID), not the list',
      async (path) => {
        expectPlainError(await api.request('GET', path, { token: null }), 404, 'Not Found');
        expect((await api.request('HEAD', path, { token: null })).status).toBe(404);
      },
    );

    it.each(
      ['PUT', 'PATCH', 'DELETE'].flatMap((method) =>
        ['/bikes/all', '/bikes/all/', '/bikes/changes'].map((path) => [method, path]),
      ),
    )(
      'when %s asks for %s, the path of another operation, it is 405, Allow: GET, HEAD, before any token',
      async (method, path) => {
        const json = method === 'DELETE' ? undefined : { ...newBike(), id: 'all', handle: 'all' };
        for (const token of [null, 'bad', undefined]) {
          const res = await api.request(method, path, { json, token });
          expectPlainError(res, 405, 'Method Not Allowed');
          expect(allowOf(res)).toEqual(['GET', 'HEAD']);
        }
      },
    );

    it.each(['PUT', 'PATCH', 'DELETE'].flatMap((method) => otherSpellings.map((path) => [method, path])))(
      'when %s asks for %s, it is the id route: 401 without a token, 403 with a bad one, 404 (not a UUID) with a valid one',
      async (method, path) => {
        const json = method === 'DELETE' ? undefined : { ...newBike(), id: 'all', handle: 'all' };
        expectPlainError(await api.request(method, path, { json, token: null }), 401, 'Unauthorized');
        expectPlainError(
          await api.request(method, path, { json, token: 'bad' }),
          403,
          'Forbidden: the token is malformed or lacks a claim this service requires',
        );
        expectPlainError(await api.request(method, path, { json }), 404, 'Not Found');
      },
    );

    it.each([
      ['GET', '/BIKES/all'],
      ['GET', '/Bikes/all'],
      ['POST', '/BIKES/'],
      ['POST', '/Bikes'],
      ['POST', '/API/USER'],
      ['POST', '/api/User'],
      ['GET', '/bikes/BY-HANDLE/__HANDLE__'],
      ['GET', '/bikes/By-Handle/__HANDLE__'],
      ['GET', '/bikes/search/BY-TITLE?query=x'],
      ['GET', '/bikes/Search/by-title?query=x'],
      ['GET', '/HEALTHZ'],
      ['GET', '/OpenAPI.json'],
    ])(
      'when %s asks for %s, a known path in another case, it answers 404: paths match as written',
      async (method, path) => {
        // A handle a bike has: the path, not a missing bike, is what answers 404.
        const { handle } = await api.create();
        const json = method === 'POST' ? {} : undefined;
        expectPlainError(
          await api.request(method, path.replace('__HANDLE__', handle), { token: null, json }),
          404,
          'Not Found',
        );
      },
    );
  });

  describe('unknown paths answer 404 with a plain-text reason', () => {
    it.each([
      ['GET', '/'],
      ['GET', '/bike'],
      ['GET', '/bikes/all/extra'],
      ['GET', `/bikes/${unknownId()}/extra`],
      ['GET', '/bikes/by-handle'],
      ['GET', '/bikes/by-handle/a/b'],
      ['GET', '/bikes/search'],
      ['GET', '/api'],
      ['GET', '/api/users'],
      ['POST', '/api/users'],
      ['POST', '/api/user/extra'],
      ['DELETE', '/nothing'],
      ['PURGE', '/nothing'],
      ['GET', '//bikes/all'],
    ])('%s %s', async (method, path) => {
      expectPlainError(await api.request(method, path, { token: null }), 404, 'Not Found');
    });
  });

  describe('a path that is not valid percent-encoding answers 404', () => {
    it.each([
      ['GET', '/bikes/%ZZ'],
      ['GET', '/bikes/by-handle/%ZZ'],
      ['GET', '/bikes/by-handle/%E0%A4%A'],
      ['GET', '/bikes/by-handle/%C3%28'],
      ['GET', '/bikes/%'],
      ['PUT', '/bikes/%ZZ'],
      ['PATCH', '/bikes/%ZZ'],
      ['DELETE', '/bikes/%ZZ'],
      ['GET', '/bikes/all%ZZ'],
    ])('%s %s (with a valid token)', async (method, path) => {
      expectPlainError(
        await api.request(method, path, { json: method === 'GET' || method === 'DELETE' ? undefined : newBike() }),
        404,
        'Not Found',
      );
    });
  });

  describe('on a protected route, the token is checked before the path', () => {
    it.each([
      ['PUT', '/bikes/%ZZ'],
      ['PATCH', '/bikes/%ZZ'],
      ['DELETE', '/bikes/%ZZ'],
      ['DELETE', '/bikes/%'],
    ])('%s %s without a token answers 401, with a bad one 403', async (method, path) => {
      expectPlainError(await api.request(method, path, { token: null }), 401, 'Unauthorized');
      expectPlainError(
        await api.request(method, path, { token: 'bad' }),
        403,
        'Forbidden: the token is malformed or lacks a claim this service requires',
      );
    });

    it('POST /bikes/%ZZ, a method no /bikes/<id> route serves, on a path that names nothing, is 404', async () => {
      expectPlainError(await api.request('POST', '/bikes/%ZZ', { token: null }), 404, 'Not Found');
    });
  });

  describe('error answers', () => {
    it('carry a status and its plain-text reason phrase, never JSON', async () => {
      expectPlainError(await api.request('GET', `/bikes/${unknownId()}`), 404, 'Not Found');
      expectPlainError(await api.request('POST', '/bikes/', { json: {} }), 400, 'Bad Request');
      expectPlainError(await api.request('POST', '/bikes/', { json: {}, token: null }), 401, 'Unauthorized');
      expectPlainError(
        await api.request('POST', '/bikes/', { json: {}, token: 'bad' }),
        403,
        'Forbidden: the token is malformed or lacks a claim this service requires',
      );
      expectPlainError(await api.request('POST', '/bikes/all'), 405, 'Method Not Allowed');
    });
  });

  describe('request bodies', () => {
    /** `fields` as JSON of exactly `size` bytes, padded in the description. */
    function jsonOfSize(fields: Record<string, unknown>, size: number): string {
      const base = JSON.stringify({ ...fields, description: '' });
      const body = base.replace('"description":""', `"description":"${'d'.repeat(size - base.length)}"`);
      expect(Buffer.byteLength(body)).toBe(size);
      return body;
    }

    it('a JSON body of exactly 1 MB (1,048,576 bytes) is accepted and stored whole', async () => {
      const body = jsonOfSize({ ...newBike() }, MB);
      const res = await rawRequest(
        api.baseUrl,
        'POST',
        '/bikes/',
        { 'content-type': 'application/json', authorization: `Bearer ${api.token}` },
        body,
      );
      expect(res.status).toBe(200);
      const bike = JSON.parse(res.text) as Bike;
      expect((await api.find(bike.id))?.description).toBe(JSON.parse(body).description);
    });

    it.each([
      ['POST', '/bikes/'],
      ['PUT', '/bikes/__ID__'],
      ['PATCH', '/bikes/__ID__'],
      ['POST', '/api/user'],
    ])('%s %s: a JSON body one byte over 1 MB answers 413 and stores nothing', async (method, template) => {
      const bike = await api.create();
      const before = await api.all();
      const body = jsonOfSize({ ...newBike(), id: bike.id, handle: 'too-big' }, MB + 1);
      const res = await rawRequest(
        api.baseUrl,
        method,
        template.replace('__ID__', bike.id),
        { 'content-type': 'application/json', authorization: `Bearer ${api.token}` },
        body,
      );
      expect(res.status).toBe(413);
      expect(res.text).toBe('Payload Too Large');
      expect(await api.all()).toEqual(before);
    });

    it('a 2 MB JSON body answers 413; a 2 MB URL-encoded body answers 413; nothing is stored', async () => {
      const before = await api.all();
      const headers = { authorization: `Bearer ${api.token}` };
      const json = JSON.stringify({ ...newBike(), description: 'x'.repeat(2 * MB) });
      const form = `title=${'x'.repeat(2 * MB)}`;
      expect(
        (await rawRequest(api.baseUrl, 'POST', '/bikes/', { ...headers, 'content-type': 'application/json' }, json))
          .status,
      ).toBe(413);
      expect(
        (
          await rawRequest(
            api.baseUrl,
            'POST',
            '/bikes/',
            { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
            form,
          )
        ).status,
      ).toBe(413);
      expect(
        (
          await rawRequest(
            api.baseUrl,
            'POST',
            '/api/user',
            { 'content-type': 'application/x-www-form-urlencoded' },
            form,
          )
        ).status,
      ).toBe(413);
      expect(await api.all()).toEqual(before);
    });

    it('a URL-encoded body just under 1 MB is read', async () => {
      const bike = await api.create();
      const description = 'f'.repeat(MB - 100);
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { form: { description } });
      expect(res.status).toBe(200);
      expect((await api.find(bike.id))?.description).toBe(description);
    });

    it('a gzip body that inflates past 1 MB answers 413 and stores nothing', async () => {
      const before = await api.all();
      const body = gzipSync(JSON.stringify({ ...newBike(), description: 'z'.repeat(3 * MB) }));
      const res = await rawRequest(
        api.baseUrl,
        'POST',
        '/bikes/',
        { 'content-type': 'application/json', 'content-encoding': 'gzip', authorization: `Bearer ${api.token}` },
        body,
      );
      expect(res.status).toBe(413);
      expect(await api.all()).toEqual(before);
    });

    it('malformed JSON answers 400 on create, patch and the token endpoint, and 404 on replace', async () => {
      const bike = await api.create();
      const raw = '{"title": "unterminated';
      const send = (method: string, path: string) =>
        api.request(method, path, { raw, contentType: 'application/json' });
      expect((await send('POST', '/bikes/')).status).toBe(400);
      expect((await send('PATCH', `/bikes/${bike.id}`)).status).toBe(400);
      expect((await send('PUT', `/bikes/${bike.id}`)).status).toBe(404);
      expect((await send('POST', '/api/user')).status).toBe(400);
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it.each(['application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8'])(
      'a body with content type %p is read as JSON',
      async (contentType) => {
        const fields = newBike();
        const res = await api.request('POST', '/bikes/', { raw: JSON.stringify(fields), contentType });
        expect(res.status).toBe(200);
        expect(res.json<Bike>().title).toBe(fields.title);
      },
    );

    it.each([
      'text/plain',
      'application/xml',
      'application/octet-stream',
      'multipart/form-data; boundary=x',
      'text/json-ish',
    ])(
      'a body of content type %p is refused, never ignored: 400 on create and patch, 404 on replace, nothing changes',
      async (contentType) => {
        const bike = await api.create();
        const raw = JSON.stringify({ ...newBike({ title: 'Refused' }), id: bike.id, handle: 'refused' });
        expect((await api.request('POST', '/bikes/', { raw, contentType })).status).toBe(400);
        expect((await api.request('PATCH', `/bikes/${bike.id}`, { raw, contentType })).status).toBe(400);
        expect((await api.request('PUT', `/bikes/${bike.id}`, { raw, contentType })).status).toBe(404);
        expect(await api.find(bike.id)).toEqual(bike);
      },
    );

    it('a JSON body with no content type at all is refused: 400 on patch, nothing changes', async () => {
      const bike = await api.create();
      const raw = Buffer.from(JSON.stringify({ title: 'No Content-Type' }));
      const headers = { authorization: `Bearer ${api.token}` };
      expect((await rawRequest(api.baseUrl, 'POST', '/bikes/', headers, raw)).status).toBe(400);
      expect((await rawRequest(api.baseUrl, 'PATCH', `/bikes/${bike.id}`, headers, raw)).status).toBe(400);
      expect(await api.find(bike.id)).toEqual(bike);
    });

    it('a URL-encoded body is read: PATCH writes its string fields, the token endpoint its username', async () => {
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, {
        form: 'vendor=Caf%C3%A9+%26+Co&createdAt=1%2F2%2F2024',
      });
      expect(res.status).toBe(200);
      expect(await api.find(bike.id)).toEqual({ ...bike, vendor: 'Café & Co', createdAt: '1/2/2024' });
    });
  });

  describe('content codings (docs/reference/requests-and-answers.md#content-codings)', () => {
    const BODY_ROUTES = [
      ['POST', '/bikes/'],
      ['PUT', '/bikes/__ID__'],
      ['PATCH', '/bikes/__ID__'],
      ['POST', '/api/user'],
    ];
    const send = (method: string, path: string, headers: Record<string, string>, body: Buffer) =>
      rawRequest(
        api.baseUrl,
        method,
        path,
        { 'content-type': 'application/json', authorization: `Bearer ${api.token}`, ...headers },
        body,
      );

    it.each(
      ['zstd', 'compress', 'x-unknown', 'gzip, gzip', 'identity, zstd'].flatMap((coding) =>
        BODY_ROUTES.map(([method, path]) => [coding, method, path]),
      ),
    )(
      'when a body comes in Content-Encoding %j, %s %s answers 415 with Accept-Encoding: gzip, deflate, br, and nothing changes',
      async (coding, method, template) => {
        const bike = await api.create();
        const before = await api.all();
        const body = Buffer.from(JSON.stringify({ ...newBike(), id: bike.id, handle: bike.handle }));
        const res = await send(method, template.replace('__ID__', bike.id), { 'content-encoding': coding }, body);
        expect(res.status).toBe(415);
        expect(res.text).toBe('Unsupported Media Type');
        expect(res.headers['accept-encoding']).toBe('gzip, deflate, br');
        expect(await api.all()).toEqual(before);
      },
    );

    it('when a body in a coding it cannot decode comes without a token, it answers 401: the token comes first', async () => {
      const bike = await api.create();
      const res = await rawRequest(
        api.baseUrl,
        'PUT',
        `/bikes/${bike.id}`,
        { 'content-type': 'application/json', 'content-encoding': 'zstd' },
        JSON.stringify(newBike()),
      );
      expect(res.status).toBe(401);
    });

    it.each(['gzip', 'x-gzip', 'GZIP', 'X-Gzip'])(
      'when a body comes in Content-Encoding %s, it is decoded as gzip: a create, a replace and a token are made',
      async (coding) => {
        const fields = newBike();
        const created = await send('POST', '/bikes/', { 'content-encoding': coding }, gzipSync(JSON.stringify(fields)));
        expect(created.status).toBe(200);
        const bike = JSON.parse(created.text) as Bike;
        expect(await api.find(bike.id)).toEqual({ ...fields, id: bike.id, handle: bike.handle });
        const replacement = { ...newBike(), id: bike.id, handle: 'replaced' };
        const replaced = await send(
          'PUT',
          `/bikes/${bike.id}`,
          { 'content-encoding': coding },
          gzipSync(JSON.stringify(replacement)),
        );
        expect(replaced.status).toBe(200);
        expect(await api.find(bike.id)).toEqual(replacement);
        const token = await send(
          'POST',
          '/api/user',
          { 'content-encoding': coding },
          gzipSync('{"username":"zipped"}'),
        );
        expect(token.status).toBe(200);
      },
    );
  });

  describe('hostile input never produces a 5xx', () => {
    const hostileBodies: Array<[string, string | Buffer]> = [
      ['deeply nested arrays', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
      ['deeply nested objects', `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`],
      ['a deeply nested title', `{"title":${'['.repeat(50_000)}${']'.repeat(50_000)}}`],
      ['a huge exponent', '{"totalInventory": 1e999999999}'],
      ['a very long number', `{"totalInventory": ${'9'.repeat(100_000)}}`],
      ['a __proto__ key', '{"__proto__": {"title": "polluted"}, "title": "x"}'],
      ['a constructor key', '{"constructor": {"prototype": {"x": 1}}}'],
      ['invalid UTF-8 bytes', Buffer.from('{"title": "\xff\xfe\xc3"}', 'latin1')],
      ['a lone surrogate escape', '{"title": "\\udc00"}'],
      ['many keys', `{${Array.from({ length: 20_000 }, (_, i) => `"k${i}":${i}`).join(',')}}`],
      ['a BOM', '\ufeff{"title": "bom"}'],
      ['whitespace only', '   \n\t  '],
    ];

    it.each(hostileBodies)('%s, sent to every write route and the token endpoint', async (_label, raw) => {
      const bike = await api.create();
      for (const [method, path] of [
        ['POST', '/bikes/'],
        ['PUT', `/bikes/${bike.id}`],
        ['PATCH', `/bikes/${bike.id}`],
        ['POST', '/api/user'],
      ]) {
        const res = await api.request(method, path, { raw, contentType: 'application/json' });
        expect(res.status).toBeLessThan(500);
      }
      // Whatever a body did, the bike still reads back whole.
      const stored = await api.find(bike.id);
      expect(stored).not.toBeNull();
      expectExactShape(stored);
      expect(Object.getPrototypeOf({}).title).toBeUndefined();
    });

    it('a valid bike with __proto__ and constructor keys is created, and the keys are ignored', async () => {
      const fields = newBike();
      const raw = JSON.stringify(fields).replace('{', '{"__proto__":{"admin":true},"constructor":{"x":1},');
      const res = await api.request('POST', '/bikes/', { raw, contentType: 'application/json' });
      expect(res.status).toBe(200);
      const bike = res.json<Bike>();
      expect(await api.find(bike.id)).toEqual({ ...fields, id: bike.id, handle: bike.handle });
    });

    it('odd paths and queries answer 4xx', async () => {
      for (const path of [
        '/bikes/by-handle/%00%00',
        '/bikes/%00',
        `/bikes/by-handle/${'%F0%9F%9A%B2'.repeat(1000)}`,
        '/bikes/search/by-title?query=%ZZ%00',
        '/bikes/search/by-title?query[]=x',
        '/bikes/search/by-title?query[a]=x',
        `/bikes/search/by-title?${'query=x&'.repeat(500)}`,
        '/bikes/..%2F..%2Fetc%2Fpasswd',
        '/bikes/by-handle/..%2F..%2F',
      ]) {
        const res = await api.request('GET', path, { token: null });
        expect(res.status).toBeLessThan(500);
      }
    });
  });
});

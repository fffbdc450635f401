import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import {
  type Api,
  type RequestOptions,
  expectPlainError,
  newBike,
  nowSeconds,
  rawRequest,
  signToken,
  unknownId,
  unsignedToken,
  useApi,
} from './helpers';
import { tampered } from '../support/tamper';

/**
 * The bearer-token rules, across every protected route: POST /bikes/, PUT, PATCH and DELETE
 * /bikes/<id>. Each case uses a fresh bike so a wrongly allowed write would show.
 */
describe('authentication', () => {
  const api = useApi();

  interface Route {
    name: string;
    /** Sends the request against a fresh bike and returns the status and whether the catalog changed. */
    send(options: RequestOptions): Promise<{ status: number; changed: boolean }>;
  }

  function route(name: string, method: string, withBody: boolean): Route {
    return {
      name,
      async send(options) {
        const bike = await api.create();
        const path = method === 'POST' ? '/bikes/' : `/bikes/${bike.id}`;
        const json = withBody ? { ...newBike({ title: 'Written' }), id: bike.id, handle: 'written' } : undefined;
        const before = await api.all();
        const res = await api.request(method, path, { json, ...options });
        const changed = JSON.stringify(await api.all()) !== JSON.stringify(before);
        return { status: res.status, changed };
      },
    };
  }

  const routes: Route[] = [
    route('POST /bikes/', 'POST', true),
    route('PUT /bikes/<id>', 'PUT', true),
    route('PATCH /bikes/<id>', 'PATCH', true),
    route('DELETE /bikes/<id>', 'DELETE', false),
  ];
  const each = <T>(cases: T[]) => routes.flatMap((r) => cases.map((c) => [r.name, c] as const));
  const find = (name: string) => routes.find((r) => r.name === name) as Route;

  function secondsAgo(seconds: number) {
    return nowSeconds() - seconds;
  }

  describe('a missing token answers 401 and changes nothing', () => {
    const headers: Array<[string, string | null]> = [
      ['no Authorization header', null],
      ['an empty header', ''],
      ['only the word Bearer', 'Bearer'],
      ['Bearer and a trailing space', 'Bearer '],
      ['a token with no first word', '__TOKEN__'],
      ['two spaces before the token (the second element is empty)', 'Bearer  __TOKEN__'],
    ];

    it.each(each(headers))('%s with %j', async (name, [, header]) => {
      const options: RequestOptions =
        header === null ? { token: null } : { authorization: header.replace('__TOKEN__', api.token) };
      const { status, changed } = await find(name).send(options);
      expect(status).toBe(401);
      expect(changed).toBe(false);
    });
  });

  it.each(routes.map((r) => r.name))(
    'when %s has no token, it answers 401 with the challenge WWW-Authenticate: Bearer realm="bike-catalog"',
    async (name) => {
      const [method, template] = name.split(' ');
      const bike = await api.create();
      const json = method === 'DELETE' ? undefined : { ...newBike(), id: bike.id, handle: bike.handle };
      const res = await api.request(method, template.replace('<id>', bike.id), { json, token: null });
      expectPlainError(res, 401, 'Unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="bike-catalog"');
    },
  );

  describe('a token that fails verification answers 403 and changes nothing', () => {
    const badTokens: Array<[string, (api: Api) => string]> = [
      ['garbage', () => 'garbage'],
      ['three dots', () => 'a.b.c'],
      [
        'a tampered payload',
        (a) => {
          const [h, , s] = a.token.split('.');
          const payload = Buffer.from(
            JSON.stringify({ username: 'mallory', iat: nowSeconds(), exp: nowSeconds() + 1800 }),
          ).toString('base64url');
          return `${h}.${payload}.${s}`;
        },
      ],
      ['a tampered signature', (a) => tampered(a.token)],
      [
        'a token signed with another secret',
        () => signToken({ username: 'x' }, randomBytes(32).toString('hex'), { expiresIn: 1800 }),
      ],
      ['an expired token', (a) => signToken({ username: 'x', iat: secondsAgo(1801), exp: secondsAgo(1) }, a.jwtSecret)],
      [
        'a token that expired long ago',
        (a) => signToken({ username: 'x', iat: secondsAgo(100_000), exp: secondsAgo(98_200) }, a.jwtSecret),
      ],
      ['an alg: none token', () => unsignedToken({ username: 'x', iat: nowSeconds(), exp: nowSeconds() + 1800 })],
      [
        'an HS512 token with the right secret',
        (a) => jwt.sign({ username: 'x' }, a.jwtSecret, { algorithm: 'HS512', expiresIn: 1800 }),
      ],
      [
        'an HS384 token with the right secret',
        (a) => jwt.sign({ username: 'x' }, a.jwtSecret, { algorithm: 'HS384', expiresIn: 1800 }),
      ],
      [
        'a token not yet valid (nbf in the future)',
        (a) => signToken({ username: 'x', nbf: nowSeconds() + 600 }, a.jwtSecret, { expiresIn: 1800 }),
      ],
      ['a very long token', () => 'x'.repeat(100_000)],
      // docs/reference/callers.md#tokens: presented tokens live at most 1800 s, from an iat that is not ahead of us.
      ['a token with no exp, signed with the right secret', (a) => signToken({ username: 'x' }, a.jwtSecret)],
      [
        'a token with no iat, signed with the right secret',
        (a) => signToken({ username: 'x', exp: nowSeconds() + 600 }, a.jwtSecret, { noTimestamp: true }),
      ],
      [
        'a token with exp ten years ahead, signed with the right secret',
        (a) => signToken({ username: 'x' }, a.jwtSecret, { expiresIn: '3650d' }),
      ],
      [
        'a token with a lifetime of 1801 s, signed with the right secret',
        (a) => signToken({ username: 'x', iat: secondsAgo(10), exp: secondsAgo(10) + 1801 }, a.jwtSecret),
      ],
      [
        'a token issued an hour in the future, signed with the right secret',
        (a) => signToken({ username: 'x', iat: nowSeconds() + 3600, exp: nowSeconds() + 3600 + 1800 }, a.jwtSecret),
      ],
      [
        'a token issued a minute in the future, living 1800 s',
        (a) => signToken({ username: 'x', iat: nowSeconds() + 60, exp: nowSeconds() + 60 + 1800 }, a.jwtSecret),
      ],
      [
        'a token whose exp comes before its iat',
        (a) => signToken({ username: 'x', iat: nowSeconds() + 3, exp: nowSeconds() + 2 }, a.jwtSecret),
      ],
    ];

    it.each(each(badTokens))('%s with %s', async (name, [, make]) => {
      const { status, changed } = await find(name).send({ token: make(api) });
      expect(status).toBe(403);
      expect(changed).toBe(false);
    });

    it('answers a plain-text reason phrase', async () => {
      expectPlainError(
        await api.request('POST', '/bikes/', { json: newBike(), token: 'garbage' }),
        403,
        'Forbidden: the token is malformed or lacks a claim this service requires',
      );
      expectPlainError(await api.request('POST', '/bikes/', { json: newBike(), token: null }), 401, 'Unauthorized');
    });
  });

  describe('a valid token is the second space-separated element, whatever the first word', () => {
    const forms: Array<[string, string]> = [
      ['Bearer', 'Bearer __TOKEN__'],
      ['lowercase bearer', 'bearer __TOKEN__'],
      ['Token', 'Token __TOKEN__'],
      ['Basic', 'Basic __TOKEN__'],
      ['any word', 'x __TOKEN__'],
      ['more elements after the token', 'Bearer __TOKEN__ and more'],
    ];

    it.each(each(forms))('%s accepts %s', async (name, [, header]) => {
      const { status, changed } = await find(name).send({ authorization: header.replace('__TOKEN__', api.token) });
      expect(status).toBe(200);
      expect(changed).toBe(true);
    });
  });

  describe('valid tokens', () => {
    it('a token issued without a username is accepted', async () => {
      const res = await api.request('POST', '/api/user', { token: null });
      const { token } = res.json<{ token: string }>();
      expect((await api.request('POST', '/bikes/', { json: newBike(), token })).status).toBe(200);
    });

    it('a token signed with the service secret, HS256, shortly before expiry, is accepted', async () => {
      const token = signToken({ username: 'late', iat: secondsAgo(1790), exp: nowSeconds() + 10 }, api.jwtSecret);
      expect((await api.request('POST', '/bikes/', { json: newBike(), token })).status).toBe(200);
    });

    it('a token signed with the service secret, with a lifetime of exactly 1800 s, is accepted', async () => {
      const iat = secondsAgo(5);
      const token = signToken({ username: 'exact', iat, exp: iat + 1800 }, api.jwtSecret);
      expect((await api.request('POST', '/bikes/', { json: newBike(), token })).status).toBe(200);
    });

    it('a token with a shorter lifetime than 1800 s is accepted', async () => {
      const token = signToken({ username: 'short' }, api.jwtSecret, { expiresIn: 60 });
      expect((await api.request('POST', '/bikes/', { json: newBike(), token })).status).toBe(200);
    });

    it('every valid token may use every protected operation: there are no roles', async () => {
      const token = signToken({ username: 'nobody-special' }, api.jwtSecret, { expiresIn: 1800 });
      const bike = await api.create();
      expect((await api.request('PATCH', `/bikes/${bike.id}`, { json: { vendor: 'v' }, token })).status).toBe(200);
      expect((await api.request('PUT', `/bikes/${bike.id}`, { json: { ...bike, vendor: 'w' }, token })).status).toBe(
        200,
      );
      expect((await api.request('DELETE', `/bikes/${bike.id}`, { token })).status).toBe(200);
    });
  });

  describe('the order of checks: 401 and 403 come before any other answer', () => {
    it.each([
      ['POST', '/bikes/', '{ not json'],
      ['PUT', '/bikes/__ID__', '{ not json'],
      ['PATCH', '/bikes/__ID__', '{ not json'],
    ])('%s %s with malformed JSON: 401 without a token, 403 with a bad one', async (method, path, raw) => {
      const p = path.replace('__ID__', unknownId());
      expect((await api.request(method, p, { raw, contentType: 'application/json', token: null })).status).toBe(401);
      expect((await api.request(method, p, { raw, contentType: 'application/json', token: 'bad' })).status).toBe(403);
    });

    it.each([
      ['POST', '/bikes/'],
      ['PUT', '/bikes/__ID__'],
      ['PATCH', '/bikes/__ID__'],
      ['DELETE', '/bikes/__ID__'],
    ])('%s %s with an invalid body, an unknown id or a non-UUID id: 401 / 403', async (method, path) => {
      for (const id of [unknownId(), 'not-a-uuid', '12345']) {
        const p = path.replace('__ID__', id);
        expect((await api.request(method, p, { json: { totalInventory: '5' }, token: null })).status).toBe(401);
        expect((await api.request(method, p, { json: { totalInventory: '5' }, token: 'bad' })).status).toBe(403);
      }
    });

    it.each([
      ['POST', '/bikes/'],
      ['PUT', '/bikes/__ID__'],
      ['PATCH', '/bikes/__ID__'],
    ])('%s %s with a 2 MB body and no token answers 401, not 413: the body is not read', async (method, path) => {
      const body = JSON.stringify({ ...newBike(), description: 'x'.repeat(2 * 1024 * 1024) });
      const p = path.replace('__ID__', unknownId());
      const noToken = await rawRequest(api.baseUrl, method, p, { 'content-type': 'application/json' }, body);
      expect(noToken.status).toBe(401);
      const badToken = await rawRequest(
        api.baseUrl,
        method,
        p,
        { 'content-type': 'application/json', authorization: 'Bearer bad' },
        body,
      );
      expect(badToken.status).toBe(403);
    });

    it('a request with no token whose body never arrives is still answered 401', async () => {
      const { request } = await import('node:http');
      const url = new URL(api.baseUrl);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            method: 'POST',
            path: '/bikes/',
            headers: { 'content-type': 'application/json', 'content-length': '1000000' },
          },
          (res) => {
            resolve(res.statusCode ?? 0);
            res.resume();
            req.destroy();
          },
        );
        req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
        req.write('{"title": "only the start');
      });
      expect(status).toBe(401);
    });
  });

  describe('read routes and the token endpoint need no token', () => {
    it.each(['/bikes/all', '/bikes/search/by-title?query=x', '/bikes/by-handle/nothing', `/bikes/${unknownId()}`])(
      'GET %s answers the same with no token, a bad token, or a good one',
      async (path) => {
        const statuses = await Promise.all(
          [{ token: null }, { token: 'bad' }, {}].map(
            async (options) => (await api.request('GET', path, options)).status,
          ),
        );
        expect(new Set(statuses).size).toBe(1);
        expect([200, 404]).toContain(statuses[0]);
      },
    );
  });
});

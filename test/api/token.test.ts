import jwt from 'jsonwebtoken';
import { type Reply, decodeToken, expectPlainError, newBike, nowSeconds, useApi } from './helpers';

describe('POST /api/user (issue token)', () => {
  const api = useApi();

  /** Asserts a 200 token answer and returns the decoded token. */
  function tokenOf(res: Reply) {
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = res.json<{ token: string }>();
    expect(Object.keys(body)).toEqual(['token']);
    expect(typeof body.token).toBe('string');
    return { token: body.token, ...decodeToken(body.token) };
  }

  it('answers { token }: an HS256 JWT whose payload is exactly { username, iat, exp, jti }, exp = iat + 1800', async () => {
    const before = nowSeconds();
    const { token, header, payload } = tokenOf(
      await api.request('POST', '/api/user', { json: { username: 'alice' }, token: null }),
    );
    const after = nowSeconds();
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    // jti is this project's addition to the specification's payload (docs/reference/callers.md#tokens).
    expect(Object.keys(payload).sort()).toEqual(['exp', 'iat', 'jti', 'username']);
    expect(payload.username).toBe('alice');
    expect(payload.iat).toBeGreaterThanOrEqual(before);
    expect(payload.iat).toBeLessThanOrEqual(after);
    expect(payload.exp).toBe((payload.iat as number) + 1800);
    // 128 random bits, base64url.
    expect(payload.jti).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // Signed with the service's secret, HS256.
    expect(jwt.verify(token, api.jwtSecret, { algorithms: ['HS256'] })).toEqual(payload);
  });

  it('takes the username from a URL-encoded form field', async () => {
    const { payload } = tokenOf(
      await api.request('POST', '/api/user', { form: { username: 'form user' }, token: null }),
    );
    expect(payload.username).toBe('form user');
    expect(payload.exp).toBe((payload.iat as number) + 1800);
  });

  it('without a body, still issues a token, with no username in it', async () => {
    const { payload } = tokenOf(await api.request('POST', '/api/user', { token: null }));
    expect(Object.keys(payload).sort()).toEqual(['exp', 'iat', 'jti']);
    expect(payload.exp).toBe((payload.iat as number) + 1800);
  });

  it('with an empty JSON object or an empty form, issues a token with no username', async () => {
    for (const options of [{ json: {} }, { form: '' }, { raw: '', contentType: 'application/json' }]) {
      const { payload } = tokenOf(await api.request('POST', '/api/user', { ...options, token: null }));
      expect(payload.username).toBeUndefined();
    }
  });

  it('with a body of another content type, answers 400 rather than a token without the username', async () => {
    const res = await api.request('POST', '/api/user', {
      raw: '{"username":"not-read"}',
      contentType: 'text/plain',
      token: null,
    });
    expect(res.status).toBe(400);
  });

  it('with an empty body of another content type (absent), issues a token with no username', async () => {
    const res = await api.request('POST', '/api/user', { raw: '', contentType: 'text/plain', token: null });
    expect(tokenOf(res).payload.username).toBeUndefined();
  });

  it('ignores fields other than username: they do not reach the payload', async () => {
    const res = await api.request('POST', '/api/user', {
      json: { username: 'bob', admin: true, exp: 1, iat: 1, role: 'root' },
      token: null,
    });
    const { payload } = tokenOf(res);
    expect(Object.keys(payload).sort()).toEqual(['exp', 'iat', 'jti', 'username']);
    expect(payload.exp).toBe((payload.iat as number) + 1800);
    expect(payload.exp).toBeGreaterThan(nowSeconds());
  });

  it.each(['', ' ', 'Ünïcødé 🚲', 'a'.repeat(10_000), 'nul\u0000inside', '"quoted" \\ slash'])(
    'carries the string username %p exactly',
    async (username) => {
      const { payload } = tokenOf(await api.request('POST', '/api/user', { json: { username }, token: null }));
      expect(payload.username).toBe(username);
    },
  );

  it('carries a username holding a lone UTF-16 surrogate exactly (it is signed, never stored)', async () => {
    const res = await api.request('POST', '/api/user', {
      raw: '{"username":"a\\ud800b"}',
      contentType: 'application/json',
      token: null,
    });
    expect(tokenOf(res).payload.username).toBe('a\ud800b');
  });

  it.each([5, 0, true, false, null, {}, { name: 'x' }, [], ['alice']])(
    'when username is present but not a string (%p), answers 400',
    async (username) => {
      expectPlainError(await api.request('POST', '/api/user', { json: { username }, token: null }), 400, 'Bad Request');
    },
  );

  it.each(['username=a&username=b', 'username[]=a', 'username[name]=a'])(
    'when the form username %p is not a single string, answers 400',
    async (form) => {
      expect((await api.request('POST', '/api/user', { form, token: null })).status).toBe(400);
    },
  );

  it.each(['{', '{"username": "a",}', "{'username': 'a'}"])(
    'when the JSON is malformed (%s), answers 400',
    async (raw) => {
      expectPlainError(
        await api.request('POST', '/api/user', { raw, contentType: 'application/json', token: null }),
        400,
        'Bad Request',
      );
    },
  );

  it.each(['[]', '["alice"]', 'null', '"alice"'])(
    'when the JSON body is %s, not an object, answers 400',
    async (raw) => {
      expect(
        (await api.request('POST', '/api/user', { raw, contentType: 'application/json', token: null })).status,
      ).toBe(400);
    },
  );

  it('needs no token, and ignores an Authorization header, even a bad one', async () => {
    tokenOf(await api.request('POST', '/api/user', { json: { username: 'x' }, token: 'garbage' }));
    tokenOf(await api.request('POST', '/api/user', { json: { username: 'x' }, authorization: 'Bearer' }));
  });

  it('issues tokens that the protected routes accept, with or without a username', async () => {
    for (const options of [{ json: { username: 'writer' } }, { form: { username: 'form writer' } }, {}]) {
      const { token } = tokenOf(await api.request('POST', '/api/user', { ...options, token: null }));
      const res = await api.request('POST', '/bikes/', { json: newBike(), token });
      expect(res.status).toBe(200);
    }
  });

  it('issues a different token on each call, even two in the same second for the same name or for none, each valid', async () => {
    for (const options of [{ json: { username: 'same' } }, {}]) {
      const issueTwo = async () =>
        (await Promise.all([1, 2].map(() => api.request('POST', '/api/user', { ...options, token: null })))).map(
          tokenOf,
        );
      // Two at once, until both are of the same second: before jti, they were then byte-identical.
      let pair = await issueTwo();
      for (let tries = 0; tries < 100 && pair[0].payload.iat !== pair[1].payload.iat; tries++) pair = await issueTwo();
      const [first, second] = pair;
      expect(second.payload.iat).toBe(first.payload.iat);
      expect(second.payload.username).toBe(first.payload.username);
      expect(second.token).not.toBe(first.token);
      expect(second.payload.jti).not.toBe(first.payload.jti);
      for (const { token } of pair) {
        expect((await api.request('POST', '/bikes/', { json: newBike(), token })).status).toBe(200);
      }
    }
  });
});

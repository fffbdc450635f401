import { createHmac, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import jwt from 'jsonwebtoken';
import pino from 'pino';
import { operatorToken } from '../../src/auth/tokens';
import { readConfig } from '../../src/config';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import {
  AUDIENCE,
  ISSUER,
  type ProviderKey,
  providerKey,
  startProvider,
  type TestProvider,
} from '../support/identity-provider';
import { launchService } from '../support/process';
import { startTestService, type TestService } from '../support/service';

/**
 * An operator decides who may write (docs/reference/callers.md#who-may-write). With TOKEN_ISSUANCE=closed
 * POST /api/user gives no token, and a write needs a token the operator issued (`npm run token`,
 * test/ops/token-cli.test.ts) or the shop's identity provider signed: here a key set served on
 * 127.0.0.1. Every token refused is refused on each write route, and writes nothing.
 */

const CLOSED = { TOKEN_ISSUANCE: 'closed' };
const now = () => Math.floor(Date.now() / 1000);
const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A JWT with any header, its signature an HMAC-SHA256 over `key`, whatever the header claims. */
function hmacToken(header: object, payload: object, key: string): string {
  const signingInput = `${part(header)}.${part(payload)}`;
  return `${signingInput}.${createHmac('sha256', key).update(signingInput).digest('base64url')}`;
}

/** The claims of a token the provider would sign now. */
const providerClaims = () => ({ iss: ISSUER, aud: AUDIENCE, sub: 'shop-sync', iat: now(), exp: now() + 600 });

/** The statuses of a create, a replace, an update and a delete of `target` with this token. */
async function attempt(svc: TestService, target: Bike, token: string): Promise<Record<string, number>> {
  const api = client(svc.baseUrl, token);
  const { id, handle, ...fields } = target;
  const status = async (method: string, path: string, body?: unknown) =>
    (await api.request(method, path, { body })).status;
  return {
    POST: await status('POST', '/bikes/', newBike()),
    PUT: await status('PUT', `/bikes/${id}`, { id, handle, ...fields, title: 'Replaced by an attacker' }),
    PATCH: await status('PATCH', `/bikes/${id}`, { title: 'Patched by an attacker' }),
    DELETE: await status('DELETE', `/bikes/${id}`),
  };
}

const every = (status: number) => ({ POST: status, PUT: status, PATCH: status, DELETE: status });

async function allBikes(svc: TestService): Promise<Bike[]> {
  const res = await fetch(`${svc.baseUrl}/bikes/all`);
  expect(res.status).toBe(200);
  return (await res.json()) as Bike[];
}

/** A create with this token: its status. */
async function createWith(svc: TestService, token: string): Promise<number> {
  return (await client(svc.baseUrl, token).request('POST', '/bikes/', { body: newBike() })).status;
}

describe('TOKEN_ISSUANCE=closed, with an identity provider', () => {
  let rsa: ProviderKey;
  let ec: ProviderKey;
  let ps: ProviderKey;
  let provider: TestProvider;
  let open: TestService;
  let closed: TestService;
  let target: Bike;

  beforeAll(async () => {
    [rsa, ec] = await Promise.all([providerKey('RS256'), providerKey('ES256')]);
    // A key of an algorithm outside the allow-list, listed in the set all the same.
    ps = await providerKey('PS256');
    provider = await startProvider([rsa, ec, ps]);
    // The same catalog and secret, before the operator closed issuance and after.
    open = await startTestService();
    closed = await startTestService({
      databaseUrl: open.databaseUrl,
      jwtSecret: open.jwtSecret,
      env: { ...CLOSED, ...provider.env },
    });
    target = await client(closed.baseUrl, operatorToken(closed.jwtSecret, 'operator', 600)).create();
  });
  afterAll(async () => {
    await closed?.stop();
    await open?.stop();
    await provider?.stop();
  });

  describe('POST /api/user', () => {
    it.each([
      ['a JSON username', { body: { username: 'alice' } }],
      ['an empty JSON object', { body: {} }],
      ['no body', {}],
    ])('with %s, answers 403 Forbidden and gives no token', async (_name, options) => {
      const res = await client(closed.baseUrl).request('POST', '/api/user', options);
      expect(res.status).toBe(403);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await res.text()).toMatch(/^Forbidden: token issuance is closed \(TOKEN_ISSUANCE=closed\)/);
    });

    it('is documented so in /openapi.json', async () => {
      const document = (await (await fetch(`${closed.baseUrl}/openapi.json`)).json()) as {
        paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
      };
      expect(document.paths['/api/user'].post.responses['403'].description).toMatch(/TOKEN_ISSUANCE=closed/);
    });

    it('still gives tokens where issuance is open (the default)', async () => {
      expect((await client(open.baseUrl).request('POST', '/api/user', { body: {} })).status).toBe(200);
    });
  });

  describe('accepts', () => {
    it.each([
      ['an RS256 token of the identity provider', () => rsa.sign()],
      ['an ES256 token of the identity provider', () => ec.sign()],
      [
        'a token of the provider whose aud lists this service among others',
        () => rsa.sign({ aud: ['other', AUDIENCE] }),
      ],
      ["the operator's token (npm run token)", async () => operatorToken(closed.jwtSecret, 'ops', 60)],
    ])('%s, on every write', async (_name, token) => {
      const api = client(closed.baseUrl, await token());
      const bike = await api.create();
      const res = await api.request('PATCH', `/bikes/${bike.id}`, { body: { totalInventory: 1 } });
      expect(res.status).toBe(200);
      expect((await api.request('DELETE', `/bikes/${bike.id}`)).status).toBe(200);
    });
  });

  describe('refuses with 403 on every write, writing nothing,', () => {
    const refused: [string, () => Promise<string> | string][] = [
      ['a token of POST /api/user issued before issuance was closed', () => open.token('alice')],
      [
        'an anonymous token of POST /api/user issued before',
        async () => {
          const res = await fetch(`${open.baseUrl}/api/user`, { method: 'POST' });
          return ((await res.json()) as { token: string }).token;
        },
      ],
      ['an expired token of the provider', () => rsa.sign({ iat: now() - 700, exp: now() - 100 })],
      ['a token of the provider expired 10 s ago (beyond 5 s of clock skew)', () => ec.sign({ exp: now() - 10 })],
      ['a token of the provider for another audience', () => rsa.sign({ aud: 'another-service' })],
      ['a token of the provider without an audience', () => rsa.sign({ aud: undefined })],
      ['a token of another issuer, signed by a key of the set', () => rsa.sign({ iss: 'https://elsewhere.example/' })],
      ['a token of the provider without an issuer', () => rsa.sign({ iss: undefined })],
      ['a token of the provider not valid yet (nbf in 2 minutes)', () => rsa.sign({ nbf: now() + 120 })],
      ['a token of the provider issued 2 minutes in the future', () => ec.sign({ iat: now() + 120 })],
      ['a token of the provider without exp', () => rsa.sign({ exp: undefined })],
      ['a token of the provider without sub', () => rsa.sign({ sub: undefined })],
      ['a token of the provider with an empty sub', () => rsa.sign({ sub: '' })],
      ['a token of the provider whose sub is a number', () => rsa.sign({ sub: 42 })],
      ['a token of the provider whose sub is an object', () => ec.sign({ sub: { name: 'admin' } })],
      ['a token of the provider whose sub is an array', () => rsa.sign({ sub: ['admin'] })],
      ["alg none with the provider's claims", () => `${part({ alg: 'none', typ: 'JWT' })}.${part(providerClaims())}.`],
      [
        "HS256 signed with the provider's RSA public key, PEM (algorithm confusion)",
        () => hmacToken({ alg: 'HS256', typ: 'JWT', kid: rsa.kid }, providerClaims(), rsa.publicPem),
      ],
      [
        "HS256 signed with the provider's EC public key as its JWK (algorithm confusion)",
        () => hmacToken({ alg: 'HS256', typ: 'JWT', kid: ec.kid }, providerClaims(), JSON.stringify(ec.jwk)),
      ],
      [
        "RS256 in the header over an HMAC of the service's own secret",
        () => hmacToken({ alg: 'RS256', typ: 'JWT', kid: rsa.kid }, providerClaims(), closed.jwtSecret),
      ],
      ['a token signed by a key not in the set', async () => (await providerKey('RS256')).sign()],
      [
        'a token signed by a key not in the set that names a key of the set',
        async () => (await providerKey('ES256', ec.kid)).sign(),
      ],
      ['an RS256 token naming the ES256 key of the set', () => rsa.sign({}, { kid: ec.kid })],
      [
        'a token carrying its own key in its header (jwk)',
        async () => {
          const stranger = await providerKey('ES256');
          return stranger.sign({}, { jwk: stranger.jwk });
        },
      ],
      ['a PS256 token (outside RS256 and ES256), though the set lists its key', () => ps.sign()],
      [
        'a token of the provider whose payload was changed after signing',
        async () => {
          const [header, , signature] = (await rsa.sign()).split('.');
          return `${header}.${part({ ...providerClaims(), sub: 'admin' })}.${signature}`;
        },
      ],
      [
        "an HS256 token over the service's secret claiming the provider's issuer",
        () =>
          jwt.sign({ sub: 'x', iss: ISSUER, aud: AUDIENCE }, closed.jwtSecret, { algorithm: 'HS256', expiresIn: 600 }),
      ],
      [
        "an operator's token living longer than 1800 s",
        () =>
          jwt.sign({ username: 'ops' }, closed.jwtSecret, {
            algorithm: 'HS256',
            expiresIn: 3600,
            issuer: 'urn:bike-catalog:operator',
          }),
      ],
      [
        "an operator's token that has expired",
        () =>
          jwt.sign(
            { username: 'ops', iat: now() - 700, exp: now() - 100, iss: 'urn:bike-catalog:operator' },
            closed.jwtSecret,
            {
              algorithm: 'HS256',
            },
          ),
      ],
      [
        "an operator's token signed with another secret",
        () => operatorToken('another-secret-of-32-bytes-or-more-0123456789', 'ops', 600),
      ],
    ];

    it.each(refused)('%s', async (_name, token) => {
      const before = await allBikes(closed);
      expect(await attempt(closed, target, await token())).toEqual(every(403));
      expect(await allBikes(closed)).toEqual(before);
    });
  });

  it("a token of POST /api/user still writes where issuance is open (so the 403 above is the operator's closing)", async () => {
    expect(await createWith(open, await open.token('alice'))).toBe(200);
  });
});

describe("the identity provider's key set", () => {
  let provider: TestProvider;
  afterEach(() => provider?.stop());

  /** What the service logged, each line parsed. */
  let logged: Array<{ level: number; msg: string; err?: string }> = [];
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logged.push(JSON.parse(line));
      done();
    },
  });
  beforeEach(() => (logged = []));

  /** A closed service on its own database, trusting `provider`. */
  const serviceFor = (keySetTiming?: { maxAgeMs: number; cooldownMs: number }) =>
    startTestService({
      env: { ...CLOSED, ...provider.env },
      tuning: keySetTiming && { keySetTiming },
      logger: pino({ level: 'warn' }, capture),
    });

  it('a key added by a rotation is accepted from its first token, without a restart; the key it replaced is refused from then on', async () => {
    const [old, next] = await Promise.all([providerKey('RS256'), providerKey('ES256')]);
    provider = await startProvider([old]);
    const svc = await serviceFor();
    try {
      const oldToken = await old.sign();
      expect(await createWith(svc, oldToken)).toBe(200);
      provider.serve([next]);
      // Within the second after the set was fetched: the token waits for the cooldown, not refused.
      expect(await createWith(svc, await next.sign())).toBe(200);
      const before = await allBikes(svc);
      for (const token of [oldToken, await old.sign()]) {
        expect(await attempt(svc, before[0], token)).toEqual(every(403));
      }
      expect(await allBikes(svc)).toEqual(before);
    } finally {
      await svc.stop();
    }
  });

  it('a key withdrawn is refused once the set is older than its age, even before any token of another key', async () => {
    const [old, next] = await Promise.all([providerKey('ES256'), providerKey('RS256')]);
    provider = await startProvider([old]);
    const svc = await serviceFor({ maxAgeMs: 1_000, cooldownMs: 1_000 });
    try {
      expect(await createWith(svc, await old.sign())).toBe(200);
      provider.serve([next]);
      await sleep(1_500);
      const before = await allBikes(svc);
      expect(await attempt(svc, before[0], await old.sign())).toEqual(every(403));
      expect(await allBikes(svc)).toEqual(before);
      expect(await createWith(svc, await next.sign())).toBe(200);
    } finally {
      await svc.stop();
    }
  });

  it('tokens naming keys the set lacks make the service fetch it at most once a second', async () => {
    const known = await providerKey('RS256');
    provider = await startProvider([known]);
    const svc = await serviceFor();
    try {
      expect(await createWith(svc, await known.sign())).toBe(200);
      const strangers = await Promise.all(Array.from({ length: 20 }, () => providerKey('ES256')));
      const before = provider.fetches();
      const started = Date.now();
      const statuses = await Promise.all(strangers.map(async (key) => createWith(svc, await key.sign())));
      const elapsedSeconds = (Date.now() - started) / 1000;
      expect(statuses).toEqual(strangers.map(() => 403));
      expect(provider.fetches() - before).toBeLessThanOrEqual(Math.ceil(elapsedSeconds) + 1);
    } finally {
      await svc.stop();
    }
  });

  it.each([
    ['answers 500', 500 as const],
    ['answers something that is not a key set', 'not a key set' as const],
  ])(
    "when it %s, a provider's token is 503 with Retry-After and writes nothing; the operator's tokens still write; once it is back, the provider's do",
    async (_name, failure) => {
      const key = await providerKey('ES256');
      provider = await startProvider([key]);
      provider.fail(failure);
      const svc = await serviceFor();
      try {
        const res = await client(svc.baseUrl, await key.sign()).request('POST', '/bikes/', { body: newBike() });
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(await res.text()).toBe('Service Unavailable');
        expect(await allBikes(svc)).toEqual([]);
        // Logged as what it is, with the reason, not as the database.
        expect(logged).toContainEqual(
          expect.objectContaining({
            msg: "the identity provider's key set could not be fetched",
            err: expect.any(String),
          }),
        );
        expect(logged.filter((line) => line.msg === 'database unavailable')).toEqual([]);
        expect(await createWith(svc, operatorToken(svc.jwtSecret, 'ops', 60))).toBe(200);
        provider.serve([key]);
        expect(await createWith(svc, await key.sign())).toBe(200);
      } finally {
        await svc.stop();
      }
    },
  );

  it('when nothing listens at its address, a provider token is 503, never a 5xx of another kind', async () => {
    const key = await providerKey('RS256');
    provider = await startProvider([key]);
    await provider.stop();
    const svc = await serviceFor();
    try {
      expect(await createWith(svc, await key.sign())).toBe(503);
      expect(await allBikes(svc)).toEqual([]);
    } finally {
      await svc.stop();
    }
  });
});

describe('the settings of who may write', () => {
  const provider = { JWT_JWKS_URL: 'https://id.shop.example/jwks.json', JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };
  const HTTPS_ONLY = 'JWT_JWKS_URL must be an https:// URL (http:// only to this machine: 127.0.0.1 or localhost), got';

  it.each([
    ['an unknown TOKEN_ISSUANCE', { TOKEN_ISSUANCE: 'shut' }, 'TOKEN_ISSUANCE must be open or closed, got "shut"'],
    [
      'JWT_JWKS_URL without JWT_ISSUER',
      { ...provider, JWT_ISSUER: '' },
      "JWT_ISSUER must be set with JWT_JWKS_URL or JWT_JWKS_FILE: the identity provider's tokens are accepted only with the issuer and audience they must carry",
    ],
    [
      'JWT_JWKS_URL without JWT_AUDIENCE',
      { ...provider, JWT_AUDIENCE: '' },
      "JWT_AUDIENCE must be set with JWT_JWKS_URL or JWT_JWKS_FILE: the identity provider's tokens are accepted only with the issuer and audience they must carry",
    ],
    [
      'JWT_ISSUER alone',
      { JWT_ISSUER: ISSUER },
      'JWT_ISSUER goes with JWT_JWKS_URL or JWT_JWKS_FILE, neither of which is set',
    ],
    [
      'JWT_AUDIENCE alone',
      { JWT_AUDIENCE: AUDIENCE },
      'JWT_AUDIENCE goes with JWT_JWKS_URL or JWT_JWKS_FILE, neither of which is set',
    ],
    [
      'JWT_JWKS_URL and JWT_JWKS_FILE both',
      { ...provider, JWT_JWKS_FILE: '/etc/hostname' },
      'JWT_JWKS_URL and JWT_JWKS_FILE are both set: set one of them',
    ],
    [
      'a JWT_JWKS_FILE that is not an absolute path',
      { ...provider, JWT_JWKS_URL: '', JWT_JWKS_FILE: 'jwks.json' },
      'JWT_JWKS_FILE must name an existing file by its absolute path, got "jwks.json"',
    ],
    [
      'JWT_JWKS_OWNER with an https:// key set',
      { ...provider, JWT_JWKS_OWNER: 'nobody' },
      'JWT_JWKS_OWNER goes with an http:// JWT_JWKS_URL',
    ],
    [
      'JWT_JWKS_OWNER naming no user',
      { ...provider, JWT_JWKS_URL: 'http://127.0.0.1:8080/jwks.json', JWT_JWKS_OWNER: 'no-such-user-here' },
      'JWT_JWKS_OWNER: there is no user "no-such-user-here"',
    ],
    [
      'an http:// JWT_JWKS_URL to ::1 (whose listener cannot be proved)',
      { ...provider, JWT_JWKS_URL: 'http://[::1]:8080/jwks.json' },
      `${HTTPS_ONLY} "http://[::1]:8080/jwks.json"`,
    ],
    [
      'an http:// JWT_JWKS_URL to another machine',
      { ...provider, JWT_JWKS_URL: 'http://10.0.0.5/jwks.json' },
      `${HTTPS_ONLY} "http://10.0.0.5/jwks.json"`,
    ],
    [
      'an http:// JWT_JWKS_URL to a name that is not localhost',
      { ...provider, JWT_JWKS_URL: 'http://localhost.shop.example/jwks.json' },
      `${HTTPS_ONLY} "http://localhost.shop.example/jwks.json"`,
    ],
    ['a JWT_JWKS_URL that is no URL', { ...provider, JWT_JWKS_URL: 'jwks.json' }, `${HTTPS_ONLY} "jwks.json"`],
    [
      "JWT_ISSUER set to the operator's own issuer",
      { ...provider, JWT_ISSUER: 'urn:bike-catalog:operator' },
      "JWT_ISSUER must not be urn:bike-catalog:operator, the issuer of the operator's own tokens",
    ],
  ])('%s: the service refuses to start with one line naming it', async (_case, given, line) => {
    const service = await launchService({
      DATABASE_URL: 'postgresql://127.0.0.1:1/never-reached',
      JWT_SECRET: randomBytes(32).toString('base64url'),
      ...given,
    });
    expect(await service.exited).toEqual({ code: 1, signal: null });
    expect(service.errors()).toBe(`bike catalog: ${line}\n`);
  });

  it.each([
    ['http://127.0.0.1:8080/jwks.json', {}, [0]],
    ['http://127.1.2.3/jwks.json', {}, [0]],
    ['http://localhost/jwks.json', { JWT_JWKS_OWNER: 'nobody' }, [0, 65534]],
    ['http://localhost/jwks.json', { JWT_JWKS_OWNER: '1234' }, [0, 1234]],
    ['https://id.shop.example/.well-known/jwks.json', {}, []],
  ])(
    'takes the key set at %s (https://, or http:// to this machine from a listener of root or the owner named)',
    (url, env, owners) => {
      const config = readConfig({
        JWT_SECRET: randomBytes(32).toString('base64url'),
        ...provider,
        JWT_JWKS_URL: url,
        ...env,
      });
      expect(config.identityProvider).toEqual({
        keySet: { url: new URL(url), owners },
        issuer: ISSUER,
        audience: AUDIENCE,
      });
      expect(config.tokenIssuance).toBe('open');
    },
  );
});

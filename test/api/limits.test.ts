import http from 'node:http';
import { Client } from 'pg';
import { readConfig } from '../../src/config';
import { newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { inOneWindow, waitFor } from '../support/wait';
import { rawRequest, signToken } from './helpers';

/**
 * Abuse limits (docs/reference/callers.md#abuse-limits), set low here: tokens and writes per client per
 * minute, counted in PostgreSQL over every instance, and list streams at once per instance.
 * Over a limit: 429 with Retry-After and the RateLimit headers, and nothing is written.
 */

describe('abuse limits', () => {
  let first: TestService;
  let second: TestService;
  const env = { RATE_LIMIT_TOKENS: '5', RATE_LIMIT_WRITES: '6', MAX_LIST_STREAMS: '2' };

  beforeAll(async () => {
    first = await startTestService({ env });
    second = await startTestService({ databaseUrl: first.databaseUrl, jwtSecret: first.jwtSecret, env });
  });
  afterAll(async () => {
    await second.stop();
    await first.stop();
  });

  const mint = (svc: TestService) => rawRequest(svc.baseUrl, 'POST', '/api/user', {});

  it('counts tokens over both instances: the sixth in a minute is 429 with Retry-After and RateLimit headers', async () => {
    await inOneWindow();
    const replies = [];
    for (let i = 0; i < 5; i++) replies.push(await mint(i % 2 ? second : first));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(replies[0].headers['ratelimit-policy']).toBe('"tokens";q=5;w=60');
    expect(replies[4].headers.ratelimit).toMatch(/^"tokens";r=0;t=\d+$/);
    const refused = await mint(second);
    expect(refused.status).toBe(429);
    expect(refused.body.toString('utf8')).toBe('Too Many Requests');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.headers.ratelimit).toMatch(/^"tokens";r=0;t=\d+$/);
  });

  it('counts writes, after the token check: the seventh is 429 and creates nothing; a request without a token is still 401', async () => {
    await inOneWindow();
    // The token limit of the test above is spent; sign one directly.
    const now = Math.floor(Date.now() / 1000);
    const token = signToken({ username: 'writer', iat: now, exp: now + 1800 }, first.jwtSecret);
    const post = (svc: TestService, title: string) =>
      rawRequest(
        svc.baseUrl,
        'POST',
        '/bikes/',
        { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        JSON.stringify(newBike({ title })),
      );
    for (let i = 0; i < 5; i++) expect((await post(i % 2 ? second : first, `limited ${i}`)).status).toBe(200);
    // A write refused for its body still spent its quota, and its 400 says how much is left.
    const invalid = await rawRequest(
      second.baseUrl,
      'POST',
      '/bikes/',
      { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      JSON.stringify({ ...newBike(), title: 5 }),
    );
    expect(invalid.status).toBe(400);
    expect(invalid.headers['ratelimit-policy']).toBe('"writes";q=6;w=60');
    expect(invalid.headers.ratelimit).toMatch(/^"writes";r=0;t=\d+$/);
    const refused = await post(first, 'limited, over');
    expect(refused.status).toBe(429);
    expect(refused.headers['ratelimit-policy']).toBe('"writes";q=6;w=60');
    const sql = new Client({ connectionString: first.databaseUrl });
    await sql.connect();
    try {
      const { rows } = await sql.query(`SELECT count(*)::int AS n FROM bikes WHERE title = 'limited, over'`);
      expect(rows[0].n).toBe(0);
    } finally {
      await sql.end();
    }
    const noToken = await rawRequest(first.baseUrl, 'POST', '/bikes/', { 'content-type': 'application/json' }, '{}');
    expect(noToken.status).toBe(401);
  });

  it('caps the lists one client receives at once: a third is 429 while two are open, and allowed once they end', async () => {
    const sql = new Client({ connectionString: first.databaseUrl });
    await sql.connect();
    try {
      // About 20 MB of list: more than the sockets between here and there hold, so an answer
      // whose reader has paused stays open.
      await sql.query(
        `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
           total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
         SELECT gen_random_uuid(), 'many-' || n, 'Many ' || n, 'Road', 'now', repeat('d', 2000), 'v', true, n, 1, 'USD', 2, 'USD'
         FROM generate_series(1, 10000) AS n`,
      );
    } finally {
      await sql.end();
    }
    // Two lists, their first bytes read, then paused: their answers stay open.
    const open = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<http.ClientRequest>((resolve, reject) => {
            const req = http.get(`${first.baseUrl}/bikes/all`, (res) => {
              expect(res.statusCode).toBe(200);
              res.once('data', () => {
                res.pause();
                resolve(req);
              });
            });
            req.on('error', reject);
          }),
      ),
    );
    try {
      const third = await rawRequest(first.baseUrl, 'GET', '/bikes/all', {});
      expect(third.status).toBe(429);
      expect(third.headers['retry-after']).toBe('1');
      // The other instance counts its own.
      expect((await rawRequest(second.baseUrl, 'GET', '/bikes/all', {})).status).toBe(200);
    } finally {
      for (const req of open) req.destroy();
    }
    await waitFor(
      'the cap to let a list through again',
      async () => ((await rawRequest(first.baseUrl, 'GET', '/bikes/all', {})).status === 200 ? true : undefined),
      { everyMs: 50 },
    );
  });
});

/**
 * Behind proxies (docs/reference/callers.md#trusted-proxies): the client is the X-Forwarded-For entry the
 * outermost of TRUST_PROXY proxies appended; the entries before it are the client's own words.
 */
describe('abuse limits counted first by each instance (a limit of 300: a slack of 3)', () => {
  it('two instances taking turns admit at most the limit and one slack over it, and refuse the rest', async () => {
    const env = { RATE_LIMIT_TOKENS: '300' };
    const first = await startTestService({ env });
    const second = await startTestService({ databaseUrl: first.databaseUrl, jwtSecret: first.jwtSecret, env });
    try {
      // Each answer's window, from when it ends (RateLimit's t): however long the requests take
      // here, they may fall in one window or two, and each window is judged on its own.
      const windows = new Map<number, number[]>();
      for (let i = 0; i < 400; i++) {
        const res = await rawRequest((i % 2 ? second : first).baseUrl, 'POST', '/api/user', {});
        const resetSeconds = Number(/t=(\d+)/.exec(String(res.headers.ratelimit))?.[1]);
        const window = Math.round((Date.now() + resetSeconds * 1000) / 60_000);
        windows.set(window, [...(windows.get(window) ?? []), res.status]);
      }
      for (const statuses of windows.values()) {
        const admitted = statuses.filter((status) => status === 200).length;
        // Never more than the limit and the slack; never one refused before the limit.
        expect(admitted).toBeLessThanOrEqual(303);
        expect(admitted).toBeGreaterThanOrEqual(Math.min(statuses.length, 300));
        expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
      }
    } finally {
      await second.stop();
      await first.stop();
    }
  });
});

describe('abuse limits behind proxies (TRUST_PROXY)', () => {
  const mint = (svc: TestService, forwardedFor: string) =>
    rawRequest(svc.baseUrl, 'POST', '/api/user', { 'x-forwarded-for': forwardedFor });

  describe.each([
    ['1', ['198.51.100.1, 203.0.113.7', '198.51.100.2, 203.0.113.7'], '198.51.100.1, 203.0.113.8'],
    ['true', ['198.51.100.1, 203.0.113.7', '203.0.113.7'], '203.0.113.8'],
    ['2', ['198.51.100.1, 203.0.113.7, 10.0.0.1', '198.51.100.2, 203.0.113.7, 10.0.0.2'], '203.0.113.8, 10.0.0.1'],
  ])('with TRUST_PROXY=%s', (trustProxy, sameClient, otherClient) => {
    let svc: TestService;
    beforeAll(async () => {
      svc = await startTestService({ env: { TRUST_PROXY: trustProxy, RATE_LIMIT_TOKENS: '1' } });
    });
    afterAll(() => svc.stop());

    it(`when a client forges the entries before the proxies' own (${sameClient.join(' | ')}), it answers 429 to its second token: one client`, async () => {
      await inOneWindow();
      expect((await mint(svc, sameClient[0])).status).toBe(200);
      expect((await mint(svc, sameClient[1])).status).toBe(429);
      // Another address where the proxy wrote it is another client, with a limit of its own.
      expect((await mint(svc, otherClient)).status).toBe(200);
    });
  });

  describe.each([
    ['entries that are no address are the peer, not new clients', ['not-an-ip', 'not-an-ip-either'], '198.51.100.1'],
    ['an IPv6 address counts by its /64', ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:fffe'], '2001:db8:1:3::1'],
    ['an IPv4-mapped address is its IPv4 address', ['::ffff:198.51.100.9', '198.51.100.9'], '198.51.100.10'],
  ])('with TRUST_PROXY=1: %s', (_what, sameClient, otherClient) => {
    let svc: TestService;
    beforeAll(async () => {
      svc = await startTestService({ env: { TRUST_PROXY: '1', RATE_LIMIT_TOKENS: '1' } });
    });
    afterAll(() => svc.stop());

    it(`${sameClient.join(' and ')} are one client (429 to its second token); ${otherClient} is another`, async () => {
      await inOneWindow();
      expect((await mint(svc, sameClient[0])).status).toBe(200);
      expect((await mint(svc, sameClient[1])).status).toBe(429);
      expect((await mint(svc, otherClient)).status).toBe(200);
    });
  });

  it('when TRUST_PROXY is neither a number of proxies nor true or false, the service refuses to start and says why', () => {
    expect(() =>
      readConfig({ DATABASE_URL: 'postgresql://x/y', JWT_SECRET: 'x'.repeat(24) + 'abcdefgh12', TRUST_PROXY: 'yes' }),
    ).toThrow('TRUST_PROXY must be the number of proxies in front of the service (or true for 1), got "yes"');
  });
});

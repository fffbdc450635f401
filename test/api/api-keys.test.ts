import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import jwt from 'jsonwebtoken';
import { Client } from 'pg';
import type { Bike } from '../../src/bikes/bike';
import { operatorToken } from '../../src/auth/tokens';
import { parseBearerChallenge } from '../support/bearer-challenge';
import { client, newBike } from '../support/bikes';
import { providerKey, startProvider, type ProviderKey, type TestProvider } from '../support/identity-provider';
import { seriesValue } from '../support/metrics';
import { startTestService, type TestService } from '../support/service';

/**
 * API keys and scopes (docs/reference/callers.md#api-keys, #scopes, #refusals): the operator issues a key
 * with `npm run keys`, a tool trades it for a 30-minute token at POST /api/user even where issuance
 * is closed, each operation needs its scope, and a revoked key's tokens stop writing on every
 * instance. Every refusal's WWW-Authenticate is read by a strict RFC 6750 parser.
 */

const run = promisify(execFile);
const KEYS_CLI = path.join(__dirname, '..', '..', 'dist', 'cli', 'keys.js');
const CLOSED = { TOKEN_ISSUANCE: 'closed' };

/** `npm run keys -- <args>` against the database at `databaseUrl`: its stdout. */
async function keys(databaseUrl: string, ...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [KEYS_CLI, ...args], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl },
  });
  return stdout;
}

/** POST /api/user with this bearer value: the answer. */
const trade = (svc: TestService, key: string) =>
  fetch(`${svc.baseUrl}/api/user`, { method: 'POST', headers: { Authorization: `Bearer ${key}` } });

async function tokenFor(svc: TestService, key: string): Promise<string> {
  const res = await trade(svc, key);
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}

/** The statuses of a create, a replace, an update and a delete with this token. */
async function everyWrite(svc: TestService, token: string, target: Bike): Promise<Record<string, number>> {
  const api = client(svc.baseUrl, token);
  const status = async (method: string, url: string, body?: unknown) =>
    (await api.request(method, url, { body })).status;
  const { id, handle, ...fields } = target;
  return {
    create: await status('POST', '/bikes/', newBike()),
    replace: await status('PUT', `/bikes/${id}`, { id, handle, ...fields }),
    update: await status('PATCH', `/bikes/${id}`, { totalInventory: 3 }),
    delete: await status('DELETE', `/bikes/${id}`),
  };
}

/** What a refusal says: its status, its challenge as RFC 6750 reads it, and its plain-text reason. */
async function refusalOf(res: Response) {
  return {
    status: res.status,
    challenge: parseBearerChallenge(res.headers.get('www-authenticate')),
    reason: await res.text(),
  };
}

async function sql<T extends object>(databaseUrl: string, text: string, values: unknown[] = []): Promise<T[]> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return (await db.query<T>(text, values)).rows;
  } finally {
    await db.end();
  }
}

describe('API keys, where issuance is closed', () => {
  let svc: TestService;
  let other: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: CLOSED });
    // A second instance over the same catalog and secret.
    other = await startTestService({ databaseUrl: svc.databaseUrl, jwtSecret: svc.jwtSecret, env: CLOSED });
  });
  afterAll(async () => {
    await other?.stop();
    await svc?.stop();
  });

  const operatorBike = () => client(svc.baseUrl, operatorToken(svc.jwtSecret, 'operator', 600)).create();

  it('add prints the key once, recognisable and high in entropy; the store keeps only its SHA-256; list shows it without the key', async () => {
    const key = (await keys(svc.databaseUrl, 'add', '--name', 'stock-feed', '--scopes', 'bikes:write')).trim();
    expect(key).toMatch(/^bk_live_[A-Za-z0-9_-]{43}$/);
    const rows = await sql<{ key_hash: string }>(svc.databaseUrl, `SELECT * FROM api_keys WHERE label = 'stock-feed'`);
    expect(JSON.stringify(rows)).not.toContain(key.slice(8));
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    const listed = await keys(svc.databaseUrl, 'list');
    expect(listed).not.toContain(key.slice(8));
    expect(JSON.parse(listed)).toContainEqual(
      expect.objectContaining({ label: 'stock-feed', scopes: 'bikes:write', 'last used': 'never', expires: 'never' }),
    );
    await tokenFor(svc, key);
    const used = (JSON.parse(await keys(svc.databaseUrl, 'list')) as Array<Record<string, string>>).find(
      (row) => row.label === 'stock-feed',
    );
    expect(Date.parse(used?.['last used'] ?? '')).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a label is never given twice, and the CLI refuses unknown scopes and durations', async () => {
    await keys(svc.databaseUrl, 'add', '--name', 'twice', '--scopes', 'bikes:write');
    await expect(keys(svc.databaseUrl, 'add', '--name', 'twice', '--scopes', 'bikes:write')).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('a key labelled "twice" exists'),
    });
    await expect(keys(svc.databaseUrl, 'add', '--name', 'x', '--scopes', 'bikes:admin')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('"bikes:admin" is not a scope'),
    });
    await expect(
      keys(svc.databaseUrl, 'add', '--name', 'x', '--scopes', 'bikes:write', '--expires', 'soon'),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('"soon" is not a duration') });
  });

  it('each scope is refused where it should be and nowhere else, with insufficient_scope naming it', async () => {
    const writer = (await keys(svc.databaseUrl, 'add', '--name', 'writer', '--scopes', 'bikes:write')).trim();
    const deleter = (await keys(svc.databaseUrl, 'add', '--name', 'deleter', '--scopes', 'bikes:delete')).trim();
    const both = (await keys(svc.databaseUrl, 'add', '--name', 'both', '--scopes', 'bikes:write,bikes:delete')).trim();
    expect(await everyWrite(svc, await tokenFor(svc, writer), await operatorBike())).toEqual({
      create: 200,
      replace: 200,
      update: 200,
      delete: 403,
    });
    expect(await everyWrite(svc, await tokenFor(svc, deleter), await operatorBike())).toEqual({
      create: 403,
      replace: 403,
      update: 403,
      delete: 200,
    });
    expect(await everyWrite(svc, await tokenFor(svc, both), await operatorBike())).toEqual({
      create: 200,
      replace: 200,
      update: 200,
      delete: 200,
    });
    const target = await operatorBike();
    const refused = await refusalOf(
      await client(svc.baseUrl, await tokenFor(svc, writer)).request('DELETE', `/bikes/${target.id}`),
    );
    expect(refused).toEqual({
      status: 403,
      challenge: {
        realm: 'bike-catalog',
        error: 'insufficient_scope',
        error_description: 'this operation needs the scope bikes:delete',
        scope: ['bikes:delete'],
      },
      reason: 'Forbidden: this operation needs the scope bikes:delete',
    });
    // The operator's tokens carry the scopes given.
    const operatorWriter = operatorToken(svc.jwtSecret, 'ops', 600, ['bikes:write']);
    expect(await everyWrite(svc, operatorWriter, await operatorBike())).toEqual({
      create: 200,
      replace: 200,
      update: 200,
      delete: 403,
    });
  });

  it('every refusal says why in a strict RFC 6750 challenge, and /metrics counts it by reason', async () => {
    const key = (await keys(svc.databaseUrl, 'add', '--name', 'refusals', '--scopes', 'bikes:write')).trim();
    const token = await tokenFor(svc, key);
    const payload = jwt.decode(token) as Record<string, unknown>;
    const now = Math.floor(Date.now() / 1000);
    const expired = jwt.sign({ ...payload, iat: now - 2000, exp: now - 200 }, svc.jwtSecret, { algorithm: 'HS256' });
    const create = (bearer?: string) =>
      fetch(`${svc.baseUrl}/bikes/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(bearer && { Authorization: `Bearer ${bearer}` }) },
        body: JSON.stringify(newBike()),
      });
    const before = await seriesValue(svc.baseUrl, 'http_auth_refusals_total', { reason: 'expired' });
    expect(await refusalOf(await create())).toEqual({
      status: 401,
      challenge: { realm: 'bike-catalog' },
      reason: 'Unauthorized',
    });
    const cases: [string | undefined, string, string][] = [
      [expired, 'expired', 'the token has expired'],
      [`${token.slice(0, -4)}AAAA`, 'foreign', 'the token is not signed by a key this service trusts'],
      ['not-a-jwt', 'malformed', 'the token is malformed or lacks a claim this service requires'],
    ];
    for (const [bearer, , description] of cases) {
      expect(await refusalOf(await create(bearer))).toEqual({
        status: 403,
        challenge: { realm: 'bike-catalog', error: 'invalid_token', error_description: description },
        reason: `Forbidden: ${description}`,
      });
    }
    expect(await refusalOf(await trade(svc, 'bk_live_no-such-key'))).toEqual({
      status: 403,
      challenge: {
        realm: 'bike-catalog',
        error: 'invalid_token',
        error_description: 'the API key is not known, was revoked or has expired',
      },
      reason: 'Forbidden: the API key is not known, was revoked or has expired',
    });
    const closed = await refusalOf(await fetch(`${svc.baseUrl}/api/user`, { method: 'POST' }));
    expect(closed).toMatchObject({ status: 403, challenge: { realm: 'bike-catalog' } });
    expect(closed.reason).toMatch(/^Forbidden: token issuance is closed \(TOKEN_ISSUANCE=closed\)/);
    expect(await seriesValue(svc.baseUrl, 'http_auth_refusals_total', { reason: 'expired' })).toBe(before + 1);
    expect(
      await seriesValue(svc.baseUrl, 'http_auth_refusals_total', { reason: 'insufficient-scope' }),
    ).toBeGreaterThan(0);
  });

  it('a key is used for months: each token lives 30 minutes and the key gives new ones until it expires, then none, and its tokens stop', async () => {
    const key = (
      await keys(svc.databaseUrl, 'add', '--name', 'months', '--scopes', 'bikes:write', '--expires', '180d')
    ).trim();
    const api = (token: string) => client(svc.baseUrl, token);
    // The clock moved: the key was issued 150 days ago, and expires in 30.
    const age = async (days: number) =>
      sql(
        svc.databaseUrl,
        `UPDATE api_keys SET created_at = created_at - make_interval(days => $1), expires_at = expires_at - make_interval(days => $1) WHERE label = 'months'`,
        [days],
      );
    await age(150);
    const token = await tokenFor(svc, key);
    expect((await api(token).request('POST', '/bikes/', { body: newBike() })).status).toBe(200);
    // A token of the key minted 31 minutes ago (as the tool's previous one was): expired, so it trades the key again.
    const payload = jwt.decode(token) as Record<string, number>;
    const old = jwt.sign({ ...payload, iat: payload.iat - 1860, exp: payload.exp - 1860 }, svc.jwtSecret, {
      algorithm: 'HS256',
    });
    expect((await refusalOf(await api(old).request('POST', '/bikes/', { body: newBike() }))).challenge).toMatchObject({
      error: 'invalid_token',
      error_description: 'the token has expired',
    });
    const next = await tokenFor(svc, key);
    expect((await api(next).request('POST', '/bikes/', { body: newBike() })).status).toBe(200);
    // 31 days later the key has expired: no new token, and the token it gave stops at once.
    await age(31);
    expect((await trade(svc, key)).status).toBe(403);
    const refused = await refusalOf(await api(next).request('POST', '/bikes/', { body: newBike() }));
    expect(refused).toMatchObject({
      status: 403,
      challenge: { error: 'invalid_token', error_description: 'the API key of this token was revoked or has expired' },
    });
  });

  it('revoked under 8 writers on two instances: once revoke returns, no write of its tokens is accepted on either', async () => {
    const key = (await keys(svc.databaseUrl, 'add', '--name', 'revoked-under-load', '--scopes', 'bikes:write')).trim();
    const tokens = [await tokenFor(svc, key), await tokenFor(other, key)];
    let revokedAt = Infinity;
    let stop = false;
    const acceptedAfter: number[] = [];
    const outcomes = { before: 0, refused: 0 };
    const writer = async (instance: TestService, token: string) => {
      const api = client(instance.baseUrl, token);
      while (!stop) {
        const sent = Date.now();
        const res = await api.request('POST', '/bikes/', { body: newBike() });
        if (res.status === 200) {
          if (sent > revokedAt) acceptedAfter.push(sent - revokedAt);
          else outcomes.before++;
        } else {
          expect(res.status).toBe(403);
          expect(parseBearerChallenge(res.headers.get('www-authenticate')).error_description).toBe(
            'the API key of this token was revoked or has expired',
          );
          outcomes.refused++;
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, i) => writer(i % 2 ? other : svc, tokens[i % 2]));
    while (outcomes.before < 40) await new Promise((resolve) => setTimeout(resolve, 20));
    const revoked = await keys(svc.databaseUrl, 'revoke', 'revoked-under-load');
    revokedAt = Date.now();
    expect(revoked).toMatch(/^revoked "revoked-under-load"/);
    while (outcomes.refused < 40) await new Promise((resolve) => setTimeout(resolve, 20));
    stop = true;
    await Promise.all(writers);
    expect(acceptedAfter).toEqual([]);
    // And the change log agrees: it holds exactly the writes answered 200, none that was refused.
    const logged = await sql<{ n: string }>(
      svc.databaseUrl,
      `SELECT count(*) AS n FROM bike_changes WHERE changed_by = 'revoked-under-load'`,
    );
    expect(logged).toEqual([{ n: String(outcomes.before) }]);
    expect((await trade(other, key)).status).toBe(403);
  });

  it("who changed what names the key's label, its issuer and its scopes", async () => {
    const key = (await keys(svc.databaseUrl, 'add', '--name', 'recorded', '--scopes', 'bikes:write')).trim();
    const bike = await client(svc.baseUrl, await tokenFor(svc, key)).create();
    const rows = await sql(
      svc.databaseUrl,
      `SELECT changed_by, changed_by_proven, changed_by_issuer, changed_by_scopes FROM bike_changes WHERE bike_id = $1`,
      [bike.id],
    );
    expect(rows).toEqual([
      {
        changed_by: 'recorded',
        changed_by_proven: true,
        changed_by_issuer: 'urn:bike-catalog:key',
        changed_by_scopes: ['bikes:write'],
      },
    ]);
  });
});

describe('docs/reporting.md\'s "writes by key"', () => {
  it('lists each key with its scopes, its creates, updates and deletes in the period, and whether it is revoked', async () => {
    const svc = await startTestService({ env: CLOSED });
    try {
      const stock = (await keys(svc.databaseUrl, 'add', '--name', 'stock', '--scopes', 'bikes:write')).trim();
      const admin = (
        await keys(svc.databaseUrl, 'add', '--name', 'admin', '--scopes', 'bikes:write,bikes:delete')
      ).trim();
      await keys(svc.databaseUrl, 'add', '--name', 'idle', '--scopes', 'bikes:delete');
      const stockApi = client(svc.baseUrl, await tokenFor(svc, stock));
      const adminApi = client(svc.baseUrl, await tokenFor(svc, admin));
      const [a, b] = [await stockApi.create(), await stockApi.create()];
      expect((await stockApi.request('PATCH', `/bikes/${a.id}`, { body: { totalInventory: 1 } })).status).toBe(200);
      expect((await adminApi.request('DELETE', `/bikes/${b.id}`)).status).toBe(200);
      await keys(svc.databaseUrl, 'revoke', 'admin');
      const report = fs.readFileSync(path.join(__dirname, '..', 'ops', 'reports', 'writes-by-key.sql'), 'utf8');
      const rows = await sql<Record<string, unknown>>(svc.databaseUrl, report);
      expect(rows.map(({ last_write, ...row }) => ({ ...row, wrote: last_write instanceof Date }))).toEqual([
        {
          label: 'admin',
          scopes: 'bikes:write bikes:delete',
          creates: '0',
          updates: '0',
          deletes: '1',
          revoked: true,
          wrote: true,
        },
        {
          label: 'idle',
          scopes: 'bikes:delete',
          creates: '0',
          updates: '0',
          deletes: '0',
          revoked: false,
          wrote: false,
        },
        {
          label: 'stock',
          scopes: 'bikes:write',
          creates: '2',
          updates: '1',
          deletes: '0',
          revoked: false,
          wrote: true,
        },
      ]);
    } finally {
      await svc.stop();
    }
  });
});

describe('scopes where issuance is open (the specification)', () => {
  it('every token has every scope: a key of bikes:write deletes too, and POST /api/user still gives tokens', async () => {
    const svc = await startTestService();
    try {
      const key = (await keys(svc.databaseUrl, 'add', '--name', 'open-writer', '--scopes', 'bikes:write')).trim();
      const bike = await client(svc.baseUrl, await svc.token('alice')).create();
      expect((await client(svc.baseUrl, await tokenFor(svc, key)).request('DELETE', `/bikes/${bike.id}`)).status).toBe(
        200,
      );
    } finally {
      await svc.stop();
    }
  });
});

describe("an identity provider's scopes", () => {
  let key: ProviderKey;
  let provider: TestProvider;
  let svc: TestService;
  let mapped: TestService;
  beforeAll(async () => {
    key = await providerKey('ES256');
    provider = await startProvider([key]);
    svc = await startTestService({ env: { ...CLOSED, ...provider.env } });
    mapped = await startTestService({
      databaseUrl: svc.databaseUrl,
      jwtSecret: svc.jwtSecret,
      env: {
        ...CLOSED,
        ...provider.env,
        JWT_SCOPE_MAP: 'catalog.edit=bikes:write,catalog.admin=bikes:write,catalog.admin=bikes:delete',
      },
    });
  });
  afterAll(async () => {
    await mapped?.stop();
    await svc?.stop();
    await provider?.stop();
  });
  const target = () => client(svc.baseUrl, operatorToken(svc.jwtSecret, 'operator', 600)).create();

  it.each([
    [
      'scope, space-separated',
      { scope: 'openid bikes:write' },
      { create: 200, replace: 200, update: 200, delete: 403 },
    ],
    [
      'scp, an array',
      { scope: undefined, scp: ['bikes:delete', 'profile'] },
      { create: 403, replace: 403, update: 403, delete: 200 },
    ],
    [
      'scope and scp',
      { scope: 'bikes:write', scp: ['bikes:delete'] },
      { create: 200, replace: 200, update: 200, delete: 200 },
    ],
    ['neither', { scope: undefined }, { create: 403, replace: 403, update: 403, delete: 403 }],
  ])('a token with %s may do what they name and nothing else', async (_name, claims, statuses) => {
    expect(await everyWrite(svc, await key.sign(claims), await target())).toEqual(statuses);
  });

  it('JWT_SCOPE_MAP reads the names the provider gives them, and only those', async () => {
    expect(await everyWrite(mapped, await key.sign({ scope: 'catalog.edit' }), await target())).toEqual({
      create: 200,
      replace: 200,
      update: 200,
      delete: 403,
    });
    expect(
      await everyWrite(mapped, await key.sign({ scope: undefined, scp: ['catalog.admin'] }), await target()),
    ).toEqual({
      create: 200,
      replace: 200,
      update: 200,
      delete: 200,
    });
    expect(await everyWrite(mapped, await key.sign({ scope: 'bikes:write bikes:delete' }), await target())).toEqual({
      create: 403,
      replace: 403,
      update: 403,
      delete: 403,
    });
  });
});

import { createHmac } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Bike } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';

/**
 * Forged, broken and hostile tokens against every protected operation. The specification:
 * no token is 401, a token that fails verification is 403 (docs/reference/callers.md#tokens: HS256 only). Each
 * attack is tried on POST, PUT, PATCH and DELETE, and afterwards the catalog is unchanged.
 */

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** A JWT with any header, signed with HMAC-SHA256 over `secret` whatever the header claims. */
function forge(header: object, payload: object, secret: string): string {
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  return `${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
}

const now = () => Math.floor(Date.now() / 1000);

describe('the protected operations (POST /bikes/, PUT, PATCH, DELETE /bikes/<id>), against token attacks', () => {
  let svc: TestService;
  let target: Bike;

  beforeAll(async () => {
    svc = await startTestService();
    target = await client(svc.baseUrl, await svc.token()).create();
  });
  afterAll(() => svc?.stop());

  /** Sends the Authorization header (or none) to each protected operation; returns the statuses. */
  async function attempt(authorization: string | undefined): Promise<Record<string, number>> {
    const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
    const api = client(svc.baseUrl);
    const { id, handle, ...fields } = target;
    const statuses: Record<string, number> = {};
    const send = async (name: string, method: string, path: string, body?: unknown) => {
      const res = await api.request(method, path, { body, headers });
      statuses[name] = res.status;
    };
    await send('POST', 'POST', '/bikes/', newBike());
    await send('PUT', 'PUT', `/bikes/${id}`, { id, handle, ...fields, title: 'Replaced by an attacker' });
    await send('PATCH', 'PATCH', `/bikes/${id}`, { title: 'Patched by an attacker' });
    await send('DELETE', 'DELETE', `/bikes/${id}`);
    return statuses;
  }

  const all = (status: number) => ({ POST: status, PUT: status, PATCH: status, DELETE: status });

  afterEach(async () => {
    // Whatever the attack, nothing was written: the bike is as it was, and no other bike exists.
    const res = await fetch(`${svc.baseUrl}/bikes/all`);
    expect(await res.json()).toEqual([target]);
  });

  it('when there is no Authorization header, answers 401', async () => {
    expect(await attempt(undefined)).toEqual(all(401));
  });

  it('when the bearer is empty ("Bearer" or "Bearer "), answers 401', async () => {
    expect(await attempt('Bearer')).toEqual(all(401));
    expect(await attempt('Bearer ')).toEqual(all(401));
  });

  it('when the token is garbage, answers 403', async () => {
    expect(await attempt('Bearer not-a-token')).toEqual(all(403));
    expect(await attempt('Bearer a.b.c')).toEqual(all(403));
  });

  it('when the token is signed with another secret, answers 403', async () => {
    const token = jwt.sign({ username: 'mallory' }, 'a-different-secret-of-enough-length!', {
      algorithm: 'HS256',
      expiresIn: 1800,
    });
    expect(await attempt(`Bearer ${token}`)).toEqual(all(403));
  });

  it('when the token has expired, answers 403', async () => {
    const token = jwt.sign({ username: 'tester', iat: now() - 3600, exp: now() - 1800 }, svc.jwtSecret, {
      algorithm: 'HS256',
    });
    expect(await attempt(`Bearer ${token}`)).toEqual(all(403));
  });

  it('when the token says alg "none" and carries no signature, answers 403', async () => {
    const payload = { username: 'tester', iat: now(), exp: now() + 1800 };
    const unsigned = `${base64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url(JSON.stringify(payload))}.`;
    expect(await attempt(`Bearer ${unsigned}`)).toEqual(all(403));
  });

  it('when the token is HS512 over the right secret, answers 403 (only HS256 is accepted)', async () => {
    const token = jwt.sign({ username: 'tester' }, svc.jwtSecret, { algorithm: 'HS512', expiresIn: 1800 });
    expect(await attempt(`Bearer ${token}`)).toEqual(all(403));
  });

  it('when the header says RS256 over an HMAC of the right secret, answers 403 (no algorithm confusion)', async () => {
    const token = forge(
      { alg: 'RS256', typ: 'JWT' },
      { username: 'tester', iat: now(), exp: now() + 1800 },
      svc.jwtSecret,
    );
    expect(await attempt(`Bearer ${token}`)).toEqual(all(403));
  });

  it('when the payload of a valid token is tampered with, answers 403', async () => {
    const [header, , signature] = (await svc.token('tester')).split('.');
    const tampered = `${header}.${base64url(JSON.stringify({ username: 'admin', iat: now(), exp: now() + 999_999 }))}.${signature}`;
    expect(await attempt(`Bearer ${tampered}`)).toEqual(all(403));
  });

  it('when the Authorization header is 100 KB, answers 403 (judged, not refused, and never a 5xx)', async () => {
    expect(await attempt(`Bearer ${'A'.repeat(100 * 1024)}`)).toEqual(all(403));
    const bloated = jwt.sign({ username: 'x'.repeat(100 * 1024) }, 'a-different-secret-of-enough-length!', {
      algorithm: 'HS256',
    });
    expect(bloated.length).toBeGreaterThan(100 * 1024);
    expect(await attempt(`Bearer ${bloated}`)).toEqual(all(403));
  });

  it('when an HS256 token is made over the right secret outside /api/user, accepts it (so the 403s above are about the attack)', async () => {
    const token = forge(
      { alg: 'HS256', typ: 'JWT' },
      { username: 'tester', iat: now(), exp: now() + 1800 },
      svc.jwtSecret,
    );
    const api = client(svc.baseUrl, token);
    const res = await api.request('PATCH', `/bikes/${target.id}`, { body: { vendor: target.vendor } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(target);
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';

/**
 * A shop's identity provider, as the service sees one: a JSON Web Key Set served over HTTP on
 * 127.0.0.1 (node:http), whose keys the test changes (a rotation) or withdraws (an outage), and
 * signing keys made with jose, whose tokens carry its issuer and the service's audience.
 */

export const ISSUER = 'https://id.shop.example/';
export const AUDIENCE = 'bike-catalog';

export interface ProviderKey {
  kid: string;
  alg: 'RS256' | 'ES256' | 'PS256';
  /** The public key as the key set lists it. */
  jwk: JWK;
  /** Its public key in PEM, what an attacker would sign an HS256 token with. */
  publicPem: string;
  /**
   * A token signed with this key: issuer, audience, a subject, iat now and exp in 10 minutes, every scope,
   * with `claims` laid over them (a claim set to undefined is left out), and `header` over its
   * alg and kid.
   */
  sign(claims?: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
}

export async function providerKey(alg: ProviderKey['alg'], kid: string = randomUUID()): Promise<ProviderKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return {
    kid,
    alg,
    jwk,
    publicPem: await exportSPKI(publicKey),
    sign(claims = {}, header = {}) {
      const now = Math.floor(Date.now() / 1000);
      const payload = Object.fromEntries(
        Object.entries({
          iss: ISSUER,
          aud: AUDIENCE,
          sub: 'shop-sync',
          iat: now,
          exp: now + 600,
          scope: 'bikes:write bikes:delete',
          ...claims,
        }).filter(([, value]) => value !== undefined),
      ) as JWTPayload;
      return new SignJWT(payload).setProtectedHeader({ alg, kid, typ: 'JWT', ...header }).sign(privateKey);
    },
  };
}

export interface TestProvider {
  /** The key set's address, for JWT_JWKS_URL. */
  jwksUrl: string;
  /** The settings that make the service accept this provider's tokens. */
  env: Record<string, string>;
  /** From now on the set lists these keys. */
  serve(keys: ProviderKey[]): void;
  /** From now on the set cannot be had: a status, or an answer that is not a key set. */
  fail(how: number | 'not a key set'): void;
  /** How many times the set was fetched. */
  fetches(): number;
  stop(): Promise<void>;
}

export async function startProvider(keys: ProviderKey[]): Promise<TestProvider> {
  let served = keys;
  let failure: number | 'not a key set' | undefined;
  let fetches = 0;
  const server = http.createServer((req, res) => {
    if (req.url !== '/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    fetches++;
    if (failure === 'not a key set') res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": 7}');
    else if (failure !== undefined) res.writeHead(failure).end();
    else {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: served.map((k) => k.jwk) }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  return {
    jwksUrl,
    env: { JWT_JWKS_URL: jwksUrl, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE },
    serve(keys) {
      served = keys;
      failure = undefined;
    },
    fail(how) {
      failure = how;
    },
    fetches: () => fetches,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

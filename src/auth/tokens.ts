import { createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import jwt from 'jsonwebtoken';
import { LRUCache } from 'lru-cache';
import type { ApiKeyGrant } from './api-keys';
import { type Caller, KEY_ISSUER, OPERATOR_ISSUER } from './caller';
import { type IdentityProvider, type KeySetTiming, PROVIDER_ALGORITHMS, providerVerifier } from './provider';
import { TokenRefused } from './refusal';
import { ALL_SCOPES, type Scope, scopesAmong } from './scopes';

/**
 * The longest a token the service signs may live (docs/reference/callers.md#tokens): POST /api/user's
 * always do, the operator's at most.
 */
export const MAX_TOKEN_LIFETIME_SECONDS = 1800;
/** The algorithm of the tokens the service signs, over its own secret. */
const ALGORITHM = 'HS256';
/** How far ahead of this machine's clock another's (an instance's, the identity provider's) may run. */
const CLOCK_SKEW_SECONDS = 5;
/** How many verified tokens are remembered (about 300 bytes each). */
const VERIFIED_TOKENS = 10_000;

/** TOKEN_ISSUANCE: whether POST /api/user gives anyone a token (docs/reference/callers.md#who-may-write). */
export type TokenIssuance = 'open' | 'closed';

export interface TokenSettings {
  issuance: TokenIssuance;
  /** Whose RS256 and ES256 tokens are accepted besides the service's own. */
  provider?: IdentityProvider;
  /** How the provider's key set is kept; the defaults unless a test says. */
  keySetTiming?: KeySetTiming;
}

export interface Tokens {
  /** POST /api/user gives anyone a token (TOKEN_ISSUANCE=open, the specification's rule). */
  readonly issuanceOpen: boolean;
  /** A token of POST /api/user: `{ username, iat, exp, jti }`, living 1800 s. */
  issue(username: string | undefined): string;
  /**
   * A token of POST /api/user for an API key: `{ username: <label>, key: <id>, scope, iss: KEY_ISSUER,
   * iat, exp, jti }`, living 1800 s (docs/reference/callers.md#api-keys).
   */
  issueForKey(grant: ApiKeyGrant): string;
  /**
   * Who the token says sent the request. Throws KeysUnavailable (provider.ts) when the identity
   * provider's keys cannot be had, TokenRefused (refusal.ts) when the token is refused.
   */
  verify(token: string): Promise<Caller>;
}

/**
 * A key object, made once: given a string, jsonwebtoken first tries to parse it as a PEM public
 * key, and that failure cost each write about as much as all the rest of it did.
 */
const keyOf = (secret: string): KeyObject => createSecretKey(Buffer.from(secret));

/** 128 random bits: no two tokens the service signs are the same (docs/reference/callers.md#tokens). */
const newTokenId = () => randomBytes(16).toString('base64url');

/**
 * A token from the operator (`npm run token`) for `username`, living `lifetimeSeconds`: signed
 * with the service's secret, like POST /api/user's, and told apart from them by its `iss`, which
 * that endpoint never sets (docs/reference/callers.md#who-may-write).
 */
export function operatorToken(
  secret: string,
  username: string,
  lifetimeSeconds: number,
  scopes: readonly Scope[] = ALL_SCOPES,
): string {
  if (!Number.isInteger(lifetimeSeconds) || lifetimeSeconds < 1 || lifetimeSeconds > MAX_TOKEN_LIFETIME_SECONDS) {
    throw new RangeError(`a token lives 1 to ${MAX_TOKEN_LIFETIME_SECONDS} seconds`);
  }
  return jwt.sign({ username, scope: scopes.join(' ') }, keyOf(secret), {
    algorithm: ALGORITHM,
    expiresIn: lifetimeSeconds,
    issuer: OPERATOR_ISSUER,
    jwtid: newTokenId(),
  });
}

/**
 * `verify` picks the verifier by the token's `alg`, from an allow-list: HS256 is verified over
 * the service's secret only, RS256 and ES256 with the identity provider's keys only, so a public
 * key is never taken for a secret (docs/reference/callers.md#who-may-write). It remembers the HS256
 * tokens it accepted, by their exact text, until they expire: a client sends the same token with
 * every write for up to 30 minutes, and jsonwebtoken's verification cost about 35 µs of each
 * write's CPU (docs/reference/callers.md#tokens). The provider's tokens are verified each time, so a key
 * it has withdrawn stops a token once the set is fetched again.
 */
export function createTokens(secret: string, settings: TokenSettings = { issuance: 'open' }): Tokens {
  const key = keyOf(secret);
  const issuanceOpen = settings.issuance === 'open';
  const provider = settings.provider && providerVerifier(settings.provider, CLOCK_SKEW_SECONDS, settings.keySetTiming);
  const verified = new LRUCache<string, { caller: Caller; exp: number }>({ max: VERIFIED_TOKENS });

  function verifyOurs(token: string): { caller: Caller; exp: number } {
    let payload: string | jwt.JwtPayload;
    try {
      // Pinning the algorithm rejects `alg: none` and any other algorithm, whatever the header says.
      payload = jwt.verify(token, key, { algorithms: [ALGORITHM] });
    } catch (err) {
      throw refusalOfOurs(err);
    }
    if (typeof payload === 'string') throw new TokenRefused('malformed');
    const { iat, exp, iss, username, scope, key: keyId } = payload;
    // Only tokens that live as long as ours do: a correctly signed token without exp, or with a
    // longer life, is refused too (docs/reference/callers.md#tokens).
    if (typeof iat !== 'number' || typeof exp !== 'number') throw new TokenRefused('malformed');
    if (exp <= iat || exp - iat > MAX_TOKEN_LIFETIME_SECONDS) throw new TokenRefused('malformed');
    if (iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) throw new TokenRefused('malformed');
    if (iss === OPERATOR_ISSUER || iss === KEY_ISSUER) {
      if (typeof username !== 'string' || username === '' || typeof scope !== 'string') {
        throw new TokenRefused('malformed');
      }
      const scopes = scopesAmong(scope.split(' '));
      if (iss === OPERATOR_ISSUER) {
        return { caller: Object.freeze({ proven: true, subject: username, issuer: iss, scopes }), exp };
      }
      if (typeof keyId !== 'string') throw new TokenRefused('malformed');
      return { caller: Object.freeze({ proven: true, subject: username, issuer: iss, keyId, scopes }), exp };
    }
    if (iss !== undefined) throw new TokenRefused('foreign');
    // A token of POST /api/user, from before issuance was closed: the operator closed it.
    if (!issuanceOpen) throw new TokenRefused('issuance-closed');
    if (username !== undefined && typeof username !== 'string') throw new TokenRefused('malformed');
    return { caller: Object.freeze({ proven: false, subject: username ?? null, scopes: ALL_SCOPES }), exp };
  }

  /** In the open mode every token has every scope (docs/reference/callers.md#scopes). */
  const withScopes = (caller: Caller): Caller =>
    issuanceOpen && caller.scopes.length < ALL_SCOPES.length
      ? Object.freeze({ ...caller, scopes: ALL_SCOPES })
      : caller;

  const sign = (claims: object, issuer?: string) =>
    jwt.sign(claims, key, {
      algorithm: ALGORITHM,
      expiresIn: MAX_TOKEN_LIFETIME_SECONDS,
      jwtid: newTokenId(),
      ...(issuer === undefined ? {} : { issuer }),
    });

  return {
    issuanceOpen,
    issue: (username) => sign({ username }),
    issueForKey: ({ id, label, scopes }) => sign({ username: label, key: id, scope: scopes.join(' ') }, KEY_ISSUER),
    async verify(token) {
      const known = verified.get(token);
      // jsonwebtoken's own test of exp: expired from the second it names.
      if (known && Math.floor(Date.now() / 1000) < known.exp) return known.caller;
      let alg: string | undefined;
      try {
        alg = decodeProtectedHeader(token).alg;
      } catch (err) {
        throw new TokenRefused('malformed', { cause: err });
      }
      if (alg === ALGORITHM) {
        const ours = verifyOurs(token);
        const caller = withScopes(ours.caller);
        verified.set(token, { caller, exp: ours.exp });
        return caller;
      }
      if (provider && alg !== undefined && PROVIDER_ALGORITHMS.includes(alg)) return withScopes(await provider(token));
      throw new TokenRefused('foreign');
    },
  };
}

/** What jsonwebtoken's refusal of one of our tokens tells a client. */
function refusalOfOurs(err: unknown): TokenRefused {
  if (err instanceof jwt.TokenExpiredError) return new TokenRefused('expired', { cause: err });
  if (err instanceof jwt.JsonWebTokenError && err.message === 'invalid signature') {
    return new TokenRefused('foreign', { cause: err });
  }
  return new TokenRefused('malformed', { cause: err });
}

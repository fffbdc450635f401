import { setTimeout as sleep } from 'node:timers/promises';
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Caller } from './caller';
import { keySetOf, type KeySetSource } from './key-set';
import { TokenRefused } from './refusal';
import { type Scope, scopesAmong } from './scopes';

/** The shop's identity provider: where its public keys are, and what its tokens must say (JWT_*). */
export interface IdentityProvider {
  /**
   * Its JSON Web Key Set: JWT_JWKS_FILE, or JWT_JWKS_URL (https://, or http:// on the loopback
   * interface from a listener proved to be a trusted user's: key-set.ts).
   */
  keySet: KeySetSource;
  /** JWT_ISSUER: the `iss` its tokens carry. */
  issuer: string;
  /** JWT_AUDIENCE: an `aud` its tokens must carry, naming this service. */
  audience: string;
  /**
   * JWT_SCOPE_MAP: the provider's names for our scopes (its name -> ours). Unset, its tokens'
   * scopes are read by our names (docs/reference/callers.md#scopes).
   */
  scopeNames?: Readonly<Record<string, readonly Scope[]>>;
}

/**
 * The scopes a provider's token grants: its `scope` claim (RFC 8693 and 9068: space-separated)
 * or its `scp` (an array, as some providers write it, or a string), each name read through the
 * provider's map where one is set. Neither claim: none.
 */
function scopesOf(payload: Record<string, unknown>, names: IdentityProvider['scopeNames']): Scope[] {
  const claimed = [payload.scope, payload.scp].flatMap((claim) =>
    typeof claim === 'string'
      ? claim.split(' ')
      : Array.isArray(claim)
        ? claim.filter((name): name is string => typeof name === 'string')
        : [],
  );
  return scopesAmong(names ? claimed.flatMap((name) => (Object.hasOwn(names, name) ? names[name] : [])) : claimed);
}

/** What jose's refusal of a provider's token tells a client. */
function refusalOf(err: unknown): TokenRefused {
  if (err instanceof TokenRefused) return err;
  if (err instanceof errors.JWTExpired) return new TokenRefused('expired', { cause: err });
  const foreign =
    err instanceof errors.JWSSignatureVerificationFailed ||
    err instanceof errors.JWKSNoMatchingKey ||
    err instanceof errors.JWKSMultipleMatchingKeys ||
    err instanceof errors.JOSEAlgNotAllowed ||
    (err instanceof errors.JWTClaimValidationFailed && (err.claim === 'iss' || err.claim === 'aud'));
  return new TokenRefused(foreign ? 'foreign' : 'malformed', { cause: err });
}

/** The algorithms of the provider's tokens: its keys are public keys, never a shared secret. */
export const PROVIDER_ALGORITHMS = ['RS256', 'ES256'];

/** How the key set is kept (docs/reference/callers.md#who-may-write); tests shorten the age. */
export interface KeySetTiming {
  /** A key set older than this is fetched again before a token is verified with it. */
  maxAgeMs: number;
  /** A token with a key the set lacks fetches it again, at most once in this time. */
  cooldownMs: number;
}

const KEY_SET_TIMING: KeySetTiming = { maxAgeMs: 60_000, cooldownMs: 1_000 };
/** How long a fetch of the key set may take. */
const FETCH_TIMEOUT_MS = 5_000;

/** The provider's key set could not be had (unreachable, slow, not a key set): the token cannot be judged. */
export class KeysUnavailable extends Error {}

/**
 * The provider's keys, through jose's remote key set (it caches the set, and fetches it again
 * when it is old or a token names a key it lacks, once per cooldown; a file is read again alike),
 * each read bounded and its source proved (key-set.ts), with one addition: a token
 * naming a key the set lacks, met during the cooldown, waits for it to end and looks again rather
 * than being refused, so a key the provider has just added is accepted from its first token.
 */
function providerKeys(source: KeySetSource, timing: KeySetTiming): JWTVerifyGetKey {
  const { url, fetch } = keySetOf(source);
  const remote = createRemoteJWKSet(url, {
    cacheMaxAge: timing.maxAgeMs,
    cooldownDuration: timing.cooldownMs,
    timeoutDuration: FETCH_TIMEOUT_MS,
    [customFetch]: fetch,
  });
  const keyOf: JWTVerifyGetKey = async (header, token) => {
    // Cooling down now: a key the set lacks is refused without fetching it again. Otherwise jose
    // fetches it again for such a key, and a key still missing then is refused at once.
    const coolingDown = remote.coolingDown;
    try {
      return await remote(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || !coolingDown) throw err;
      await sleep(timing.cooldownMs);
      return remote(header, token);
    }
  };
  return async (header, token) => {
    try {
      return await keyOf(header, token);
    } catch (err) {
      // No key, or more than one, for the token: the token's fault. Anything else: the set's.
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) throw err;
      throw new KeysUnavailable("the identity provider's key set could not be fetched", { cause: err });
    }
  };
}

/**
 * Verifies a token of the identity provider: signed (RS256 or ES256) by a key of its set, its
 * `iss` and an `aud` as configured, a `sub`, an `exp` not past and an `nbf` and `iat` not ahead,
 * each within the clock skew. Throws KeysUnavailable when the key set cannot be had, TokenRefused
 * when the token is refused.
 */
export function providerVerifier(
  provider: IdentityProvider,
  clockSkewSeconds: number,
  timing: KeySetTiming = KEY_SET_TIMING,
): (token: string) => Promise<Caller> {
  const keys = providerKeys(provider.keySet, timing);
  return async (token) => {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        algorithms: PROVIDER_ALGORITHMS,
        issuer: provider.issuer,
        audience: provider.audience,
        requiredClaims: ['exp', 'sub'],
        clockTolerance: clockSkewSeconds,
      }));
    } catch (err) {
      if (err instanceof KeysUnavailable) throw err;
      throw refusalOf(err);
    }
    // jose looks at iat only against a maximum age; a token from the future is refused, as ours are.
    if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + clockSkewSeconds) {
      throw new TokenRefused('malformed');
    }
    // jose checks that a sub is there, not what it is: a number, an object or an array names no one.
    if (typeof payload.sub !== 'string' || payload.sub === '') throw new TokenRefused('malformed');
    return {
      proven: true,
      subject: payload.sub,
      issuer: provider.issuer,
      scopes: scopesOf(payload, provider.scopeNames),
    };
  };
}

import { createSecretKey } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { LRUCache } from 'lru-cache';

/** Tokens are HS256 JWTs carrying `{ username, iat, exp }` and live 30 minutes. */
const TOKEN_LIFETIME_SECONDS = 1800;
const ALGORITHM = 'HS256';
/** How far ahead of this machine's clock another instance's may run. */
const CLOCK_SKEW_SECONDS = 5;
/** How many verified tokens are remembered (about 300 bytes each). */
const VERIFIED_TOKENS = 10_000;

interface TokenPayload {
  username?: string;
  iat: number;
  exp: number;
}

export interface Tokens {
  issue(username: string | undefined): string;
  /** Throws when the token is malformed, tampered with, expired, or not HS256 over our secret. */
  verify(token: string): TokenPayload;
}

/**
 * `verify` remembers the tokens it accepted, by their exact text, until they expire: a client
 * sends the same token with every write for up to 30 minutes, and jsonwebtoken's verification
 * cost about 35 µs of each write's CPU (docs/decisions.md#tokens). Any other text, a token
 * signed anew included, is verified in full.
 */
export function createTokens(secret: string): Tokens {
  // A key object, made once: given a string, jsonwebtoken first tries to parse it as a PEM public
  // key, and that failure cost each write about as much as all the rest of it did.
  const key = createSecretKey(Buffer.from(secret));
  const verified = new LRUCache<string, TokenPayload>({ max: VERIFIED_TOKENS });

  function verifyInFull(token: string): TokenPayload {
    // Pinning the algorithm rejects `alg: none` and any other algorithm, whatever the header says.
    const payload = jwt.verify(token, key, { algorithms: [ALGORITHM] });
    if (typeof payload === 'string') throw new Error('token payload is not an object');
    const { iat, exp } = payload;
    // Only tokens that live as long as ours do: a correctly signed token without exp, or with a
    // longer life, is refused too (docs/decisions.md#tokens).
    if (typeof iat !== 'number' || typeof exp !== 'number') throw new Error('token has no iat or exp');
    if (exp <= iat || exp - iat > TOKEN_LIFETIME_SECONDS) throw new Error('token lives longer than 1800 s');
    if (iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) throw new Error('token issued in the future');
    return Object.freeze({ ...payload, iat, exp });
  }

  return {
    issue(username) {
      return jwt.sign({ username }, key, { algorithm: ALGORITHM, expiresIn: TOKEN_LIFETIME_SECONDS });
    },
    verify(token) {
      const known = verified.get(token);
      // jsonwebtoken's own test of exp: expired from the second it names.
      if (known && Math.floor(Date.now() / 1000) < known.exp) return known;
      const payload = verifyInFull(token);
      verified.set(token, payload);
      return payload;
    },
  };
}

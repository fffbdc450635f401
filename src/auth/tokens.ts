import { createSecretKey } from 'node:crypto';
import jwt from 'jsonwebtoken';

/** Tokens are HS256 JWTs carrying `{ username, iat, exp }` and live 30 minutes. */
export const TOKEN_LIFETIME_SECONDS = 1800;
const ALGORITHM = 'HS256';
/** How far ahead of this machine's clock another instance's may run. */
const CLOCK_SKEW_SECONDS = 5;

export interface TokenPayload {
  username?: string;
  iat: number;
  exp: number;
}

export interface Tokens {
  issue(username: string | undefined): string;
  /** Throws when the token is malformed, tampered with, expired, or not HS256 over our secret. */
  verify(token: string): TokenPayload;
}

export function createTokens(secret: string): Tokens {
  // A key object, made once: given a string, jsonwebtoken first tries to parse it as a PEM public
  // key, and that failure cost each write about as much as all the rest of it did.
  const key = createSecretKey(Buffer.from(secret));
  return {
    issue(username) {
      return jwt.sign({ username }, key, { algorithm: ALGORITHM, expiresIn: TOKEN_LIFETIME_SECONDS });
    },
    verify(token) {
      // Pinning the algorithm rejects `alg: none` and any other algorithm, whatever the header says.
      const payload = jwt.verify(token, key, { algorithms: [ALGORITHM] });
      if (typeof payload === 'string') throw new Error('token payload is not an object');
      const { iat, exp } = payload;
      // Only tokens that live as long as ours do: a correctly signed token without exp, or with a
      // longer life, is refused too (docs/decisions.md rule 13).
      if (typeof iat !== 'number' || typeof exp !== 'number') throw new Error('token has no iat or exp');
      if (exp <= iat || exp - iat > TOKEN_LIFETIME_SECONDS) throw new Error('token lives longer than 1800 s');
      if (iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) throw new Error('token issued in the future');
      return payload as TokenPayload;
    },
  };
}

import jwt from 'jsonwebtoken';

/** Tokens are HS256 JWTs carrying `{ username, iat, exp }` and live 30 minutes. */
export const TOKEN_LIFETIME_SECONDS = 1800;
const ALGORITHM = 'HS256';

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
  return {
    issue(username) {
      return jwt.sign({ username }, secret, { algorithm: ALGORITHM, expiresIn: TOKEN_LIFETIME_SECONDS });
    },
    verify(token) {
      // Pinning the algorithm rejects `alg: none` and any other algorithm, whatever the header says.
      const payload = jwt.verify(token, secret, { algorithms: [ALGORITHM] });
      if (typeof payload === 'string') throw new Error('token payload is not an object');
      return payload as TokenPayload;
    },
  };
}

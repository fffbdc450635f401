import type Koa from 'koa';
import type { TokenPayload, Tokens } from '../auth/tokens';
import { HttpError } from './errors';

/**
 * The bearer token of a request: the second space-separated element of the Authorization
 * header, whatever the first word is. None is 401; one that fails verification is 403.
 */
export function authenticate(ctx: Koa.Context, tokens: Tokens): TokenPayload {
  const token = ctx.get('Authorization').split(' ')[1];
  if (!token) throw new HttpError(401);
  try {
    return tokens.verify(token);
  } catch {
    throw new HttpError(403);
  }
}

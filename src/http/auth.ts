import type Koa from 'koa';
import type { Tokens } from '../auth/tokens';
import { HttpError } from './errors';

/**
 * Guards the mutations. Runs before the body is read: no token is 401, a token that fails
 * verification is 403. The token is the second space-separated element of the
 * Authorization header, whatever the first word is.
 */
export function requireToken(tokens: Tokens): Koa.Middleware {
  return async (ctx, next) => {
    const token = ctx.get('Authorization').split(' ')[1];
    if (!token) throw new HttpError(401);
    try {
      ctx.state.user = tokens.verify(token);
    } catch {
      throw new HttpError(403);
    }
    await next();
  };
}

import Router from '@koa/router';
import type { Tokens } from '../auth/tokens';
import { readBody } from './body';
import { HttpError } from './errors';

/** POST /api/user: a token for anyone, carrying the optional `username`. */
export function tokenRouter(tokens: Tokens): Router {
  const router = new Router();
  router.post('/api/user', readBody(400), async (ctx) => {
    const body: unknown = ctx.request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400);
    const username = Object.hasOwn(body, 'username') ? (body as { username: unknown }).username : undefined;
    if (username !== undefined && (typeof username !== 'string' || username.includes('\u0000') || !username.isWellFormed())) {
      throw new HttpError(400);
    }
    ctx.body = { token: tokens.issue(username) };
  });
  return router;
}

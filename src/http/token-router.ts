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
    // Any string will do: the username is only signed into the token, never stored, so even
    // U+0000 or a lone surrogate travels (JSON-escaped) and reads back as sent.
    if (username !== undefined && typeof username !== 'string') throw new HttpError(400);
    ctx.body = { token: tokens.issue(username) };
  });
  return router;
}

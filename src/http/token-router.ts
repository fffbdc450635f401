import Router from '@koa/router';
import type { Tokens } from '../auth/tokens';
import { HttpError } from './errors';
import { type Policy, routes } from './route';

export const TOKEN_POLICY: Policy = { body: true, invalid: 400 };

/** POST /api/user: a token for anyone, carrying the optional `username`. */
export function tokenRouter(tokens: Tokens): Router {
  const router = new Router();
  const route = routes(tokens);
  router.post(
    '/api/user',
    route(TOKEN_POLICY, (ctx, body) => {
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400);
      const username = Object.hasOwn(body, 'username') ? (body as { username: unknown }).username : undefined;
      // Any string will do: the username is only signed into the token, never stored, so even
      // U+0000 or a lone surrogate travels (JSON-escaped) and reads back as sent.
      if (username !== undefined && typeof username !== 'string') throw new HttpError(400);
      ctx.body = { token: tokens.issue(username) };
    }),
  );
  return router;
}

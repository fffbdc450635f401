import type { Tokens } from '../auth/tokens';
import type { API_ROUTES } from './api-routes';
import { HttpError } from './errors';
import type { Handlers } from './route';

/** POST /api/user: a token for anyone, carrying the optional `username` (declared in api-routes.ts). */
export function tokenHandlers(tokens: Tokens) {
  return {
    // Any string will do: the username is only signed into the token, never stored, so even
    // U+0000 or a lone surrogate travels (JSON-escaped) and reads back as sent.
    issueToken(ctx, { body }) {
      // TOKEN_ISSUANCE=closed: tokens come from the operator or the identity provider (docs/decisions.md#who-may-write).
      if (!tokens.issuanceOpen) throw new HttpError(403);
      ctx.body = { token: tokens.issue(body.username) };
    },
  } satisfies Partial<Handlers<typeof API_ROUTES>>;
}

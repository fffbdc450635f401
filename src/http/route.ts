import type { RouterContext } from '@koa/router';
import type Koa from 'koa';
import type { Tokens } from '../auth/tokens';
import { isRejectedValue } from '../db/errors';
import { readBody } from './body';
import { HttpError } from './errors';

/** How a route answers what it cannot accept, declared where the route is declared. */
export interface Policy {
  /** A bearer token is needed: it is checked before anything else, the body included (401, 403). */
  token?: boolean;
  /** The route reads a request body (docs/decisions.md, rule 12). */
  body?: boolean;
  /**
   * The status for input the route cannot accept (a body that fails its checks, or a value the
   * database refuses): 400, or 404 where the specification makes every failure a 404 (PUT).
   * Unset: 404, as for a lookup of a value no bike can hold.
   */
  invalid?: 400 | 404;
}

export type Handler = (ctx: RouterContext, body: unknown) => Promise<void> | void;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path that is not valid percent-encoding (/bikes/by-handle/%ZZ) names nothing: 404 (rule 6). */
export function isWellFormedPath(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The bearer token, the second word of the Authorization header (rule 14): none is 401, one that
 * fails verification 403. Its payload is attached to the request, as the specification says.
 */
function authenticate(ctx: Koa.Context, tokens: Tokens): void {
  const token = ctx.get('Authorization').split(' ')[1];
  if (!token) throw new HttpError(401);
  try {
    ctx.state.user = tokens.verify(token);
  } catch {
    throw new HttpError(403);
  }
}

/**
 * A route's handler behind its policy, always in this order: the token, then the path (not valid
 * percent-encoding, or an id that is not a UUID, names no bike: 404), then the body, then the handler.
 */
export function routes(tokens: Tokens) {
  return (policy: Policy, handler: Handler): Koa.Middleware =>
    async (ctx) => {
      const invalid = policy.invalid ?? 404;
      if (policy.token) authenticate(ctx, tokens);
      if (!isWellFormedPath(ctx.path)) throw new HttpError(404);
      const { id } = (ctx as unknown as RouterContext).params;
      if (id !== undefined && !UUID.test(id)) throw new HttpError(404);
      const body = policy.body ? await readBody(ctx, invalid) : undefined;
      try {
        await handler(ctx as unknown as RouterContext, body);
      } catch (err) {
        if (isRejectedValue(err)) throw new HttpError(invalid, {}, { cause: err });
        throw err;
      }
    };
}

import type { RouterContext } from '@koa/router';
import type Koa from 'koa';
import { HttpError } from './errors';
import { isWellFormedPath } from './path-matching';

/**
 * A known path asked with a method it does not serve gets 405 and an Allow header; OPTIONS gets
 * 204 and the same header. (Used instead of the router's allowedMethods(), which answers
 * methods the router does not know with 501.) Allow names every method some route answers at
 * this path: at /bikes/all the list's GET and HEAD and the id route's PUT, PATCH and DELETE,
 * which answer there (docs/decisions.md#path-matching). So a 405 comes only for a method no
 * route of the path serves, never for an operation of the OpenAPI document.
 */
export function methodNotAllowed(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    const matched = ((ctx as unknown as RouterContext).matched ?? []).filter((layer) => layer.methods.length > 0);
    if (ctx.status !== 404 || ctx.body != null || matched.length === 0 || !isWellFormedPath(ctx.path)) return;
    const allowed = [...new Set(matched.flatMap((layer) => layer.methods))];
    const allow = allowed.join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      ctx.set('Allow', allow);
      return;
    }
    throw new HttpError(405, { Allow: allow });
  };
}

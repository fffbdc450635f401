import type { RouterContext } from '@koa/router';
import type Koa from 'koa';
import { HttpError } from './errors';
import { isWellFormedPath } from './route';

/**
 * A known path asked with a method it does not serve gets 405 and an Allow header; OPTIONS gets
 * 204 and the same header. (Used instead of the router's allowedMethods(), which answers
 * methods the router does not know with 501.) Where a literal path and a parameter both match,
 * the literal one wins: /bikes/all is the list (GET, HEAD), not /bikes/:id with the id "all".
 */
export function methodNotAllowed(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    const matched = ((ctx as unknown as RouterContext).matched ?? []).filter((layer) => layer.methods.length > 0);
    if (ctx.status !== 404 || ctx.body != null || matched.length === 0 || !isWellFormedPath(ctx.path)) return;
    const fewestParams = Math.min(...matched.map((layer) => layer.paramNames.length));
    const mostSpecific = matched.filter((layer) => layer.paramNames.length === fewestParams);
    const allowed = [...new Set(mostSpecific.flatMap((layer) => layer.methods))];
    const allow = allowed.join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      ctx.set('Allow', allow);
      return;
    }
    throw new HttpError(405, { Allow: allow });
  };
}

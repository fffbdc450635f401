import type { RouterContext } from '@koa/router';
import type Koa from 'koa';
import { HttpError } from './errors';

/**
 * A known path asked with a method it does not serve gets 405 and an Allow header; OPTIONS gets
 * 204 and the same header. (Used instead of the router's allowedMethods(), which answers
 * methods the router does not know with 501.)
 */
export function methodNotAllowed(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    const matched = (ctx as unknown as RouterContext).matched ?? [];
    if (ctx.status !== 404 || ctx.body != null || matched.length === 0) return;
    const allowed = [...new Set(matched.flatMap((layer) => layer.methods))];
    if (allowed.length === 0) return;
    const allow = allowed.join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      ctx.set('Allow', allow);
      return;
    }
    throw new HttpError(405, { Allow: allow });
  };
}

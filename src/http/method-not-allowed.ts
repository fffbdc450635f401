import type { RouterContext } from '@koa/router';
import type Koa from 'koa';
import { HttpError } from './errors';
import type { HeaderName } from './headers';
import { isWellFormedPath } from './path-matching';

/**
 * The answers to a request no route serves, declared once (the OpenAPI document's
 * `x-unmatched-requests` is made of them): what each means, the headers it carries, and those of
 * them some answers of it lack.
 */
export const UNMATCHED_ANSWERS: Record<
  204 | 404 | 405,
  { description: string; headers: HeaderName[]; sometimes?: HeaderName[] }
> = {
  // A CORS preflight is answered by the CORS layer (cors.ts), in Access-Control-Allow-Methods.
  204: {
    description:
      'OPTIONS of a known path: the methods it serves, in Allow (a CORS preflight: in Access-Control-Allow-Methods).',
    headers: ['Allow'],
    sometimes: ['Allow'],
  },
  404: { description: 'No such path.', headers: [] },
  405: { description: 'The path does not serve this method: Allow names those it serves.', headers: ['Allow'] },
};

/**
 * A known path asked with a method it does not serve gets 405 and an Allow header; OPTIONS gets
 * 204 and the same header. (Used instead of the router's allowedMethods(), which answers
 * methods the router does not know with 501.) Allow names the methods of the path matched as
 * OpenAPI matches (docs/reference/http.md#path-matching): a literal one (/bikes/all: GET, HEAD) over
 * the parameter beside it (/bikes/:id), whose routes step aside there (routerOf, route.ts).
 */
export function methodNotAllowed(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    // Every answered request passes here: the common case leaves before any work.
    if (ctx.status !== 404 || ctx.body != null) return;
    const layers = ((ctx as unknown as RouterContext).matched ?? []).filter((layer) => layer.methods.length > 0);
    const literal = layers.filter((layer) => layer.paramNames.length === 0);
    const matched = literal.length > 0 ? literal : layers;
    if (matched.length === 0 || !isWellFormedPath(ctx.path)) return;
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

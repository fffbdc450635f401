import type Koa from 'koa';
import { httpDuration, httpRequests } from '../metrics';

/**
 * Counts and times every request, by method, status and the route's template (/bikes/:id), never
 * the raw path, so the number of series stays bounded; what matched no route is "unmatched".
 */
export function requestMetrics(): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.res.once('close', () => {
      const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const labels = {
        method: ctx.method,
        route: typeof route === 'string' ? route : 'unmatched',
        status: String(ctx.status),
      };
      httpRequests.inc(labels);
      httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    await next();
  };
}

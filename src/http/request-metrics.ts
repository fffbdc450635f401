import type Koa from 'koa';
import type { Histogram } from 'prom-client';
import { httpDuration } from '../metrics';

/** A histogram's series for one method, route template and status, made once each. */
const series = new Map<string, Histogram.Internal<'method' | 'route' | 'status'>>();

function seriesOf(method: string, route: string, status: number) {
  const key = `${method} ${route} ${status}`;
  let found = series.get(key);
  if (!found) series.set(key, (found = httpDuration.labels(method, route, String(status))));
  return found;
}

/**
 * Times every request, by method, status and the route's template (/bikes/:id), never the raw
 * path, so the number of series stays bounded; what matched no route is "unmatched". The
 * histogram's `_count` is the count of requests. An event stream lasts as long as its client
 * stays: it is timed to its opening, counted when it ends (the gauge http_event_streams counts
 * those open).
 */
export function requestMetrics(): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    let opened: bigint | undefined;
    ctx.res.once('close', () => {
      const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const seconds = Number((opened ?? process.hrtime.bigint()) - started) / 1e9;
      seriesOf(ctx.method, typeof route === 'string' ? route : 'unmatched', ctx.status).observe(seconds);
    });
    await next();
    // An event stream writes itself (event-stream.ts), and goes on after this.
    if (ctx.respond === false) opened = process.hrtime.bigint();
  };
}

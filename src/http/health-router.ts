import type Router from '@koa/router';
import type { Readiness } from '../db/readiness';
import { registry } from '../metrics';
import type { PlainRoute } from './plain-route';
import { newRouter } from './path-matching';

/**
 * For operators. GET /healthz: 200 while the process is up (liveness). GET /readyz: 200 when
 * the database is usable, 503 otherwise (readiness); plain text, and a 503 here is an answer,
 * not an error, so it is not logged as one.
 */
export function healthRouter(readiness: () => Promise<Readiness>): Router {
  const router = newRouter();

  router.get('/healthz', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/plain';
    ctx.body = 'OK';
  });

  router.get('/readyz', async (ctx) => {
    const result = await readiness();
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/plain';
    ctx.status = result.ready ? 200 : 503;
    ctx.body = result.ready ? 'OK' : `Service Unavailable: ${result.reason}`;
  });

  return router;
}

/** The document's description of the routes of this file (openapi.ts). */
export const HEALTH_ROUTES: PlainRoute[] = [
  {
    path: '/healthz',
    operationId: 'liveness',
    summary: 'Whether the process is up',
    responses: { 200: { description: '`OK`', types: ['text/plain'], headers: ['Cache-Control'] } },
  },
  {
    path: '/readyz',
    operationId: 'readiness',
    summary: 'Whether the database is usable',
    responses: {
      200: { description: '`OK`', types: ['text/plain'], headers: ['Cache-Control'] },
      503: { description: 'Not ready, and why.', types: ['text/plain'], headers: ['Cache-Control'] },
    },
  },
  {
    path: '/metrics',
    operationId: 'metrics',
    summary: "The service's metrics, in Prometheus's text format",
    responses: {
      200: { description: 'The metrics.', types: ['text/plain'], headers: ['Cache-Control'] },
      404: { description: 'METRICS_PORT serves them on a port of their own.', types: ['text/plain'] },
    },
  },
];

/** GET /metrics: Prometheus's text format. On the API's port, or alone on METRICS_PORT. */
export function metricsRouter(): Router {
  const router = newRouter();
  router.get('/metrics', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}

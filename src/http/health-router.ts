import Router from '@koa/router';
import type { Readiness } from '../db/readiness';

/**
 * GET /healthz: 200 while the process is up (liveness). GET /readyz: 200 when the database is
 * usable, 503 otherwise (readiness). Plain text; a 503 here is an answer, not an error, so it
 * is not thrown to the error middleware and not logged as one.
 */
export function healthRouter(readiness: () => Promise<Readiness>): Router {
  const router = new Router();

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

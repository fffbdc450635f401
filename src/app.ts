import Koa from 'koa';
import { API_ROUTES, type ApiDeps, apiRouter } from './api';
import { apiDocument } from './api/document';
import { isDatabaseUnavailable } from './db/errors';
import type { Readiness } from './db/readiness';
import { cors } from './http/cors';
import { docsRouter } from './http/docs-router';
import { coalesced, errorHandler } from './http/errors';
import { HEARTBEAT_MS } from './http/event-stream';
import { healthRouter, metricsRouter } from './http/health-router';
import { methodNotAllowed } from './http/method-not-allowed';
import { representation } from './http/representation';
import { requestLog } from './http/request-log';
import { requestMetrics } from './http/request-metrics';
import { corsHeadersOf } from './http/route';
import type { Logger } from './logger';

/** The API's parts (ApiDeps, declared there), and what the app around it needs. */
export interface AppDeps extends Omit<ApiDeps, 'heartbeatMs'> {
  logger: Logger;
  /** GET /readyz answers with this. */
  readiness: () => Promise<Readiness>;
  /** CORS_ORIGIN: CORS is off when unset. */
  corsOrigin?: string;
  /** TRUST_PROXY: how many proxies in front append to X-Forwarded-For (0: the peer is the client). */
  trustedProxies?: number;
  /** False when METRICS_PORT serves /metrics on a listener of its own (metricsApp). */
  servesMetrics?: boolean;
  /** How often an event stream gets a comment (HEARTBEAT_MS; tests shorten it). */
  heartbeatMs?: number;
}

/**
 * The codes of a connection lost while a response was being sent: the client reset it, closed
 * it, or stopped answering (or a shutdown cut it after its grace). Nothing of ours failed, so
 * they are logged at info, not as errors (docs/reference/http.md#clients-that-go-away).
 */
const CONNECTION_LOST = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_STREAM_DESTROYED',
]);

/** The Koa application, without listening: the server entry and the tests both build it here. */
export function createApp({
  logger,
  readiness,
  corsOrigin,
  trustedProxies = 0,
  servesMetrics = true,
  heartbeatMs = HEARTBEAT_MS,
  ...api
}: AppDeps): Koa {
  // The client (ctx.ip) is the entry the outermost of our proxies appended to X-Forwarded-For:
  // the entries before it are whatever the client sent (docs/reference/callers.md#trusted-proxies).
  const app = new Koa({ proxy: trustedProxies > 0, maxIpsCount: trustedProxies });
  // Errors are answered and logged by errorHandler; what reaches here is a failure while
  // streaming a body, after the status was sent.
  const reportedLost = new WeakSet<Koa.Context>();
  const cut = coalesced(logger, 'response cut: database unavailable');
  app.on('error', (err: Error & { code?: string }, ctx?: Koa.Context) => {
    if (err.code === undefined || !CONNECTION_LOST.has(err.code)) {
      // A list whose database went away under it: the client sees its body cut; the outage is
      // the watch's to say, once a change.
      if (isDatabaseUnavailable(err)) cut(err.message);
      else logger.error({ err }, 'response failed after headers were sent');
      return;
    }
    // A lost connection shows as several errors (the socket's ECONNRESET, then the body's
    // premature close): one line says what happened first.
    if (ctx && reportedLost.has(ctx)) return;
    if (ctx) reportedLost.add(ctx);
    logger.info(
      { requestId: ctx?.state.requestId, code: err.code, err: err.message },
      'connection lost before the response ended',
    );
  });

  app.use(requestLog(logger));
  app.use(requestMetrics());
  // Outside the error middleware, so error responses carry the CORS headers too; what it allows
  // and exposes is what the routes declare.
  const corsMiddleware = cors(corsOrigin, corsHeadersOf(API_ROUTES));
  if (corsMiddleware) app.use(corsMiddleware);
  app.use(representation());
  app.use(errorHandler(logger));
  app.use(methodNotAllowed());
  const routers = [
    apiRouter({ ...api, heartbeatMs }),
    healthRouter(readiness),
    ...(servesMetrics ? [metricsRouter()] : []),
    docsRouter(apiDocument),
  ];
  for (const router of routers) {
    app.use(router.routes());
  }
  return app;
}

/** /metrics alone, for METRICS_PORT: an admin port that need not be published with the API's. */
export function metricsApp(): Koa {
  const app = new Koa();
  app.use(metricsRouter().routes());
  return app;
}

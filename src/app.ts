import Koa from 'koa';
import type { Tokens } from './auth/tokens';
import type { BikeRepository } from './bikes/repository';
import { API_ROUTES } from './http/api-routes';
import { bikeHandlers } from './http/bike-handlers';
import { entityTags, parseTagCondition } from './http/conditional';
import { cors } from './http/cors';
import { docsRouter } from './http/docs-router';
import { errorHandler } from './http/errors';
import type { Readiness } from './db/readiness';
import { healthRouter, metricsRouter } from './http/health-router';
import { methodNotAllowed } from './http/method-not-allowed';
import { requestLog } from './http/request-log';
import { requestMetrics } from './http/request-metrics';
import { representation } from './http/representation';
import { corsHeadersOf, routerOf } from './http/route';
import { tokenHandlers } from './http/token-handlers';
import type { Logger } from './logger';
import type { AbuseLimits } from './http/limits';

export interface AppDeps {
  /** Reads may come from a replica. */
  bikes: BikeRepository;
  /** Reads from the primary, for a client that must read its own writes. */
  bikesOnPrimary: BikeRepository;
  /** This catalog's identity as it is now (catalog-identity.ts), part of every ETag. */
  catalogIdentity: () => string;
  tokens: Tokens;
  logger: Logger;
  /** GET /readyz answers with this. */
  readiness: () => Promise<Readiness>;
  /** CORS_ORIGIN: CORS is off when unset. */
  corsOrigin?: string;
  /** The abuse limits (docs/decisions.md#abuse-limits). */
  limits: AbuseLimits;
  /** TRUST_PROXY: the client's address comes from X-Forwarded-For. */
  trustProxy?: boolean;
  /** False when METRICS_PORT serves /metrics on a listener of its own (metricsApp). */
  servesMetrics?: boolean;
}

/** The Koa application, without listening: the server entry and the tests both build it here. */
export function createApp({
  bikes,
  bikesOnPrimary,
  catalogIdentity,
  tokens,
  logger,
  readiness,
  corsOrigin,
  limits,
  trustProxy = false,
  servesMetrics = true,
}: AppDeps): Koa {
  const app = new Koa({ proxy: trustProxy });
  // Errors are answered and logged by errorHandler; what reaches here is a failure while
  // streaming a body, after the status was sent.
  app.on('error', (err: Error & { code?: string }) => {
    // A client that went away mid-stream (or a shutdown that cut it) is not a fault of ours.
    if (err.code === 'ERR_STREAM_PREMATURE_CLOSE') logger.info({ err: err.message }, 'response stream closed early');
    else logger.error({ err }, 'response failed after headers were sent');
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
  const tags = entityTags(catalogIdentity);
  const routers = [
    routerOf(
      API_ROUTES,
      { ...bikeHandlers(bikes, bikesOnPrimary, tags), ...tokenHandlers(tokens) },
      {
        tokens,
        // Looked at on the primary, as the writes are.
        currentState: async (id) => (await bikesOnPrimary.current(id))?.state ?? null,
        conditions: (ctx) =>
          tags.conditionsOf({
            ifMatch: parseTagCondition(ctx.req.headers['if-match']),
            ifNoneMatch: parseTagCondition(ctx.req.headers['if-none-match']),
          }),
        limits,
      },
    ),
    healthRouter(readiness),
    ...(servesMetrics ? [metricsRouter()] : []),
    docsRouter(),
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

import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { type Logger, REQUEST_LINE } from '../logger';

// A client's request id is echoed only when it is short and plain.
const CLIENT_REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * The health checks (src/http/health-router.ts): a container engine or a load balancer asks them
 * every few seconds, so their lines are debug lines, and the others are not lost among them.
 */
const HEALTH_CHECKS = new Set(['/healthz', '/readyz']);

/**
 * An X-Request-Id on every response, and one JSON line per request: at info, or debug for a
 * health check. Nothing of the line is made when it would not be written (LOG_LEVEL above its
 * level). Its logger redacts nothing: a request line carries no header and no body, so no credential.
 */
export function requestLog(logger: Logger): Koa.Middleware {
  const lines = logger.isLevelEnabled('info') ? logger.child({}, { redact: [] }) : undefined;
  return async (ctx, next) => {
    const given = ctx.get('X-Request-Id');
    const requestId = CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    const level = HEALTH_CHECKS.has(ctx.path) ? 'debug' : 'info';
    if (lines?.isLevelEnabled(level)) {
      const started = process.hrtime.bigint();
      // Written once the response is sent (or the connection lost), so streamed bodies count whole.
      ctx.res.once('close', () => {
        const line = {
          requestId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          aborted: ctx.res.writableFinished ? undefined : true,
        };
        lines[level](line, REQUEST_LINE);
      });
    }
    await next();
  };
}

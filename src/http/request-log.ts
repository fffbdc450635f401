import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { type Logger, REQUEST_LINE } from '../logger';

// A client's request id is echoed only when it is short and plain.
const CLIENT_REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * An X-Request-Id on every response, and, when the logger writes info lines, one JSON line per
 * request. Nothing of the line is made when it would not be written (LOG_LEVEL above info). Its
 * logger redacts nothing: a request line carries no header and no body, so no credential.
 */
export function requestLog(logger: Logger): Koa.Middleware {
  const lines = logger.isLevelEnabled('info') ? logger.child({}, { redact: [] }) : undefined;
  return async (ctx, next) => {
    const given = ctx.get('X-Request-Id');
    const requestId = CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    if (lines) {
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
        lines.info(line, REQUEST_LINE);
      });
    }
    await next();
  };
}

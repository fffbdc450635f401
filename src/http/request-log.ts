import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { type Logger, REQUEST_LINE } from '../logger';

// A client's request id is echoed only when it is short and plain.
const CLIENT_REQUEST_ID = /^[\w.:-]{1,128}$/;

/** One JSON line per request, and an X-Request-Id on every response. */
export function requestLog(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const given = ctx.get('X-Request-Id');
    const requestId = CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    // Logged once the response is sent (or the connection lost), so streamed bodies count whole.
    ctx.res.once('close', () =>
      logger.info(
        {
          requestId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          ...(!ctx.res.writableFinished && { aborted: true }),
        },
        REQUEST_LINE,
      ),
    );
    await next();
  };
}

import type Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import { HttpError, setInvalidInputStatus } from './errors';

export const BODY_LIMIT_BYTES = 1024 * 1024;
export const BODY_LIMIT = '1mb';

/** Closing after a 413 keeps the unread rest of the body from being taken for the next request. */
const tooLarge = () => new HttpError(413, { Connection: 'close' });

/**
 * Reads a JSON or URL-encoded body of at most 1 MB into ctx.request.body. A body of any other
 * content type, or none, reads as `{}`. A body over 1 MB gets 413 without being read whole:
 * at once when its Content-Length says so (whatever its type), otherwise as soon as the 1 MB
 * is exceeded; the connection is then closed. Any other bad body (malformed JSON, bad
 * encoding), and any value the database refuses later, gets `invalidStatus`: 400, or 404
 * where the specification says so (PUT).
 */
export function readBody(invalidStatus: number): Koa.Middleware {
  const parse = bodyParser({
    enableTypes: ['json', 'form'],
    jsonLimit: BODY_LIMIT,
    formLimit: BODY_LIMIT,
    strict: true,
    // A "__proto__" key is dropped rather than refused: like any unknown field it is ignored.
    ...({ onProtoPoisoning: 'remove' } as object),
    onerror(err: Error & { status?: number }, ctx: Koa.Context) {
      if (err.status === 413) throw tooLarge();
      // A body abandoned half-read (bad gzip, bad charset) cannot be told from the next request.
      throw new HttpError(invalidStatus, ctx.req.complete ? {} : { Connection: 'close' });
    },
  });
  return async (ctx, next) => {
    setInvalidInputStatus(ctx, invalidStatus);
    if (Number(ctx.get('Content-Length')) > BODY_LIMIT_BYTES) throw tooLarge();
    await parse(ctx, next);
  };
}

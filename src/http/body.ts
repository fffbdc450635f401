import type Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import { HttpError } from './errors';

export const BODY_LIMIT = '1mb';

/**
 * Reads a JSON or URL-encoded body of at most 1 MB into ctx.request.body. A body of any other
 * content type, or none, reads as `{}`. Larger bodies get 413 without being read whole, and the
 * connection is closed so the unread rest cannot be taken for the next request. Any other bad
 * body (malformed JSON, bad encoding) gets `invalidStatus`: 400, or 404 where the
 * specification says so (PUT).
 */
export function readBody(invalidStatus: number): Koa.Middleware {
  return bodyParser({
    enableTypes: ['json', 'form'],
    jsonLimit: BODY_LIMIT,
    formLimit: BODY_LIMIT,
    strict: true,
    onerror(err: Error & { status?: number }) {
      if (err.status === 413) throw new HttpError(413, { Connection: 'close' });
      throw new HttpError(invalidStatus);
    },
  });
}

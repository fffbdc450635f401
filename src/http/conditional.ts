import { createHash } from 'node:crypto';
import etag from 'etag';
import fresh from 'fresh';
import type Koa from 'koa';

/**
 * Conditional GET for the read routes. Every 200 carries a weak ETag (weak: the same for the
 * plain and the compressed representation, which are equivalent) and `Cache-Control: no-cache`,
 * so clients revalidate; an If-None-Match that still matches is answered 304 with no body.
 */
export function notModified(ctx: Koa.Context, tag: string): boolean {
  ctx.set('ETag', tag);
  ctx.set('Cache-Control', 'no-cache');
  if (!fresh(ctx.headers, { etag: tag })) return false;
  ctx.status = 304;
  return true;
}

/** The ETag of a list (or a search for `term`) at a catalog version: it changes with every write. */
export function listTag(version: string, term?: string): string {
  return term === undefined
    ? `W/"v${version}"`
    : `W/"v${version}-${createHash('sha1').update(term).digest('base64url').slice(0, 22)}"`;
}

/** The ETag of one bike: from its bytes. */
export const bodyTag = (body: string): string => etag(body, { weak: true });

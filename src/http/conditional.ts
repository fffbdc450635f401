import { createHash } from 'node:crypto';
import etag from 'etag';
import type Koa from 'koa';

/**
 * Conditional GET for the read routes. Every 200 carries a weak ETag (weak: the same for the
 * plain and the compressed representation, which are equivalent) and `Cache-Control: no-cache`,
 * so clients revalidate; an If-None-Match that still matches is answered 304 with no body.
 */
export function notModified(ctx: Koa.Context, tag: string): boolean {
  ctx.set('ETag', tag);
  ctx.set('Cache-Control', 'no-cache');
  if (!matches(ctx.get('If-None-Match'), tag)) return false;
  ctx.status = 304;
  return true;
}

/**
 * If-None-Match's weak comparison (RFC 9110, 13.1.2): `*`, or one of the listed tags with or
 * without `W/`. Evaluated whatever the request's Cache-Control says: that directs caches, and
 * fetch() adds `no-cache` to every request that carries If-None-Match (the `fresh` package,
 * written for caches, would then never answer 304).
 */
function matches(ifNoneMatch: string, tag: string): boolean {
  if (ifNoneMatch === '') return false;
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = (value: string) => value.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((candidate) => opaque(candidate) === opaque(tag));
}

/**
 * Changed whenever a bike's JSON or the way it is written changes (a field, the serializer), so
 * that no tag given out before still matches.
 */
export const REPRESENTATION_VERSION = 'r2';

/**
 * The ETags of one catalog: each names the catalog (catalogIdentity) and the representation
 * version, so a tag never matches in another catalog or after the representation changed.
 */
export function entityTags(catalogId: string) {
  const prefix = `${catalogId}.${REPRESENTATION_VERSION}`;
  return {
    /** A list (or a search for `term`) at a catalog version: it changes with every write. */
    list: (version: string, term?: string): string =>
      term === undefined
        ? `W/"${prefix}.v${version}"`
        : `W/"${prefix}.v${version}-${createHash('sha1').update(term).digest('base64url').slice(0, 22)}"`,
    /** One bike: from its bytes. */
    body: (body: string): string => `W/"${prefix}.${etag(body).slice(1, -1)}"`,
  };
}

import { createHash } from 'node:crypto';
import type Koa from 'koa';
import type { Precondition } from '../bikes/repository';

/**
 * Conditional requests. Every 200 of a read carries an ETag and `Cache-Control: no-cache`, so
 * clients revalidate; an If-None-Match that still matches is answered 304 with no body. A bike's
 * ETag is strong, made of its version (a state of it that is never repeated), so a client can
 * send it back in If-Match to write only over what it read (docs/decisions.md, rule 23); a
 * list's is weak. A compressed answer's strong tag names its coding ("...-gzip"), as its bytes
 * differ; a precondition takes either tag for the same state.
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
  const opaque = (value: string) => withoutCoding(value.trim().replace(/^W\//, ''));
  return ifNoneMatch.split(',').some((candidate) => opaque(candidate) === opaque(tag));
}

/** The content codings whose name a strong tag carries when the answer is compressed. */
const CODING_SUFFIX = /-(gzip|br)"$/;

/** A tag without the name of a content coding: the same state of the resource. */
const withoutCoding = (tag: string) => tag.replace(CODING_SUFFIX, '"');

/** A strong tag (not `W/`) of a compressed answer names its coding: its bytes are not the plain ones. */
export function codedTag(tag: string, coding: string): string {
  return tag.startsWith('"') && !CODING_SUFFIX.test(tag) ? `${tag.slice(0, -1)}-${coding}"` : tag;
}

/**
 * What a write requires of the bike it writes (RFC 9110, 13.1.1 and 13.1.2): If-Match `*`, that
 * it exists; If-Match with tags, that it is in one of their states, by the strong comparison (a
 * weak tag, or one of another catalog, matches nothing); else If-None-Match `*`, that it does not
 * exist. If-None-Match with tags, and If-Unmodified-Since, are not evaluated on writes (rule 23).
 */
export function writePrecondition(ctx: Koa.Context, versionOf: (tag: string) => string | undefined): Precondition {
  const ifMatch = ctx.get('If-Match').trim();
  if (ifMatch === '*') return { kind: 'exists' };
  if (ifMatch !== '') {
    const versions = ifMatch.split(',').map((tag) => versionOf(withoutCoding(tag.trim())));
    return { kind: 'version', versions: versions.filter((version) => version !== undefined) };
  }
  if (ctx.get('If-None-Match').trim() === '*') return { kind: 'absent' };
  return { kind: 'any' };
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
  const bikeTagStart = `"${prefix}.b`;
  return {
    /** A list (or a search for `term`) at a catalog version: it changes with every write. */
    list: (version: string, term?: string): string =>
      term === undefined
        ? `W/"${prefix}.v${version}"`
        : `W/"${prefix}.v${version}-${createHash('sha1').update(term).digest('base64url').slice(0, 22)}"`,
    /** One bike, in one state: strong. */
    bike: (version: string): string => `"${prefix}.b${version}"`,
    /** The version a bike's strong tag names; undefined for any other tag. */
    versionOf(tag: string): string | undefined {
      const version = tag.startsWith(bikeTagStart) && tag.endsWith('"') ? tag.slice(bikeTagStart.length, -1) : '';
      // At most 18 digits: within bigint, whatever a client sends.
      return /^\d{1,18}$/.test(version) ? version : undefined;
    },
  };
}

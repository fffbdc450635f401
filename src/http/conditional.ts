import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type Koa from 'koa';
import type { StateCondition, WriteConditions } from './preconditions';

/**
 * Entity tags and the conditions made of them (RFC 9110, 8.8.3 and 13). Every read answers with
 * an ETag and `Cache-Control: no-cache`, and 304 to an If-None-Match that still matches. A bike's
 * tag is strong and names one state of it (docs/reference/caching-and-conditions.md#conditional-get); a list's is weak.
 * A compressed answer's strong tag names its coding (`"...-gzip"`), as its bytes differ; every
 * comparison sets the coding aside, so both name the same state.
 */

/** A list of entity tags as a request header carries it (If-Match, If-None-Match): `*`, or the tags as written. */
export type TagCondition = { any: true } | { tags: string[] };

/** An entity tag (its quoted form, which may hold a comma), or any other run of characters up to a comma. */
const LIST_ELEMENT = /(?:W\/)?"[^"]*"|[^,\s]+/g;

/**
 * A list of entity tags as a request field carries it, parsed once: absent, `*`, or a list. A
 * field sent twice arrives joined by a comma (RFC 9110, 5.3), so `*, *` or `*, "x"` is `*`; an
 * empty field is an empty list, which no tag matches.
 */
function parseTagCondition(value: string | undefined): TagCondition | undefined {
  if (value === undefined) return undefined;
  const elements: string[] = value.match(LIST_ELEMENT) ?? [];
  return elements.includes('*') ? { any: true } : { tags: elements };
}

/** The content codings whose name a strong tag carries when the answer is compressed. */
const CODING_SUFFIX = /-(gzip|br)"$/;

/** A tag without the name of a content coding: the same state of the resource. */
const withoutCoding = (tag: string) => tag.replace(CODING_SUFFIX, '"');

/** A strong tag (not `W/`) of a compressed answer names its coding: its bytes are not the plain ones. */
export function codedTag(tag: string, coding: string): string {
  return tag.startsWith('"') && !CODING_SUFFIX.test(tag) ? `${tag.slice(0, -1)}-${coding}"` : tag;
}

/** The weak comparison (RFC 9110, 8.8.3.2): the same opaque tag, weak or not, coding set aside. */
const opaque = (tag: string) => withoutCoding(tag.replace(/^W\//, ''));

/**
 * Whether a read's If-None-Match still matches `tag`, the tag the answer carries: then the
 * client's copy is current (304). Evaluated whatever the request's Cache-Control says: that
 * directs caches, and fetch() adds `no-cache` to every request that carries If-None-Match.
 */
export function isFresh(ctx: Koa.Context, tag: string): boolean {
  const condition = parseTagCondition(ctx.req.headers['if-none-match']);
  if (condition === undefined) return false;
  return 'any' in condition || condition.tags.some((candidate) => opaque(candidate) === opaque(tag));
}

/**
 * Whether a read's If-Match holds for `tag`, the tag of its answer (none when it has none):
 * RFC 9110 13.1.1, the strong comparison (a weak tag, a list's, never matches; the coding set
 * aside), `*` any current representation. Without the field, it holds.
 */
export function ifMatchHolds(ctx: Koa.Context, tag: string | undefined): boolean {
  const condition = parseTagCondition(ctx.req.headers['if-match']);
  if (condition === undefined || 'any' in condition) return true;
  if (tag === undefined || tag.startsWith('W/')) return false;
  return condition.tags.some(
    (candidate) => !candidate.startsWith('W/') && withoutCoding(candidate) === withoutCoding(tag),
  );
}

/** A read's validators: its ETag, and that a stored copy must be revalidated. */
export function setValidators(ctx: Koa.Context, tag: string): void {
  ctx.set('ETag', tag);
  ctx.set('Cache-Control', 'no-cache');
}

/**
 * What a list's read returns for its condition: the catalog's version it read (none while that
 * version does not count every change, a trigger switched off: then no tag), and whether the
 * client's copy is current, when it read nothing more.
 */
interface VersionedRead {
  version?: string[];
  current: boolean;
}

/** A read that found the client's copy stale, and read the rest. */
type Changed<Read> = Exclude<Read, { current: true }>;
const changed = <Read extends VersionedRead>(read: Read): read is Changed<Read> => !read.current;

/**
 * A list's read (a list, a page, the facets) under If-None-Match: `read` is given, when the
 * request has a condition, the judge of a version (`current`) that lets it answer 304 before it
 * reads a row. The answer's weak tag is `tagOf` the version it read. A 304 carries the
 * validators, not the representation's metadata (RFC 9110 15.4.5): then this returns undefined,
 * the answer sent; otherwise what was read, to send.
 */
export async function readUnlessCurrent<Read extends VersionedRead>(
  ctx: Koa.Context,
  tagOf: (version: string[]) => string,
  read: (current: ((version: string[]) => boolean) | undefined) => Promise<Read>,
): Promise<Changed<Read> | undefined> {
  const conditional = ctx.req.headers['if-none-match'] !== undefined;
  const answer = await read(conditional ? (version) => isFresh(ctx, tagOf(version)) : undefined);
  if (answer.version) setValidators(ctx, tagOf(answer.version));
  if (changed(answer)) return answer;
  ctx.status = 304;
  return undefined;
}

/**
 * Changed whenever a bike's JSON or its ETag changes meaning (a field, the serializer, what a
 * tag is made of), so that no tag given out before matches again.
 */
const REPRESENTATION_VERSION = 'r3';

/**
 * The ETags of one catalog. Each names the catalog's identity as it is now (catalog-identity.ts)
 * and the representation version, so a tag never matches in another catalog, after a restore,
 * or after the representation changed.
 */
export function entityTags(identity: () => string) {
  const prefix = () => `${identity()}.${REPRESENTATION_VERSION}`;
  /** The state a tag names (without `W/` when `weak` is allowed), or undefined when it names none of ours. */
  const stateOf = (tag: string, weak: boolean): string | undefined => {
    if (tag.startsWith('W/') && !weak) return undefined;
    const start = `"${prefix()}.b`;
    const inner = withoutCoding(tag.replace(/^W\//, ''));
    const state = inner.startsWith(start) && inner.endsWith('"') ? inner.slice(start.length, -1) : '';
    // Digits only: a bigint and an xid, whatever a client sends.
    return /^\d{1,19}\.\d{1,10}$/.test(state) ? state : undefined;
  };
  const statesOf = (condition: TagCondition, weak: boolean): StateCondition =>
    'any' in condition
      ? { any: true, states: [] }
      : {
          any: false,
          states: condition.tags.map((tag) => stateOf(tag, weak)).filter((state) => state !== undefined),
        };
  return {
    /**
     * A list, or a search, at one version of the catalog: `parts` are what that version is made
     * of (repository.ts, `list`), and the search term. Weak: the plain and the compressed bytes
     * are equivalent.
     */
    list: (...parts: string[]): string =>
      `W/"${prefix()}.v${createHash('sha1').update(parts.join('\n')).digest('base64url').slice(0, 22)}"`,
    /** One bike, in one state: strong. */
    bike: (state: string): string => `"${prefix()}.b${state}"`,
    /**
     * What a request's If-Match requires (the strong comparison: a weak tag matches nothing) and
     * what its If-None-Match forbids (the weak comparison), in states of the resource.
     */
    conditionsOf(headers: IncomingHttpHeaders): WriteConditions {
      const ifMatch = parseTagCondition(headers['if-match']);
      const ifNoneMatch = parseTagCondition(headers['if-none-match']);
      return { ifMatch: ifMatch && statesOf(ifMatch, false), ifNoneMatch: ifNoneMatch && statesOf(ifNoneMatch, true) };
    },
  };
}

export type EntityTags = ReturnType<typeof entityTags>;

import type { CallOptions } from './bikes.ts';
import type { Context } from './context.ts';
import { refusal } from './errors.ts';
import { persist } from './retry.ts';
import { type Bike, filterQuery, type Filters, type Sort } from './types.ts';

/**
 * GET /bikes, page after page: each page's bikes, the next page asked for at the address its
 * `Link: <...>; rel="next"` gives, as it is, until a page has none
 * (docs/reference/browse-and-sync.md#paged-listing). `limit` is the size of a page (1 to 250; 24 when absent).
 */
export async function* pages(
  ctx: Context,
  filters: Filters = {},
  sort?: Sort,
  { limit, signal }: CallOptions & { limit?: number } = {},
): AsyncGenerator<Bike[], void, undefined> {
  let next: string | undefined;
  for (;;) {
    // The next page's query, from its address: openapi-fetch then sends it unchanged.
    const query = next;
    const { answer } = await persist(
      (bounded) =>
        query === undefined
          ? ctx.api.GET('/bikes', { params: { query: { ...filterQuery(filters), sort, limit } }, signal: bounded })
          : ctx.api.GET('/bikes', { querySerializer: () => query, signal: bounded }),
      ctx.persistence('GET /bikes', signal),
    );
    if (!answer.data) throw refusal('GET /bikes', answer.response);
    yield answer.data;
    const link = nextLink(answer.response.headers.get('Link'));
    if (link === undefined) return;
    next = new URL(link, ctx.baseUrl).search.slice(1);
  }
}

/** The target of a `Link` header's `rel="next"` (RFC 8288), or undefined. */
function nextLink(header: string | null): string | undefined {
  for (const [, target, params] of (header ?? '').matchAll(/<([^>]*)>([^,]*)/g)) {
    if (/;\s*rel="?([^";]*\s)?next(\s[^";]*)?"?/i.test(params)) return target;
  }
  return undefined;
}

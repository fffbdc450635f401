import type { CallOptions } from './bikes.ts';
import type { Context } from './context.ts';
import { refusal } from './errors.ts';
import { persist } from './retry.ts';
import { type FacetName, type Facets, filterQuery, type Filters } from './types.ts';

/**
 * GET /bikes/facets (docs/reference/browse-and-sync.md#facets): for the bikes that pass `filters` (those of
 * `pages`, `q` included), the total, each facet's values with their counts (each counted without
 * its own filter: a storefront's checkboxes) and the range of minimum prices in each currency.
 * `facets`: which to count; all five when absent.
 */
export async function facets(
  ctx: Context,
  filters: Filters = {},
  { facets: names, signal }: CallOptions & { facets?: FacetName[] } = {},
): Promise<Facets> {
  const { answer } = await persist(
    (bounded) =>
      ctx.api.GET('/bikes/facets', {
        params: { query: { ...filterQuery(filters), facets: names?.join(',') } },
        signal: bounded,
      }),
    ctx.persistence('GET /bikes/facets', signal),
  );
  if (!answer.data) throw refusal('GET /bikes/facets', answer.response);
  return answer.data;
}

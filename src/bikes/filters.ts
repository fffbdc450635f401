import { type RawBuilder, sql } from 'kysely';
import { containing } from '../db/sql';

/**
 * What GET /bikes and GET /bikes/facets filter by (docs/reference/browse-and-sync.md#paged-listing), each filter
 * as a condition in SQL: every filter given must hold, and a filter given several values holds for
 * a bike that has any of them. `q`, a shopper's words, is docs/reference/browse-and-sync.md#a-shoppers-search.
 */

/** How many characters of a string the indexes hold (the migration browse: the `*_key` columns). */
const KEY_CHARACTERS = 200;

/** What GET /bikes filters by; every filter given must hold. */
export interface PageFilters {
  /** Any of these vendors. */
  vendor?: string[];
  /** Any of these product types. */
  productType?: string[];
  availableForSale?: boolean;
  /** totalInventory above 0 (true), or not (false). */
  inStock?: boolean;
  /** The minimum price's currency, any of these: the price range's, which it requires. */
  currency?: string[];
  minPrice?: number;
  maxPrice?: number;
  /** A substring of the title, case-sensitive and literal, as the title search takes it. */
  titleContains?: string;
  /** A shopper's words: every one in the title, vendor, product type or description. */
  q?: string;
}

export type FilterName = keyof PageFilters;

/** The filters that take several values (OR within). */
export const LIST_FILTERS = ['vendor', 'productType', 'currency'] as const satisfies FilterName[];
type ListFilter = (typeof LIST_FILTERS)[number];

const isList = (name: FilterName): name is ListFilter => (LIST_FILTERS as readonly FilterName[]).includes(name);

/**
 * A string column equal to a value, by its key column (its first 200 characters, indexed): the
 * whole strings compared too only for a value of 200 characters or more, the only one the key
 * can match without the whole string being equal. (For a shorter value PostgreSQL folds that part
 * away when it plans the statement with the value: a condition said twice would have it expect a
 * fiftieth of the rows it finds, and choose its plan by that.)
 */
const equals = (column: string, key: string, value: RawBuilder<unknown>) =>
  sql<boolean>`(${sql.ref(key)} = left(${value}::text, ${sql.lit(KEY_CHARACTERS)})
    AND (length(${value}::text) < ${sql.lit(KEY_CHARACTERS)} OR ${sql.ref(column)} = ${value}::text))`;

/** A string column equal to any of several values (an array): their keys, then the whole strings. */
const equalsAny = (column: string, key: string, values: RawBuilder<unknown>) =>
  sql<boolean>`(${sql.ref(key)} = ANY (ARRAY(SELECT left(value, ${sql.lit(KEY_CHARACTERS)})
      FROM unnest(${values}::text[]) AS value))
    AND ${sql.ref(column)} = ANY (${values}::text[]))`;

/** The columns of the filters that compare strings. */
const STRING_COLUMNS: Record<ListFilter, { column: string; key: string }> = {
  vendor: { column: 'bikes.vendor', key: 'bikes.vendor_key' },
  productType: { column: 'bikes.product_type', key: 'bikes.product_type_key' },
  currency: { column: 'bikes.min_price_currency_code', key: 'bikes.min_price_currency_key' },
};

/**
 * The text-search queries of a shopper's words `q` (the function bike_search_queries of the
 * migration storefront_search), for a statement's CTE `search` (searchOf): the words as given,
 * first in the title alone, then in the title or vendor, then with the product type, then anywhere
 * (1-4); the same with each word's typos (5-8). Null when `q` has no word: then no bike matches.
 * A query is null too when no bike can match it (the migration storefront_speed: the eighth as well).
 * Without `q`, null, and no condition reads it (PostgreSQL then never computes it).
 */
export const searchTerms = (q: RawBuilder<unknown> | undefined) =>
  (q ? sql<string>`bike_search_queries(${q}::text)` : sql<string>`NULL::tsquery[]`).as('terms');

/** The queries, from the statement's CTE `search`: computed once, whoever reads them. */
const terms = (i: number) => sql`(SELECT search.terms FROM search)[${sql.lit(i)}]`;

/** The bikes with every word of `q`, each as given or with its typos (anywhere). */
const matchesWords = sql<boolean>`bikes.search_words @@ ${terms(8)}`;

/**
 * A bike's rank for `q`, 0 best: 0-3 when it has every word as given (the last as a prefix too),
 * in the title alone (0), the title or vendor (1), with the product type (2), or anywhere (3);
 * 4-7 the same with typos. A whole number from the bike's words alone, so a page's cursor can
 * carry it (docs/reference/browse-and-sync.md#a-shoppers-search).
 */
export const searchRank = sql<number>`CASE ${sql.join(
  [1, 2, 3, 4, 5, 6, 7].map((i) => sql`WHEN bikes.search_words @@ ${terms(i)} THEN ${sql.lit(i - 1)}`),
  sql` `,
)} ELSE 7 END`;

/** The ranks, best first. */
export const RANKS = [0, 1, 2, 3, 4, 5, 6, 7] as const;

/** Whether a bike can have a rank: its query is not null (no bike has some word in its fields). */
export const tierPossible = (rank: number) => sql<boolean>`${terms(rank + 1)} IS NOT NULL`;

/** Each filter's condition on its value, as the statement's shape has it (one value or a list). */
function conditionOf(name: FilterName, value: RawBuilder<unknown>, several: boolean): RawBuilder<boolean> {
  // q's value is the CTE's (searchTerms).
  if (isList(name)) {
    const { column, key } = STRING_COLUMNS[name];
    return several ? equalsAny(column, key, value) : equals(column, key, value);
  }
  switch (name) {
    case 'availableForSale':
      return sql`bikes.available_for_sale = ${value}::boolean`;
    case 'inStock':
      return sql`(bikes.total_inventory > 0) = ${value}::boolean`;
    case 'minPrice':
      return sql`bikes.min_price_amount >= ${value}::float8`;
    case 'maxPrice':
      return sql`bikes.min_price_amount <= ${value}::float8`;
    case 'titleContains':
      return sql`bikes.title LIKE ${value}::text`;
    case 'q':
      return matchesWords;
  }
}

export const FILTER_NAMES: readonly FilterName[] = [
  'vendor',
  'productType',
  'availableForSale',
  'inStock',
  'currency',
  'minPrice',
  'maxPrice',
  'titleContains',
  'q',
];

/**
 * The filters a request gives, as a statement's shape: each one's name, and for a list filter
 * whether it has several values (`vendor+`): one value keeps the plain comparison's plans.
 */
export function shapeOf(filters: PageFilters): string[] {
  return FILTER_NAMES.flatMap((name) => {
    const value = filters[name];
    if (value === undefined) return [];
    return Array.isArray(value) && value.length > 1 ? [`${name}+`] : [name];
  });
}

/** A filter of a shape: its name, and whether it has several values. */
export const filterOf = (shaped: string) => ({
  name: (shaped.endsWith('+') ? shaped.slice(0, -1) : shaped) as FilterName,
  several: shaped.endsWith('+'),
});

/** The condition of a filter of a shape on its parameter. */
export const shapedCondition = (shaped: string, value: RawBuilder<unknown>) => {
  const { name, several } = filterOf(shaped);
  return conditionOf(name, value, several);
};

/**
 * A filter's value as its condition takes it: a title's substring as a LIKE pattern, a list's one
 * value alone, its several values as an array.
 */
export function valueOf(shaped: string, filters: PageFilters): unknown {
  const { name, several } = filterOf(shaped);
  if (name === 'titleContains') return containing(filters.titleContains ?? '');
  const value = filters[name];
  return Array.isArray(value) && !several ? value[0] : value;
}

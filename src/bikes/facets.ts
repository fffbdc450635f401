import { type RawBuilder, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Query } from '../db/pool';
import { kysely, param, prepare } from '../db/sql';
import { type Seen, seenOf, type Unchanged, unchangedFor, versionOf, withListVersion } from './catalog-version';
import { filterOf, type FilterName, type PageFilters, searchTerms, shapeOf, shapedCondition, valueOf } from './filters';

/**
 * GET /bikes/facets (docs/reference/browse-and-sync.md#facets): how many bikes pass every filter and `q`, and each
 * facet's values with their counts, each counted with every filter but that facet's own
 * (disjunctive), and the range of minimum prices in each currency, every filter but the price range
 * applied: one statement, one scan of the bikes that pass the filters no facet has (`q`,
 * `titleContains`), grouped by every facet at once (GROUPING SETS).
 */

/** The facets, each by the filter it counts without and the column it groups by. */
const FACETS = {
  vendor: { column: 'bikes.vendor' },
  productType: { column: 'bikes.product_type' },
  availableForSale: { column: 'bikes.available_for_sale' },
  inStock: { column: '(bikes.total_inventory > 0)' },
  currency: { column: 'bikes.min_price_currency_code' },
} as const satisfies Partial<Record<FilterName, { column: string }>>;

export type Facet = keyof typeof FACETS;

export const FACET_NAMES = Object.keys(FACETS) as Facet[];

/** A facet's value: a string, or for availableForSale and inStock a boolean. */
type FacetValue = string | boolean;

interface FacetCount {
  value: FacetValue;
  count: number;
  selected: boolean;
}

export interface Facets {
  current: false;
  version: string[] | undefined;
  seen: Seen;
  total: number;
  facets: Partial<Record<Facet, FacetCount[]>>;
  prices: { currency: string; min: number; max: number }[];
}

/** The price range's filters: the prices are counted without them. */
const PRICE_FILTERS: readonly FilterName[] = ['minPrice', 'maxPrice'];

const isFacet = (name: FilterName): name is Facet => Object.hasOwn(FACETS, name);

/**
 * The facets' columns, by the key columns (their first 200 characters: the migration browse) the
 * narrow index bikes_facets holds, as its index-only scan reads them: a value shorter than 200
 * characters is its key; the rare bikes with a longer one are grouped by their values, read from
 * the table.
 */
const KEYED_COLUMNS = [
  { column: 'vendor', key: 'vendor_key' },
  { column: 'product_type', key: 'product_type_key' },
  { column: 'min_price_currency_code', key: 'min_price_currency_key' },
] as const;

/** The facets' columns that are no strings. */
const PLAIN_COLUMNS = ['available_for_sale', 'total_inventory'] as const;

/** Whether a combination has a key of 200 characters, whose values the key does not tell. */
const LONG_KEY = sql<boolean>`(${sql.join(
  KEYED_COLUMNS.map(({ key }) => sql`length(${sql.ref(key)}) >= 200`),
  sql` OR `,
)})`;

/**
 * The statement of the facets `facets` (in FACET_NAMES' order) with the filters of a shape
 * (shapeOf): the catalog's version, then a row per facet's value, one for the prices of each
 * currency and one for the total. `kind` says which: the facet's name, `price` or `total`.
 *
 * In two steps, one statement: the bikes that pass the filters no facet has (`q`,
 * `titleContains`) are grouped by every combination of the facets' columns and whether they pass
 * the price range (`priced`), with their number and lowest and highest prices (CTE
 * `combinations`, a few hundred rows in a catalog of any size); each facet's counts are then sums
 * over those, by GROUPING SETS, each with every filter but the facet's own.
 */
function facetsStatement(facets: Facet[], filters: string[]) {
  const params: Record<string, RawBuilder<unknown>> = {};
  for (const name of filters) params[name] = param();
  return prepare(params, (p) => {
    const conditions = filters.map((shaped) => ({
      name: filterOf(shaped).name,
      holds: shapedCondition(shaped, p[shaped]),
    }));
    const priceConditions = conditions.filter(({ name }) => PRICE_FILTERS.includes(name)).map(({ holds }) => holds);
    const priced = priceConditions.length === 0 ? sql<boolean>`true` : sql.join(priceConditions, sql` AND `);
    // In the second step, the price range is the combination's `priced`.
    const facetConditions = conditions
      .filter(({ name }) => isFacet(name))
      .map(({ name, holds }) => ({ name, holds }))
      .concat(priceConditions.length === 0 ? [] : [{ name: 'minPrice', holds: sql<boolean>`bikes.priced` }]);
    const all = (except: (name: FilterName) => boolean) => {
      const kept = facetConditions.filter(({ name }) => !except(name)).map(({ holds }) => holds);
      return kept.length === 0 ? sql<boolean>`true` : sql<boolean>`(${sql.join(kept, sql` AND `)})`;
    };
    // What a facet's values are counted with, what the prices are found with, and the total's.
    const everyBut = (facet: Facet) => all((name) => name === facet);
    const unpriced = all((name) => PRICE_FILTERS.includes(name));
    const every = all(() => false);
    // Only the facets asked for, the currencies (for the prices) and the total are grouped.
    const grouped = FACET_NAMES.filter((facet) => facets.includes(facet) || facet === 'currency');
    const columnOf = (facet: Facet) => sql.raw(FACETS[facet].column);
    const isGroup = (facet: Facet) =>
      sql<boolean>`GROUPING(${sql.join(grouped.map(columnOf))}) = ${sql.lit(groupingBits(grouped, facet))}`;
    const kinds = sql.join(
      grouped.map((facet) => sql`WHEN ${isGroup(facet)} THEN ${sql.lit(facet)}`),
      sql` `,
    );
    const values = sql.join(
      grouped.map((facet) => sql`WHEN ${isGroup(facet)} THEN (${columnOf(facet)})::text`),
      sql` `,
    );
    const sumOf = (holds: RawBuilder<boolean>) => sql`coalesce(sum(bikes.bikes) FILTER (WHERE ${holds}), 0)`;
    const counts = sql.join(
      grouped.map((facet) => sql`WHEN ${isGroup(facet)} THEN ${sumOf(everyBut(facet))}`),
      sql` `,
    );
    // First the bikes by their keys (bikes_facets, index-only), with the filters no facet has: they
    // choose the rows read, and hold for every count.
    let byKeys = kysely
      .selectFrom('bikes')
      .select([
        ...KEYED_COLUMNS.map(({ key }) => sql.ref(`bikes.${key}`).as(key)),
        ...PLAIN_COLUMNS.map((c) => sql.ref(`bikes.${c}`).as(c)),
      ])
      .select([
        sql<boolean>`${priced}`.as('priced'),
        sql<string>`count(*)`.as('bikes'),
        sql<number>`min(bikes.min_price_amount)`.as('min_price'),
        sql<number>`max(bikes.min_price_amount)`.as('max_price'),
      ]);
    const unfaceted = conditions.filter(({ name }) => !isFacet(name) && !PRICE_FILTERS.includes(name));
    for (const { holds } of unfaceted) byKeys = byKeys.where(holds);
    const groupedByKeys = byKeys.groupBy([
      ...KEYED_COLUMNS.map(({ key }) => sql.ref(`bikes.${key}`)),
      ...PLAIN_COLUMNS.map((c) => sql.ref(`bikes.${c}`)),
      ...(priceConditions.length === 0 ? [] : [sql`${priced}`]),
    ]);
    // The combinations whose keys are their values.
    const short = sql`SELECT ${sql.join(
      KEYED_COLUMNS.flatMap(({ column, key }) => [
        sql`by_keys.${sql.ref(key)}`,
        sql`by_keys.${sql.ref(key)} AS ${sql.ref(column)}`,
      ]),
    )}, ${sql.join(PLAIN_COLUMNS.map((c) => sql`by_keys.${sql.ref(c)}`))}, by_keys.priced, by_keys.bikes, by_keys.min_price,
      by_keys.max_price FROM by_keys WHERE NOT ${LONG_KEY}`;
    // The bikes of the others, by their values, from the table: read only when there are any.
    let long = kysely
      .selectFrom('bikes')
      .select([
        ...KEYED_COLUMNS.flatMap(({ column, key }) => [
          sql.ref(`bikes.${key}`).as(key),
          sql.ref(`bikes.${column}`).as(column),
        ]),
        ...PLAIN_COLUMNS.map((c) => sql.ref(`bikes.${c}`).as(c)),
        sql<boolean>`${priced}`.as('priced'),
        sql<string>`count(*)`.as('bikes'),
        sql<number>`min(bikes.min_price_amount)`.as('min_price'),
        sql<number>`max(bikes.min_price_amount)`.as('max_price'),
      ])
      .where(sql<boolean>`EXISTS (SELECT FROM by_keys WHERE ${LONG_KEY})`)
      .where(
        sql<boolean>`(${sql.join(KEYED_COLUMNS.map(({ key }) => sql.ref(`bikes.${key}`)))}) IN (SELECT ${sql.join(
          KEYED_COLUMNS.map(({ key }) => sql.ref(`by_keys.${key}`)),
        )} FROM by_keys WHERE ${LONG_KEY})`,
      );
    for (const { holds } of unfaceted) long = long.where(holds);
    const groupedLong = long.groupBy([
      ...KEYED_COLUMNS.flatMap(({ column, key }) => [sql.ref(`bikes.${key}`), sql.ref(`bikes.${column}`)]),
      ...PLAIN_COLUMNS.map((c) => sql.ref(`bikes.${c}`)),
      ...(priceConditions.length === 0 ? [] : [sql`${priced}`]),
    ]);
    const sets = sql.join([...grouped.map((facet) => sql`(${columnOf(facet)})`), sql`()`]);
    const rows = kysely
      .with('search', (db) => db.selectNoFrom(searchTerms(p.q)))
      .with('by_keys', () => groupedByKeys)
      .with('combinations', (db) => db.selectFrom(sql`(${short} UNION ALL ${groupedLong})`.as('both')).selectAll())
      .selectFrom('combinations as bikes')
      .select([
        sql<string>`CASE ${kinds} ELSE 'total' END`.as('kind'),
        sql<string | null>`CASE ${values} END`.as('value'),
        sql<string>`(CASE ${counts} ELSE ${sumOf(every)} END)::text`.as('count'),
        sql<number | null>`min(bikes.min_price) FILTER (WHERE ${unpriced})`.as('min'),
        sql<number | null>`max(bikes.max_price) FILTER (WHERE ${unpriced})`.as('max'),
      ])
      .groupBy(sql`GROUPING SETS (${sets})`);
    return withListVersion(rows);
  });
}

/**
 * The number GROUPING() gives a row of `facet`'s set: a bit for each grouped column, the first the
 * highest, set for each column the row is not grouped by.
 */
function groupingBits(grouped: Facet[], facet: Facet): number {
  return grouped.reduce((bits, other) => bits * 2 + (other === facet ? 0 : 1), 0);
}

type FacetsStatement = ReturnType<typeof facetsStatement>;

const statements = new LRUCache<string, FacetsStatement>({ max: 256 });

function statementOf(facets: Facet[], filters: string[]): FacetsStatement {
  const shape = `${facets.join(',')} ${filters.join(',')}`;
  let statement = statements.get(shape);
  if (!statement) statements.set(shape, (statement = facetsStatement(facets, filters)));
  return statement;
}

/** The values a request selects of a facet: its filter's. */
function selectedOf(facet: Facet, filters: PageFilters): FacetValue[] {
  const value = filters[facet];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** Code point order, as the "C" collation compares. */
const byCodePoint = (a: string, b: string) => {
  const [x, y] = [[...a], [...b]];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i].codePointAt(0) ?? 0) - (y[i].codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
};

/** Most bikes first, then by value (false before true; strings in code point order). */
const byCount = (a: FacetCount, b: FacetCount) =>
  b.count - a.count ||
  (typeof a.value === 'string' && typeof b.value === 'string'
    ? byCodePoint(a.value, b.value)
    : Number(a.value) - Number(b.value));

/**
 * The facets `facets` of the bikes that pass `filters`; or, given `current`, the version alone when
 * the client has the answer at it (a 304 reads no row).
 */
export async function readFacets(
  query: Query,
  request: { facets: Facet[]; filters: PageFilters },
  current?: (version: string[]) => boolean,
): Promise<Unchanged | Facets> {
  const unchanged = current && (await unchangedFor(query, current));
  if (unchanged) return unchanged;
  const facets = FACET_NAMES.filter((facet) => request.facets.includes(facet));
  const filters = shapeOf(request.filters);
  const values: Record<string, unknown> = {};
  for (const name of filters) values[name] = valueOf(name, request.filters);
  const [state, ...rows] = await statementOf(facets, filters).run(query, values);
  const counted: Partial<Record<Facet, FacetCount[]>> = {};
  for (const facet of facets) counted[facet] = [];
  const prices: Facets['prices'] = [];
  let total = 0;
  for (const row of rows) {
    const count = Number(row.count);
    if (row.kind === 'total') {
      total = count;
      continue;
    }
    const facet = row.kind as Facet;
    if (facet === 'currency' && row.value !== null && row.min !== null && row.max !== null) {
      prices.push({ currency: row.value, min: row.min, max: row.max });
    }
    const list = counted[facet];
    if (!list || row.value === null || count === 0) continue;
    const value = facet === 'availableForSale' || facet === 'inStock' ? row.value === 'true' : row.value;
    list.push({ value, count, selected: selectedOf(facet, request.filters).includes(value) });
  }
  for (const facet of facets) {
    const list = counted[facet] ?? [];
    for (const value of selectedOf(facet, request.filters)) {
      if (!list.some((listed) => listed.value === value)) list.push({ value, count: 0, selected: true });
    }
    list.sort(byCount);
  }
  prices.sort((a, b) => byCodePoint(a.currency, b.currency));
  return { current: false, version: versionOf(state), seen: seenOf(state), total, facets: counted, prices };
}

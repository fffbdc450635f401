import { type RawBuilder, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Query } from '../db/pool';
import { containing, kysely, param, prepare } from '../db/sql';
import type { Bike } from './bike';
import { type Seen, seenOf, type Unchanged, unchangedFor, versionOf, withListVersion } from './catalog-version';
import { BIKE_COLUMNS, fromModelFields } from './fields';

/**
 * GET /bikes's pages (docs/decisions.md#paged-listing): the catalog in one of its orders, filtered,
 * a page at a time, each page the rows after the last one's key (keyset, never OFFSET), so that
 * every page is a range of an index (the migration browse), however deep.
 */

/** How many characters of a string the indexes hold (the migration browse: the `*_key` columns). */
const KEY_CHARACTERS = 200;

/**
 * A column a page is ordered by: its name, and how its value is written in a cursor (text) and
 * read back. A time is written in UTC, ISO 8601, which PostgreSQL reads whatever its DateStyle.
 */
const KEY_TYPES = {
  text: { write: (column: string) => sql<string>`${sql.ref(column)}`, read: 'text' },
  float8: { write: (column: string) => sql<string>`${sql.ref(column)}::text`, read: 'float8' },
  timestamptz: {
    write: (column: string) =>
      sql<string>`to_char(${sql.ref(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    read: 'timestamptz',
  },
} as const;

interface KeyColumn {
  column: 'title_key' | 'min_price_currency_key' | 'min_price_amount' | 'updated_at';
  type: keyof typeof KEY_TYPES;
}

/**
 * The orders, each by its key columns and then the insertion order (seq), which makes it total.
 * Titles by their first 200 characters in code point order; prices by currency, then the minimum
 * price's amount (prices in two currencies do not compare); `updatedAt` by when a bike last
 * changed (a trigger sets it, whoever writes).
 */
const ORDERS = {
  created: [],
  title: [{ column: 'title_key', type: 'text' }],
  price: [
    { column: 'min_price_currency_key', type: 'text' },
    { column: 'min_price_amount', type: 'float8' },
  ],
  updatedAt: [{ column: 'updated_at', type: 'timestamptz' }],
} as const satisfies Record<string, readonly KeyColumn[]>;

type Order = keyof typeof ORDERS;

/** A sort: an order, ascending, or descending with a leading `-`. */
export type Sort = Order | `-${Order}`;

export const SORTS: readonly Sort[] = (Object.keys(ORDERS) as Order[]).flatMap((order): Sort[] => [order, `-${order}`]);

/** What GET /bikes filters by; every filter given must hold. */
export interface PageFilters {
  vendor?: string;
  productType?: string;
  availableForSale?: boolean;
  /** totalInventory above 0 (true), or not (false). */
  inStock?: boolean;
  /** The minimum price's currency: the price range's, which it requires. */
  currency?: string;
  minPrice?: number;
  maxPrice?: number;
  /** A substring of the title, case-sensitive and literal, as the title search takes it. */
  titleContains?: string;
}

type FilterName = keyof PageFilters;

/**
 * A string column equal to a value, by its key column (its first 200 characters, indexed): the
 * whole strings compared too only for a value of 200 characters or more, the only one the key
 * can match without the whole string being equal. (For a shorter value PostgreSQL folds that part
 * away when it plans the statement with the value: a condition said twice would have it expect a
 * fiftieth of the rows it finds, and choose its plan by that.)
 */
const equals = (
  column: 'vendor' | 'product_type' | 'min_price_currency_code',
  key: string,
  value: RawBuilder<unknown>,
) =>
  sql<boolean>`(${sql.ref(key)} = left(${value}::text, ${sql.lit(KEY_CHARACTERS)})
    AND (length(${value}::text) < ${sql.lit(KEY_CHARACTERS)} OR ${sql.ref(column)} = ${value}::text))`;

/** Each filter's condition on its value. */
const FILTERS: { [Name in FilterName]-?: (value: RawBuilder<unknown>) => RawBuilder<boolean> } = {
  vendor: (value) => equals('vendor', 'vendor_key', value),
  productType: (value) => equals('product_type', 'product_type_key', value),
  availableForSale: (value) => sql`available_for_sale = ${value}::boolean`,
  inStock: (value) => sql`(total_inventory > 0) = ${value}::boolean`,
  currency: (value) => equals('min_price_currency_code', 'min_price_currency_key', value),
  minPrice: (value) => sql`min_price_amount >= ${value}::float8`,
  maxPrice: (value) => sql`min_price_amount <= ${value}::float8`,
  titleContains: (value) => sql`title LIKE ${value}::text`,
};

export const FILTER_NAMES = Object.keys(FILTERS) as FilterName[];

/** Where a page starts: after the row with these keys (as text, in the order's columns) and seq. */
export interface PageKey {
  keys: string[];
  seq: string;
}

export interface PageRequest {
  sort: Sort;
  filters: PageFilters;
  after?: PageKey;
  limit: number;
}

export interface Page {
  /** Not a page the client has already (Unchanged). */
  current: false;
  /** The catalog's version, for the page's ETag: undefined while a trigger that keeps it is off. */
  version: string[] | undefined;
  seen: Seen;
  bikes: Bike[];
  /** Where the next page starts, when there is one. */
  next?: PageKey;
}

const orderOf = (sort: Sort): Order => (sort.startsWith('-') ? sort.slice(1) : sort) as Order;

/**
 * The statement of a page of `sort`, with `filters`, after a key or from the start, of `rows`
 * rows: the catalog's version and the page's rows, and one more (so the page knows whether
 * another follows), in one statement, one snapshot. Each shape is compiled once, when first asked
 * for. The number of rows is part of the text, not a parameter: PostgreSQL plans a LIMIT it cannot
 * see for a tenth of the table, so a plan made once for every limit never looks as cheap as one
 * made for each, and a prepared page would be planned anew every time (docs/decisions.md#prepared-statements).
 */
function pageStatement(sort: Sort, filters: FilterName[], after: boolean, rows: number) {
  const columns: readonly KeyColumn[] = ORDERS[orderOf(sort)];
  const direction = sort.startsWith('-') ? 'desc' : 'asc';
  const seq = param<string>();
  const keyParams = columns.map(() => param<string>());
  const params: Record<string, RawBuilder<unknown>> = {};
  for (const name of filters) params[name] = param();
  if (after) {
    keyParams.forEach((key, i) => (params[`key${i}`] = key));
    params.seq = seq;
  }
  return prepare(params, (p) => {
    let page = kysely.selectFrom('bikes').select(BIKE_COLUMNS).select('bikes.seq').select(keysOf(columns).as('keys'));
    for (const name of filters) page = page.where(FILTERS[name](p[name]));
    if (after) {
      const keyed = sql.join([
        ...columns.map(({ type }, i) => sql`${keyParams[i]}::${sql.raw(KEY_TYPES[type].read)}`),
        sql`${seq}::bigint`,
      ]);
      const ordered = sql.join([...columns.map(({ column }) => sql.ref(`bikes.${column}`)), sql.ref('bikes.seq')]);
      page = page.where(
        direction === 'asc' ? sql<boolean>`(${ordered}) > (${keyed})` : sql<boolean>`(${ordered}) < (${keyed})`,
      );
    }
    for (const { column } of columns) page = page.orderBy(sql.ref(`bikes.${column}`), direction);
    return withListVersion(page.orderBy('bikes.seq', direction).limit(sql.lit(rows)));
  });
}

/**
 * The values of a row's key columns, as text, for a cursor: a JSON array of them, which only the
 * page's last row's is parsed of (pg parses a text[] column in every row).
 */
function keysOf(columns: readonly KeyColumn[]) {
  if (columns.length === 0) return sql<string>`'[]'::text`;
  return sql<string>`json_build_array(${sql.join(columns.map(({ column, type }) => KEY_TYPES[type].write(column)))})::text`;
}

type PageStatement = ReturnType<typeof pageStatement>;
/** A row of a page: a bike, its seq and its keys (the rows' columns, present: not the version's row). */
type PageRow = Parameters<typeof fromModelFields>[0] & { seq: string; keys: string };
/**
 * The shapes compiled, the most recently used kept: compiling one again took 0.95 ms where
 * `readPage` with it compiled took 0.25 (a loaded machine's times, the database left out).
 */
const statements = new LRUCache<string, PageStatement>({ max: 512 });

function statementOf(sort: Sort, filters: FilterName[], after: boolean, rows: number): PageStatement {
  const shape = `${sort} ${filters.join(',')} ${after} ${rows}`;
  let statement = statements.get(shape);
  if (!statement) statements.set(shape, (statement = pageStatement(sort, filters, after, rows)));
  return statement;
}

/** A filter's value as its condition takes it: a title's substring as a LIKE pattern. */
function valueOf(name: FilterName, filters: PageFilters): unknown {
  return name === 'titleContains' ? containing(filters.titleContains ?? '') : filters[name];
}

/**
 * A page of bikes, as `request` asks, and where the next one starts; or, given `current`, which
 * says whether the client has the page at a version, the version alone when it does (a 304 reads
 * no row).
 */
export async function readPage(query: Query, request: PageRequest): Promise<Page>;
export async function readPage(
  query: Query,
  request: PageRequest,
  current: ((version: string[]) => boolean) | undefined,
): Promise<Unchanged | Page>;
export async function readPage(
  query: Query,
  request: PageRequest,
  current?: (version: string[]) => boolean,
): Promise<Unchanged | Page> {
  const unchanged = current && (await unchangedFor(query, current));
  if (unchanged) return unchanged;
  const filters = FILTER_NAMES.filter((name) => request.filters[name] !== undefined);
  const values: Record<string, unknown> = {};
  for (const name of filters) values[name] = valueOf(name, request.filters);
  request.after?.keys.forEach((key, i) => (values[`key${i}`] = key));
  if (request.after) values.seq = request.after.seq;
  const rows = await statementOf(request.sort, filters, request.after !== undefined, request.limit + 1).run(
    query,
    values,
  );
  const [state] = rows;
  const found = rows.filter((row): row is (typeof rows)[number] & PageRow => row.seq !== null);
  const bikes = found.slice(0, request.limit);
  const last = found.length > request.limit ? bikes[bikes.length - 1] : undefined;
  return {
    current: false,
    version: versionOf(state),
    seen: seenOf(state),
    bikes: bikes.map(fromModelFields),
    next: last && { keys: JSON.parse(last.keys) as string[], seq: last.seq },
  };
}

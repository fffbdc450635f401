import { type RawBuilder, sql } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Query } from '../db/pool';
import { kysely, param, prepare } from '../db/sql';
import type { Bike } from './bike';
import { type Seen, seenOf, type Unchanged, unchangedFor, versionOf, withListVersion } from './catalog-version';
import { BIKE_COLUMNS, fromModelFields } from './fields';
import {
  type PageFilters,
  RANKS,
  searchRank,
  searchTerms,
  shapeOf,
  shapedCondition,
  tierPossible,
  valueOf,
} from './filters';

/**
 * GET /bikes's pages (docs/reference/browse-and-sync.md#paged-listing): the catalog in one of its orders, filtered,
 * a page at a time, each page the rows after the last one's key (keyset, never OFFSET), so that
 * every page is a range of an index (the migration browse), however deep. With a shopper's words
 * (`q`), their matches, by relevance or in any other order (docs/reference/browse-and-sync.md#a-shoppers-search).
 */

/**
 * A column a page is ordered by: its name, and how its value is written in a cursor (text) and
 * read back. A time is written in UTC, ISO 8601, which PostgreSQL reads whatever its DateStyle.
 */
const KEY_TYPES = {
  text: { write: (key: RawBuilder<unknown>) => sql<string>`${key}`, read: 'text' },
  float8: { write: (key: RawBuilder<unknown>) => sql<string>`${key}::text`, read: 'float8' },
  int4: { write: (key: RawBuilder<unknown>) => sql<string>`${key}::text`, read: 'int4' },
  timestamptz: {
    write: (key: RawBuilder<unknown>) =>
      sql<string>`to_char(${key} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    read: 'timestamptz',
  },
} as const;

interface KeyColumn {
  /** A column of bikes, or `search_rank`, a bike's rank for `q` (searchRank, filters.ts). */
  column: 'title_key' | 'min_price_currency_key' | 'min_price_amount' | 'updated_at' | 'search_rank';
  type: keyof typeof KEY_TYPES;
}

const keyOf = ({ column }: KeyColumn) => (column === 'search_rank' ? searchRank : sql.ref(`bikes.${column}`));

/**
 * The orders, each by its key columns and then the insertion order (seq), which makes it total.
 * Titles by their first 200 characters in code point order; prices by currency, then the minimum
 * price's amount (prices in two currencies do not compare); `updatedAt` by when a bike last
 * changed (a trigger sets it, whoever writes); `relevance`, with `q` alone, by the bike's rank for
 * its words.
 */
const ORDERS = {
  created: [],
  title: [{ column: 'title_key', type: 'text' }],
  price: [
    { column: 'min_price_currency_key', type: 'text' },
    { column: 'min_price_amount', type: 'float8' },
  ],
  updatedAt: [{ column: 'updated_at', type: 'timestamptz' }],
  relevance: [{ column: 'search_rank', type: 'int4' }],
} as const satisfies Record<string, readonly KeyColumn[]>;

type Order = keyof typeof ORDERS;

/** A sort: an order, ascending, or descending with a leading `-`; relevance, best first, alone. */
export type Sort = Order | `-${Exclude<Order, 'relevance'>}`;

export const SORTS: readonly Sort[] = (Object.keys(ORDERS) as Order[]).flatMap((order): Sort[] =>
  order === 'relevance' ? [order] : [order, `-${order}`],
);

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
 * made for each, and a prepared page would be planned anew every time (docs/reference/database.md#prepared-statements).
 */
function pageStatement(sort: Sort, filters: string[], after: boolean, rows: number) {
  if (sort === 'relevance' && filters.includes('q')) return relevanceStatement(filters, after, rows);
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
    let page = kysely
      .with('search', (db) => db.selectNoFrom(searchTerms(p.q)))
      .selectFrom('bikes')
      .select(BIKE_COLUMNS)
      .select('bikes.seq')
      .select(keysOf(columns).as('keys'));
    for (const name of filters) page = page.where(shapedCondition(name, p[name]));
    if (after) {
      const keyed = sql.join([
        ...columns.map(({ type }, i) => sql`${keyParams[i]}::${sql.raw(KEY_TYPES[type].read)}`),
        sql`${seq}::bigint`,
      ]);
      const ordered = sql.join([...columns.map(keyOf), sql.ref('bikes.seq')]);
      page = page.where(
        direction === 'asc' ? sql<boolean>`(${ordered}) > (${keyed})` : sql<boolean>`(${ordered}) < (${keyed})`,
      );
    }
    for (const column of columns) page = page.orderBy(keyOf(column), direction);
    return withListVersion(page.orderBy('bikes.seq', direction).limit(sql.lit(rows)));
  });
}

/**
 * How many bikes with the words a page by relevance ranks all of, at most (FEW_MATCHES): the
 * bikes the words' index finds, when they are so few, are read and ranked whole; more, and the
 * page reads the ranks in turn instead.
 */
const FEW_MATCHES = 1000;

/**
 * The sample that tells many matches without counting them: when at least SAMPLE_MATCHES of the
 * first SAMPLE_BIKES bikes (insertion order, the seq index) pass the words and filters, the page
 * reads the ranks in turn at once. Counting 1,001 matches in the words' index builds its whole
 * bitmap first (every bike with the most common word: 40-60 ms for a word every bike has, at
 * 100,000 bikes), where the sample reads 1,000 rows (docs/performance.md#a-shops-storefront).
 * Reading the ranks in turn gives the same page for any number of matches; only ranking the
 * matches whole needs them to be few, which the count still decides when the sample does not.
 */
const SAMPLE_BIKES = 1000;
const SAMPLE_MATCHES = 10;

/**
 * The statement of a page by relevance: the same rows, in the same order, as ORDER BY searchRank,
 * seq would give (docs/reference/browse-and-sync.md#a-shoppers-search), without ranking every bike with the words.
 * Whether the matches are many is decided once (CTE `plan`): none when no bike can have the words
 * (the last rank's query is null), many by the sample (SAMPLE_BIKES), or else by the words' index
 * (GIN), which finds up to FEW_MATCHES + 1 of them. When there are no more than
 * FEW_MATCHES, those are ranked and the page taken from them. Otherwise the ranks are read in
 * turn, best first, each a scan of the bikes in insertion order (the seq index) for as many rows
 * as the page still needs: PostgreSQL runs the parts of a UNION ALL one after the other and stops
 * when the LIMIT has its rows, so a page of a rank many bikes have reads about as many rows as it
 * shows; a rank no bike can have (its query is null: bike_search_queries, the migration
 * storefront_search) is never scanned, nor a rank before the cursor's. The rank a row has is its
 * key.
 */
function relevanceStatement(filters: string[], after: boolean, rows: number) {
  const rank = param<string>();
  const seq = param<string>();
  const params: Record<string, RawBuilder<unknown>> = {};
  for (const name of filters) params[name] = param();
  if (after) {
    params.key0 = rank;
    params.seq = seq;
  }
  return prepare(params, (p) => {
    const many = sql<boolean>`(SELECT plan.many FROM plan)`;
    const select = () => kysely.selectFrom('bikes').select(BIKE_COLUMNS).select('bikes.seq');
    let few = select()
      .select(sql<string>`json_build_array((${searchRank})::text)::text`.as('keys'))
      .where(sql<boolean>`NOT ${many}`)
      .where(sql<boolean>`bikes.seq IN (SELECT candidates.seq FROM candidates)`);
    if (after) few = few.where(sql<boolean>`(${searchRank}, bikes.seq) > (${rank}::int4, ${seq}::bigint)`);
    few = few.orderBy(searchRank).orderBy('bikes.seq').limit(sql.lit(rows));
    const tiers = RANKS.map((tier) => {
      let part = select()
        .select(sql<string>`${sql.lit(`["${tier}"]`)}::text`.as('keys'))
        .where(many)
        .where(tierPossible(tier))
        .where(sql<boolean>`${searchRank} = ${sql.lit(tier)}`);
      // q's condition is the rank's: left out, so that the scan is the seq index's, not the words'.
      // But for the last rank, which every bike without the words' better ranks has (searchRank's
      // ELSE): the bikes with the words, with typos, anywhere.
      for (const name of filters) {
        if (name !== 'q' || tier === RANKS[RANKS.length - 1]) part = part.where(shapedCondition(name, p[name]));
      }
      if (after) {
        part = part
          .where(sql<boolean>`${sql.lit(tier)} >= ${rank}::int4`)
          .where(
            sql<boolean>`bikes.seq > CASE WHEN ${rank}::int4 = ${sql.lit(tier)} THEN ${seq}::bigint ELSE '-9223372036854775808'::bigint END`,
          );
      }
      return part.orderBy('bikes.seq').limit(sql.lit(rows));
    });
    let candidates = kysely.selectFrom('bikes').select('bikes.seq');
    for (const name of filters) candidates = candidates.where(shapedCondition(name, p[name]));
    let sample = kysely
      .selectFrom(kysely.selectFrom('bikes').selectAll().orderBy('bikes.seq').limit(sql.lit(SAMPLE_BIKES)).as('bikes'))
      .select(sql<number>`1`.as('one'));
    for (const name of filters) sample = sample.where(shapedCondition(name, p[name]));
    const sampled = sql<boolean>`(SELECT count(*) FROM (${sample.limit(sql.lit(SAMPLE_MATCHES))}) AS sample) >= ${sql.lit(SAMPLE_MATCHES)}`;
    const counted = sql<boolean>`(SELECT count(*) FROM candidates) > ${sql.lit(FEW_MATCHES)}`;
    const ranked = sql<PageRow>`(${sql.join([few, ...tiers], sql` UNION ALL `)})`;
    const page = kysely
      .with('search', (db) => db.selectNoFrom(searchTerms(p.q)))
      .with(
        (name) => name('candidates').materialized(),
        () => candidates.limit(sql.lit(FEW_MATCHES + 1)),
      )
      .with(
        (name) => name('plan').materialized(),
        (db) =>
          db.selectNoFrom(
            sql<boolean>`CASE WHEN NOT ${tierPossible(RANKS[RANKS.length - 1])} THEN false WHEN ${sampled} THEN true ELSE ${counted} END`.as(
              'many',
            ),
          ),
      )
      .selectFrom(ranked.as('bikes'))
      .selectAll()
      .limit(sql.lit(rows));
    return withListVersion(page);
  });
}

/**
 * The values of a row's key columns, as text, for a cursor: a JSON array of them, which only the
 * page's last row's is parsed of (pg parses a text[] column in every row).
 */
function keysOf(columns: readonly KeyColumn[]) {
  if (columns.length === 0) return sql<string>`'[]'::text`;
  return sql<string>`json_build_array(${sql.join(columns.map((column) => KEY_TYPES[column.type].write(keyOf(column))))})::text`;
}

type PageStatement = ReturnType<typeof pageStatement>;
/** A row of a page: a bike, its seq and its keys (the rows' columns, present: not the version's row). */
type PageRow = Parameters<typeof fromModelFields>[0] & { seq: string; keys: string };
/**
 * The shapes compiled, the most recently used kept: compiling one again took 0.95 ms where
 * `readPage` with it compiled took 0.25 (a loaded machine's times, the database left out).
 */
const statements = new LRUCache<string, PageStatement>({ max: 512 });

function statementOf(sort: Sort, filters: string[], after: boolean, rows: number): PageStatement {
  const shape = `${sort} ${filters.join(',')} ${after} ${rows}`;
  let statement = statements.get(shape);
  if (!statement) statements.set(shape, (statement = pageStatement(sort, filters, after, rows)));
  return statement;
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
  const filters = shapeOf(request.filters);
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

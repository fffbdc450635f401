import { Client, type QueryResult, type QueryResultRow } from 'pg';
import type { PageFilters } from '../../src/bikes/filters';
import { type PageKey, readPage, SORTS as EVERY_SORT, type Sort } from '../../src/bikes/pages';

/** The sorts of an index: relevance, with q alone, ranks the bikes with the words. */
const SORTS = EVERY_SORT.filter((sort) => sort !== 'relevance');
import { createTestDatabase } from '../support/databases';

/**
 * GET /bikes's pages at scale (docs/reference/browse-and-sync.md#paged-listing): on 50,000 bikes, the plan
 * PostgreSQL runs for each page, read with EXPLAIN (ANALYZE, BUFFERS) from the statements the
 * service runs, both as sent unnamed (planned for their values) and as a connection that prepares
 * them runs them (docs/reference/database.md#prepared-statements: PostgreSQL may then keep one plan for
 * every value). Every sort, alone and after a vendor or a product type, is a range of an index, in
 * order, with no sort step, and a page deep in it (the 1,001st, unfiltered) reads what the first
 * does. Every other filter is served by an index too: no page scans the whole table.
 */

const BIKES = 50_000;
const VENDORS = ['Sentra', 'Apex', 'Nord', 'Kona', 'Brisk', 'Orbit', 'Zephyr', 'Rally', 'Cinder'];
const TYPES = ['Road', 'Mountain', 'Hybrid', 'Gravel', 'E-bike', 'BMX', 'Cargo'];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** The part of a page's plan that reads its bikes: under the Limit (the rest reads the catalog's version). */
function pagePart(plan: PlanNode): PlanNode {
  const limit = nodesOf(plan).find((node) => node['Node Type'] === 'Limit');
  if (!limit) throw new Error('a page plan without a Limit');
  return limit;
}

/** What a page's plan says, in short: its steps, and the blocks it read. */
function summary(plan: PlanNode) {
  const nodes = nodesOf(pagePart(plan));
  return {
    steps: nodes.map((node) => node['Node Type']),
    indexes: nodes.flatMap((node) => (node['Index Name'] ? [node['Index Name']] : [])),
    wholeTable: nodes.some((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'bikes'),
    blocks: nodes[0]['Shared Hit Blocks'] + nodes[0]['Shared Read Blocks'],
  };
}

type Explained = { 'QUERY PLAN': { Plan: PlanNode }[] };

describe.each(['unnamed', 'prepared'])('GET /bikes at 50,000 bikes, %s: every page a range of an index', (how) => {
  let db: Client;
  let plans: PlanNode[];
  /** A value as SQL writes it, for EXECUTE, which takes no parameters of its own. */
  const literal = (value: unknown) =>
    value === null ? 'NULL' : typeof value === 'string' ? db.escapeLiteral(value) : String(value);
  /**
   * Runs each statement, and keeps its plan, read by EXPLAIN (ANALYZE, BUFFERS) with the same
   * values: sent as it is, or, for a statement the service may prepare (`name`), prepared and run
   * six times first, after which PostgreSQL has chosen between one plan for every value and one
   * for each, then explained as it is executed.
   */
  const explaining = async <Row extends QueryResultRow>(
    text: string,
    values: unknown[],
    name?: string,
  ): Promise<QueryResult<Row>> => {
    if (how === 'unnamed' || name === undefined) {
      const explained = await db.query<Explained>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values);
      plans.push(explained.rows[0]['QUERY PLAN'][0].Plan);
      return db.query<Row>(text, values);
    }
    for (let i = 0; i < 6; i++) await db.query({ name, text, values });
    const args = values.length > 0 ? `(${values.map(literal).join(', ')})` : '';
    const explained = await db.query<Explained>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE ${db.escapeIdentifier(name)}${args}`,
    );
    plans.push(explained.rows[0]['QUERY PLAN'][0].Plan);
    return db.query<Row>({ name, text, values });
  };

  beforeAll(async () => {
    db = new Client({ connectionString: await createTestDatabase() });
    await db.connect();
    // Vendors and types spread over the catalog, one of each on a bike in 50 (as a storefront's
    // smaller facets), prices in two currencies, a fifth out of stock.
    await db.query(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       SELECT gen_random_uuid(), 'bike-' || i, 'Bike ' || md5(i::text),
              CASE WHEN i % 50 = 25 THEN 'Kids' ELSE ($2::text[])[1 + (i * 7) % 7] END, '2024-03-01', 'd',
              CASE WHEN i % 50 = 0 THEN 'Velo' ELSE ($1::text[])[1 + (i * 13) % 9] END, i % 7 <> 0, (i % 5)::float8,
              100 + (i * 37) % 4900, CASE WHEN i % 10 = 0 THEN 'EUR' ELSE 'USD' END, 5000, 'USD'
         FROM generate_series(1, ${BIKES}) i`,
      [VENDORS, TYPES],
    );
    await db.query('ANALYZE bikes');
  });
  afterAll(() => db.end());

  /** The plan of the first page, and of the page after `skip` bikes (read 240 at a time to get there). */
  async function firstAndDeep(sort: Sort, filters: PageFilters, skip: number) {
    plans = [];
    await readPage(explaining, { sort, filters, limit: 24 });
    const first = summary(plans[0]);
    let after: PageKey | undefined;
    for (let skipped = 0; skipped < skip; skipped += 240) {
      after = (await readPage((text, values) => db.query(text, values), { sort, filters, after, limit: 240 })).next;
      if (!after) throw new Error(`fewer than ${skip} bikes for ${sort} ${JSON.stringify(filters)}`);
    }
    plans = [];
    const deep = await readPage(explaining, { sort, filters, after, limit: 24 });
    expect(deep.bikes).toHaveLength(24);
    return { first, deep: summary(plans[0]) };
  }

  /**
   * Each sort alone and after each of the two browsing filters, and the indexes its pages may be
   * ranges of: the filter's with the order (bikes_by_vendor_price), or the order's own, whose rows
   * the filter then picks from: PostgreSQL's choice, by how the rows lie (a table written in
   * insertion order gives the order's own index rows one after another in the table).
   */
  const ranges = SORTS.flatMap((sort) => {
    const order = { created: '', title: '_title', price: '_price', updatedAt: '_updated_at' }[sort.replace('-', '')];
    const ofOrder = order === '' ? 'bikes_seq_key' : `bikes_by${order}`;
    return [
      { sort, filters: {}, indexes: [ofOrder], skip: 24_000 },
      { sort, filters: { vendor: ['Velo'] }, indexes: [`bikes_by_vendor${order}`, ofOrder], skip: 480 },
      { sort, filters: { productType: ['Kids'] }, indexes: [`bikes_by_product_type${order}`, ofOrder], skip: 480 },
    ];
  });

  it.each(ranges)(
    'sort=$sort $filters: a range of an index in order ($indexes), a page deep in it as cheap as the first',
    async ({ sort, filters, indexes, skip }) => {
      const { first, deep } = await firstAndDeep(sort, filters, skip);
      for (const page of [first, deep]) {
        expect(page.steps).toEqual(['Limit', 'Index Scan']);
        expect(indexes).toContain(page.indexes[0]);
      }
      if (deep.indexes[0] === first.indexes[0]) expect(deep.blocks).toBeLessThanOrEqual(first.blocks * 2 + 16);
    },
  );

  const others: PageFilters[] = [
    { availableForSale: false },
    { inStock: true },
    { currency: ['EUR'] },
    { currency: ['USD'], minPrice: 1000, maxPrice: 1100 },
    { titleContains: 'abc' },
    { vendor: ['Apex'] },
    { vendor: ['Velo'], productType: ['Kids'] },
    { vendor: ['Apex'], inStock: false, currency: ['USD'], minPrice: 200 },
  ];

  it.each(SORTS)(
    'sort=%s with every other filter: served by an index, never a scan of the whole table',
    async (sort) => {
      for (const filters of others) {
        plans = [];
        await readPage(explaining, { sort, filters, limit: 24 });
        const page = summary(plans[0]);
        expect({ filters, wholeTable: page.wholeTable, indexed: page.indexes.length > 0 }).toEqual({
          filters,
          wholeTable: false,
          indexed: true,
        });
      }
    },
  );
});

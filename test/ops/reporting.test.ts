import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import type { Bike, BikeFields } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { startTestService, type TestService } from '../support/service';
import { runSeed } from './seed-cli';

/**
 * The reporting queries docs/reporting.md shows, run as written (test/ops/reports/*.sql) against a
 * seeded catalog, each checked against the same figures computed here in JavaScript from what
 * the API serves.
 */

const REPORTS = path.join(__dirname, 'reports');

const hasPsql = spawnSync('psql', ['--version']).error === undefined;
if (!hasPsql)
  console.log(
    'reporting.test.ts: the db:psql test is skipped: psql is not installed (apt-get install postgresql-client)',
  );

type Row = Record<string, unknown>;

/** Hand-made bikes that make each filter and grouping of the reports matter. */
const EDGE_VENDOR = 'Edge Cycles';
function edgeBike(overrides: Partial<BikeFields>, min: [number, string], max: [number, string]): BikeFields {
  return newBike({
    vendor: EDGE_VENDOR,
    productType: 'Road',
    availableForSale: true,
    totalInventory: 1,
    ...overrides,
    priceRange: {
      minPrice: { amount: min[0], currencyCode: min[1] },
      maxPrice: { amount: max[0], currencyCode: max[1] },
    },
  });
}
const NOT_FOR_SALE = edgeBike({ availableForSale: false, totalInventory: 5 }, [1000, 'USD'], [1500, 'USD']);
const SOLD_OUT = edgeBike({ totalInventory: 0 }, [800, 'USD'], [900, 'USD']);
const IN_EUROS = edgeBike({ totalInventory: 3 }, [700.1, 'EUR'], [750.2, 'EUR']);
const MIXED_CURRENCIES = edgeBike({ productType: 'Gravel', totalInventory: 2 }, [1200, 'USD'], [1300, 'EUR']);

const cents = (amount: number) => Math.round(amount * 100);

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

const byKey = (key: (row: Row) => string) => (a: Row, b: Row) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

describe('reporting SQL against a seeded catalog', () => {
  let databaseUrl: string;
  let svc: TestService;
  let db: Client;
  let bikes: Bike[];

  async function report(name: string): Promise<Row[]> {
    const sql = fs.readFileSync(path.join(REPORTS, `${name}.sql`), 'utf8');
    return (await db.query(sql)).rows as Row[];
  }

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const seeded = await runSeed(['--count', '60', '--seed', '2026'], { DATABASE_URL: databaseUrl });
    expect(seeded.code).toBe(0);
    svc = await startTestService({ databaseUrl });
    const api = client(svc.baseUrl, await svc.token());
    for (const bike of [NOT_FOR_SALE, SOLD_OUT, IN_EUROS, MIXED_CURRENCIES]) await api.create(bike);
    const res = await api.request('GET', '/bikes/all');
    bikes = (await res.json()) as Bike[];
    expect(bikes).toHaveLength(64);
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await svc?.stop();
  });

  // psql is Debian's postgresql-client (CI installs it); without it this one is skipped, and says so.
  (hasPsql ? it : it.skip)(
    'runs from npm run db:psql as docs/reporting.md shows: a report from its file, the same rows',
    async () => {
      const run = await promisify(execFile)(
        'node',
        ['dist/cli/psql.js', '-X', '-A', '-t', '-F', ',', '-f', 'test/ops/reports/stock-value.sql'],
        { cwd: path.join(__dirname, '..', '..'), env: { ...process.env, DATABASE_URL: databaseUrl } },
      );
      const rows = await report('stock-value');
      expect(run.stdout.trim().split('\n')).toEqual(rows.map((row) => Object.values(row).join(',')));
    },
  );

  it('inventory and price range by vendor and product type: one row per vendor, type and currency, with the right counts, units and prices', async () => {
    const rows = await report('inventory-by-vendor-and-type');
    const expected = [
      ...groupBy(bikes, (b) => JSON.stringify([b.vendor, b.productType, b.priceRange.minPrice.currencyCode])),
    ].map(([key, group]) => {
      const [vendor, productType, currency] = JSON.parse(key) as string[];
      return {
        vendor,
        product_type: productType,
        currency,
        bikes: group.length,
        units_in_stock: group.reduce((sum, b) => sum + b.totalInventory, 0),
        lowest_price: Math.min(...group.map((b) => b.priceRange.minPrice.amount)),
        highest_price: Math.max(...group.map((b) => b.priceRange.maxPrice.amount)),
      };
    });
    const received: Row[] = rows.map((row) => ({ ...row, bikes: Number(row.bikes) }));
    const key = (row: Row) => JSON.stringify([row.vendor, row.product_type, row.currency]);
    expect([...received].sort(byKey(key))).toEqual([...expected].sort(byKey(key)));
    expect(new Set(rows.map(key)).size).toBe(rows.length);

    // The hand-made bikes, figured by hand: the sold-out and the unsold USD road bikes share a row.
    expect(received.filter((row) => row.vendor === EDGE_VENDOR).sort(byKey(key))).toEqual([
      {
        vendor: EDGE_VENDOR,
        product_type: 'Gravel',
        currency: 'USD',
        bikes: 1,
        units_in_stock: 2,
        lowest_price: 1200,
        highest_price: 1300,
      },
      {
        vendor: EDGE_VENDOR,
        product_type: 'Road',
        currency: 'EUR',
        bikes: 1,
        units_in_stock: 3,
        lowest_price: 700.1,
        highest_price: 750.2,
      },
      {
        vendor: EDGE_VENDOR,
        product_type: 'Road',
        currency: 'USD',
        bikes: 2,
        units_in_stock: 5,
        lowest_price: 800,
        highest_price: 1500,
      },
    ]);
  });

  it('bikes for sale: exactly those for sale and in stock, cheapest first', async () => {
    const rows = await report('bikes-for-sale');
    const expected = bikes
      .filter((b) => b.availableForSale && b.totalInventory > 0)
      .map((b) => ({
        title: b.title,
        vendor: b.vendor,
        product_type: b.productType,
        in_stock: b.totalInventory,
        from_price: b.priceRange.minPrice.amount,
        to_price: b.priceRange.maxPrice.amount,
        currency: b.priceRange.minPrice.currencyCode,
      }));
    const key = (row: Row) => JSON.stringify(Object.values(row));
    expect([...rows].sort(byKey(key))).toEqual([...expected].sort(byKey(key)));
    // Ties on price are ordered by title in the database's collation, so only the price order is checked here.
    const prices = rows.map((row) => row.from_price as number);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));

    const titles = rows.map((row) => row.title);
    expect(titles).toContain(IN_EUROS.title);
    expect(titles).not.toContain(SOLD_OUT.title);
    expect(titles).not.toContain(NOT_FOR_SALE.title);
    expect(rows.length).toBeGreaterThan(10);
  });

  it('value of stock: per currency, units (and units for sale) times the lowest and the highest price, to the cent', async () => {
    const rows = await report('stock-value');
    const expected = [...groupBy(bikes, (b) => b.priceRange.minPrice.currencyCode)].map(([currency, group]) => ({
      currency,
      units: group.reduce((sum, b) => sum + b.totalInventory, 0),
      units_for_sale: group.filter((b) => b.availableForSale).reduce((sum, b) => sum + b.totalInventory, 0),
      // In whole cents, so the sums are exact.
      value_at_lowest_price: group.reduce((sum, b) => sum + b.totalInventory * cents(b.priceRange.minPrice.amount), 0),
      value_at_highest_price: group.reduce((sum, b) => sum + b.totalInventory * cents(b.priceRange.maxPrice.amount), 0),
    }));
    const received = rows.map((row) => ({
      ...row,
      value_at_lowest_price: cents(Number(row.value_at_lowest_price)),
      value_at_highest_price: cents(Number(row.value_at_highest_price)),
    }));
    const key = (row: Row) => row.currency as string;
    expect([...received].sort(byKey(key))).toEqual([...expected].sort(byKey(key)));
    expect(rows.map(key)).toEqual([...rows.map(key)].sort());
    // Seeded bikes come in USD, EUR and GBP; the hand-made EUR bike adds 3 x 700.10 and 3 x 750.20.
    expect(rows.map(key)).toEqual(expect.arrayContaining(['EUR', 'USD']));
    const euros = expected.find((row) => row.currency === 'EUR');
    expect(euros?.value_at_lowest_price).toBeGreaterThanOrEqual(210_030);
  });

  it('price ranges that mix currencies: only the bike whose lowest and highest price differ in currency', async () => {
    const rows = await report('mixed-currency-prices');
    const mixed = bikes.find((b) => b.title === MIXED_CURRENCIES.title) as Bike;
    expect(rows).toEqual([
      { id: mixed.id, title: mixed.title, min_price_currency_code: 'USD', max_price_currency_code: 'EUR' },
    ]);
  });
});

describe("docs/reporting.md's queries", () => {
  it('are the files the tests run, as written: each SQL block of the guide one of test/ops/reports/*.sql, and each file shown', () => {
    const guide = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'reporting.md'), 'utf8');
    const blocks = [...guide.matchAll(/```sql\n([\s\S]*?)```/g)].map(([, sql]) => sql);
    const files = fs.readdirSync(REPORTS).map((name) => fs.readFileSync(path.join(REPORTS, name), 'utf8'));
    expect(blocks.sort()).toEqual(files.sort());
    expect(files.length).toBe(8);
  });
});

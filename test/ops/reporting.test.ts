import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import type { Bike, BikeFields } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { decimal, exact, round, sum, times } from '../support/decimal';
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

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

const byKey = (key: (row: Row) => string) => (a: Row, b: Row) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

/** A report's row with its numeric figures (PostgreSQL's text) in one exact text each. */
const exactFigures = (row: Row): Row =>
  Object.fromEntries(
    Object.entries(row).map(([name, value]) => [name, name === 'currency' ? value : exact(value as string)]),
  );

/** stock-value's rows, figured exactly from the bikes the API serves. */
function stockValues(bikes: Bike[]): Row[] {
  return [...groupBy(bikes, (b) => b.priceRange.minPrice.currencyCode)].map(([currency, group]) => {
    const units = (of: Bike[]) => sum(of.map((b) => decimal(b.totalInventory)));
    const value = (price: (b: Bike) => number) =>
      exact(round(sum(group.map((b) => times(decimal(b.totalInventory), decimal(price(b))))), 2));
    return {
      currency,
      units: exact(units(group)),
      units_for_sale: exact(units(group.filter((b) => b.availableForSale))),
      value_at_lowest_price: value((b) => b.priceRange.minPrice.amount),
      value_at_highest_price: value((b) => b.priceRange.maxPrice.amount),
    };
  });
}

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
  });

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
        units_in_stock: exact(sum(group.map((b) => decimal(b.totalInventory)))),
        lowest_price: Math.min(...group.map((b) => b.priceRange.minPrice.amount)),
        highest_price: Math.max(...group.map((b) => b.priceRange.maxPrice.amount)),
      };
    });
    const received: Row[] = rows.map((row) => ({
      ...row,
      bikes: Number(row.bikes),
      units_in_stock: exact(row.units_in_stock as string),
    }));
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
        units_in_stock: '2',
        lowest_price: 1200,
        highest_price: 1300,
      },
      {
        vendor: EDGE_VENDOR,
        product_type: 'Road',
        currency: 'EUR',
        bikes: 1,
        units_in_stock: '3',
        lowest_price: 700.1,
        highest_price: 750.2,
      },
      {
        vendor: EDGE_VENDOR,
        product_type: 'Road',
        currency: 'USD',
        bikes: 2,
        units_in_stock: '5',
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
    const expected = stockValues(bikes);
    const key = (row: Row) => row.currency as string;
    expect(rows.map(exactFigures).sort(byKey(key))).toEqual(expected.sort(byKey(key)));
    expect(rows.map(key)).toEqual([...rows.map(key)].sort());
    // Seeded bikes come in USD, EUR and GBP; the hand-made EUR bike adds 3 x 700.10 and 3 x 750.20.
    expect(rows.map(key)).toEqual(expect.arrayContaining(['EUR', 'USD']));
    const euros = rows.find((row) => row.currency === 'EUR');
    expect(Number(euros?.value_at_lowest_price)).toBeGreaterThanOrEqual(2_100.3);
  });

  it('price ranges that mix currencies: only the bike whose lowest and highest price differ in currency', async () => {
    const rows = await report('mixed-currency-prices');
    const mixed = bikes.find((b) => b.title === MIXED_CURRENCIES.title) as Bike;
    expect(rows).toEqual([
      { id: mixed.id, title: mixed.title, min_price_currency_code: 'USD', max_price_currency_code: 'EUR' },
    ]);
  });
});

/**
 * The values the API accepts at their extremes (docs/reporting.md#exact-figures): the largest
 * double and its negative, the smallest (subnormal), 1e308 twice over, fractions that doubles
 * cannot hold exactly. Every report that adds or multiplies answers them exactly, to the digit.
 */
describe('the reports that add or multiply, over the extremes the API accepts', () => {
  const MAX = Number.MAX_VALUE; // 1.7976931348623157e308
  const TINY = Number.MIN_VALUE; // 5e-324
  const extreme = (currency: string, stock: number, min: number, max: number, availableForSale = true) =>
    newBike({
      vendor: 'Extreme Cycles',
      productType: currency === 'XTS' ? 'Test' : 'Fractions',
      availableForSale,
      totalInventory: stock,
      priceRange: {
        minPrice: { amount: min, currencyCode: currency },
        maxPrice: { amount: max, currencyCode: currency },
      },
    });
  const EXTREMES = [
    extreme('XTS', 2, 1e308, 1e308), // the one that made stock-value fail for the whole catalog
    extreme('XTS', MAX, MAX, MAX),
    extreme('XTS', 1e308, -MAX, -TINY, false),
    extreme('XTS', -MAX, TINY, MAX),
    extreme('XTS', TINY, 0.1, MAX),
    extreme('XXX', 0.1, 0.2, 0.3),
    extreme('XXX', 0.2, 1 / 3, 2 / 3),
    extreme('XXX', -0.3, 0.005, 0.015),
  ];
  let svc: TestService;
  let db: Client;
  let bikes: Bike[];

  beforeAll(async () => {
    svc = await startTestService();
    const api = client(svc.baseUrl, await svc.token());
    for (const bike of EXTREMES) await api.create(bike);
    bikes = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    // The API keeps every value as sent.
    expect(bikes.map((b) => [b.totalInventory, b.priceRange])).toEqual(
      EXTREMES.map((b) => [b.totalInventory, b.priceRange]),
    );
    db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await svc?.stop();
  });

  const report = async (name: string) =>
    (await db.query(fs.readFileSync(path.join(REPORTS, `${name}.sql`), 'utf8'))).rows as Row[];

  it('value of stock: the units and both values of each currency, exactly, rounded to the cent', async () => {
    const rows = (await report('stock-value')).map(exactFigures);
    expect(rows).toEqual(stockValues(bikes));
    // Figured by hand: 2 + MAX + 1e308 - MAX + 5e-324 units, the bike of 1e308 not for sale.
    expect(rows[0]).toMatchObject({
      currency: 'XTS',
      units: exact(sum([decimal(1e308), decimal(2), decimal(TINY)])),
      units_for_sale: exact(sum([decimal(2), decimal(TINY)])),
    });
    expect(rows[1]).toEqual({
      currency: 'XXX',
      units: '0',
      units_for_sale: '0',
      value_at_lowest_price: '0.09', // 0.02 + 0.0666… - 0.0015
      value_at_highest_price: '0.16', // 0.03 + 0.1333… - 0.0045
    });
  });

  it('inventory by vendor and type: the units of each, exactly, and the lowest and highest price as stored', async () => {
    const rows = await report('inventory-by-vendor-and-type');
    expect(
      rows.map((row) => ({ ...row, bikes: Number(row.bikes), units_in_stock: exact(row.units_in_stock as string) })),
    ).toEqual([
      {
        vendor: 'Extreme Cycles',
        product_type: 'Fractions',
        currency: 'XXX',
        bikes: 3,
        units_in_stock: '0',
        lowest_price: 0.005,
        highest_price: 2 / 3,
      },
      {
        vendor: 'Extreme Cycles',
        product_type: 'Test',
        currency: 'XTS',
        bikes: 5,
        units_in_stock: exact(sum(bikes.slice(0, 5).map((b) => decimal(b.totalInventory)))),
        lowest_price: -MAX,
        highest_price: MAX,
      },
    ]);
  });
});

describe("docs/reporting.md's queries", () => {
  it('are the files the tests run, as written: each SQL block of the guide one of test/ops/reports/*.sql, and each file shown', () => {
    const guide = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'reporting.md'), 'utf8');
    const blocks = [...guide.matchAll(/```sql\n([\s\S]*?)```/g)].map(([, sql]) => sql);
    const files = fs.readdirSync(REPORTS).map((name) => fs.readFileSync(path.join(REPORTS, name), 'utf8'));
    expect(blocks.sort()).toEqual(files.sort());
    expect(files.length).toBe(9);
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { Bike, BikeFields } from '../../src/bikes/bike';
import { client, newBike } from '../support/bikes';
import { add, decimal, exact, negate, sum } from '../support/decimal';
import { type LogPosition, pruneUntilPast } from '../support/pruning';
import { startTestService, type TestService } from '../support/service';

/**
 * The history reports of docs/reporting.md (test/ops/reports/*.sql over bike_changes), run as written against
 * a history made here: creates, price and stock changes, a vendor move and deletes, through the API
 * and by SQL, in three periods (40 days ago, 10 days ago, today: the log's changed_at moved back
 * as if the time had passed), then pruned at the default retention as the service prunes. Each
 * report's rows are checked against figures computed here from the same writes, the bike before
 * and after each as the API served it, and the stock movement also against /bikes/all at the
 * period's start and end.
 */

type Row = Record<string, unknown>;

const DAY_MS = 24 * 3600 * 1000;
const ALPHA = 'Alpha Cycles';
const BETA = 'Beta Bikes';
const GAMMA = 'Gamma Works';

/** A bike of `vendor` with `stock` units, its prices in `currency`. */
function bike(vendor: string, stock: number, min: number, max: number, currency = 'USD'): BikeFields {
  return newBike({
    vendor,
    totalInventory: stock,
    priceRange: {
      minPrice: { amount: min, currencyCode: currency },
      maxPrice: { amount: max, currencyCode: currency },
    },
  });
}

/** One bike's change as the API served it: before and after (undefined: not there), and when it was written. */
interface Write {
  /** How many days ago, once the time has passed: 40, 10 or 0. */
  daysAgo: number;
  id: string;
  before: Bike | undefined;
  after: Bike | undefined;
  /** Date.now() before the request and after its answer. */
  from: number;
  to: number;
}

/** The price as the reports compare it: the lowest price's currency and amount, and the highest amount. */
const priceOf = (b: Bike) => [
  b.priceRange.minPrice.currencyCode,
  b.priceRange.minPrice.amount,
  b.priceRange.maxPrice.amount,
];

/** Units a write brought into (positive) or took out of each vendor's stock, as docs/reporting.md says they count. */
function movementsOf({ before, after }: Write): [string, number][] {
  const moves: [string, number][] = [];
  if (after)
    moves.push([after.vendor, after.totalInventory - (before?.vendor === after.vendor ? before.totalInventory : 0)]);
  if (before && before.vendor !== after?.vendor) moves.push([before.vendor, -before.totalInventory]);
  return moves.filter(([, units]) => units !== 0);
}

function stockByVendor(bikes: Bike[]): Map<string, number> {
  const stock = new Map<string, number>();
  for (const b of bikes) stock.set(b.vendor, (stock.get(b.vendor) ?? 0) + b.totalInventory);
  return stock;
}

describe('history reports over bike_changes', () => {
  let svc: TestService;
  let db: Client;
  const writes: Write[] = [];
  let daysAgo = 40;
  let stockAtStart: Map<string, number>;
  let stockAtEnd: Map<string, number>;
  let aliveAfterFirstPeriod: string[];

  async function report(name: string): Promise<Row[]> {
    const sql = fs.readFileSync(path.join(__dirname, 'reports', `${name}.sql`), 'utf8');
    return (await db.query(sql)).rows as Row[];
  }

  beforeAll(async () => {
    svc = await startTestService();
    db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    const api = client(svc.baseUrl, await svc.token());

    const current = async (id: string): Promise<Bike | undefined> => {
      const res = await api.request('GET', `/bikes/${id}`);
      return res.status === 200 ? ((await res.json()) as Bike) : undefined;
    };
    /** Runs `write`, which changes the bikes `ids` (or creates one and returns its id), and records each change. */
    const recorded = async (ids: string[], write: () => Promise<string | void>): Promise<string> => {
      const before = await Promise.all(ids.map(current));
      const from = Date.now();
      const created = await write();
      const to = Date.now();
      const changed = created ? [created] : ids;
      for (const [i, id] of changed.entries()) {
        writes.push({ daysAgo, id, before: before[i], after: await current(id), from, to });
      }
      return changed[0];
    };
    const answered = async (res: Promise<Response>) => expect((await res).status).toBe(200);
    const create = (fields: BikeFields) => recorded([], async () => (await api.create(fields)).id);
    const patch = (id: string, body: object) =>
      recorded([id], () => answered(api.request('PATCH', `/bikes/${id}`, { body })));
    const replace = (id: string, fields: BikeFields, handle: string) =>
      recorded([id], () => answered(api.request('PUT', `/bikes/${id}`, { body: { ...fields, id, handle } })));
    const remove = (id: string) => recorded([id], () => answered(api.request('DELETE', `/bikes/${id}`)));
    const bySql = (ids: string[], statement: string, params: unknown[]) =>
      recorded(ids, async () => {
        await db.query(statement, params);
      });
    const allBikes = async () => (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    /** `days` pass: every change so far moves that far back. */
    const timePasses = async (days: number) => {
      await db.query(`UPDATE bike_changes SET changed_at = changed_at - $1 * interval '24 hours'`, [days]);
      daysAgo -= days;
    };

    // 40 days ago: the catalog, a price change and a rename (pruning keeps only the latest of
    // each bike there), a bike created and deleted.
    const a1 = await create(bike(ALPHA, 10, 100, 150));
    const a2 = await create(bike(BETA, 10, 200, 260));
    const a3 = await create(bike(BETA, 5, 300, 320, 'EUR'));
    const a4 = await create(bike(GAMMA, 8, 400, 450));
    const a5 = await create(bike(ALPHA, 6, 500, 550));
    const a6 = await create(bike(GAMMA, 4, 600, 640));
    await patch(a1, { priceRange: bike(ALPHA, 0, 95, 150).priceRange });
    await patch(a4, { title: 'Gamma Tourer (renamed 40 days ago)' });
    await remove(await create(bike(BETA, 3, 700, 720)));
    const atStart = await allBikes();
    stockAtStart = stockByVendor(atStart);
    aliveAfterFirstPeriod = atStart.map((b) => b.id);
    await timePasses(30);

    // 10 days ago: within the last 30 days, not this week.
    await patch(a1, { priceRange: bike(ALPHA, 0, 90, 150).priceRange });
    await patch(a2, { totalInventory: 4 });
    await patch(a3, { title: 'Beta Commuter (renamed 10 days ago)' });
    await remove(a6);
    const b1 = await create(bike(GAMMA, 3, 800, 820));
    await timePasses(10);

    // Today.
    await replace(a1, bike(ALPHA, 10, 85, 140), 'alpha-replaced');
    await patch(a1, { priceRange: bike(ALPHA, 0, 85, 140).priceRange }); // the same prices: no price change
    await patch(a2, { priceRange: bike(BETA, 0, 200, 260, 'EUR').priceRange }); // the currency alone
    await bySql([a5], 'UPDATE bikes SET min_price_amount = 480 WHERE id = $1', [a5]);
    await patch(a2, { totalInventory: 9 });
    await bySql([a1, a5], 'UPDATE bikes SET total_inventory = total_inventory - 1 WHERE vendor = $1', [ALPHA]);
    await patch(b1, { vendor: BETA, totalInventory: 2 }); // moves from Gamma to Beta
    const c1 = await create(bike(ALPHA, 7, 900, 950));
    await patch(c1, { totalInventory: 2 });
    await remove(c1);
    await remove(a3);
    await bySql([a4], 'DELETE FROM bikes WHERE id = $1', [a4]);
    await remove(a2);
    await replace(a2, bike(BETA, 1, 210, 270), 'beta-again'); // created again
    stockAtEnd = stockByVendor(await allBikes());

    // As the service prunes at the default retention, with the history kept no longer than the feed
    // (HISTORY_RETENTION_DAYS=30; unset, it would all be kept), until it has passed the last change older than that.
    await db.query('UPDATE bike_changes_pruning SET history_retention_days = 30');
    const {
      rows: [last],
    } = await db.query<LogPosition>(
      `SELECT txid, change_id FROM bike_changes WHERE changed_at < now() - interval '30 days'
        ORDER BY txid DESC, change_id DESC LIMIT 1`,
    );
    await pruneUntilPast(db, `now() - interval '30 days'`, last);
  });

  afterAll(async () => {
    await db?.end();
    await svc?.stop();
  });

  /** The writes within the last `days` days. */
  const within = (days: number) => writes.filter((w) => w.daysAgo < days);

  /** `at` is when the transaction of `write` began, in its period. */
  function expectWrittenAt(at: unknown, write: Write) {
    const ms = (at as Date).getTime() + write.daysAgo * DAY_MS;
    // changed_at holds milliseconds, rounded.
    expect(ms).toBeGreaterThanOrEqual(write.from - 1);
    expect(ms).toBeLessThanOrEqual(write.to + 1);
  }

  it("docs/reporting.md's table of bike_changes names each of its columns, with its type", async () => {
    const guide = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'reporting.md'), 'utf8');
    const section = guide.slice(guide.indexOf('## History: `bike_changes`')).split(/\n#{2,3} /)[0];
    const documented: Row = {};
    for (const line of section.split('\n').filter((l) => l.startsWith('| `'))) {
      const [names, type] = line.split('|').slice(1, 3);
      for (const [, name] of names.matchAll(/`(\w+)`/g)) documented[name] = type.trim();
    }
    const { rows } = await db.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, CASE data_type WHEN 'ARRAY' THEN format_type(udt_name::regtype, NULL) ELSE data_type END AS data_type
         FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = 'bike_changes'`,
    );
    const names: Row = { 'timestamp with time zone': 'timestamptz' };
    expect(documented).toEqual(Object.fromEntries(rows.map((r) => [r.column_name, names[r.data_type] ?? r.data_type])));
  });

  it('pruning kept, of the changes older than the retention, only the latest of each bike there was then', async () => {
    const { rows } = await db.query<{ bike_id: string; kind: string }>(
      `SELECT bike_id, kind FROM bike_changes WHERE changed_at < now() - interval '30 days'`,
    );
    expect(rows.map((r) => r.bike_id).sort()).toEqual([...aliveAfterFirstPeriod].sort());
    expect(rows.filter((r) => r.kind === 'delete')).toEqual([]);
  });

  it('price changes over the last 30 days: each change of a price, from the change before to this one, and when, in order', async () => {
    const rows = await report('price-changes');
    const changes = within(30).filter(
      (w) => w.before && w.after && JSON.stringify(priceOf(w.before)) !== JSON.stringify(priceOf(w.after)),
    );
    expect(rows.map(({ changed_at, ...row }) => row)).toEqual(
      changes.map(({ id, before, after }) => {
        const [currencyFrom, minFrom, maxFrom] = priceOf(before as Bike);
        const [currencyTo, minTo, maxTo] = priceOf(after as Bike);
        return {
          bike_id: id,
          title: after?.title,
          vendor: after?.vendor,
          currency_from: currencyFrom,
          min_price_from: minFrom,
          max_price_from: maxFrom,
          currency_to: currencyTo,
          min_price_to: minTo,
          max_price_to: maxTo,
        };
      }),
    );
    changes.forEach((write, i) => expectWrittenAt(rows[i].changed_at, write));
    // Figured by hand: a1 10 days ago (95 -> 90) and today (90/150 -> 85/140), a2's currency, a5 by SQL.
    expect(rows.map((r) => [r.currency_to, r.min_price_from, r.min_price_to])).toEqual([
      ['USD', 95, 90],
      ['USD', 90, 85],
      ['EUR', 200, 200],
      ['USD', 500, 480],
    ]);
  });

  it('stock movement by vendor over the last 30 days: units in and out, their net the change of each vendor stock', async () => {
    // Whole units here, which numbers hold exactly (the extremes are below).
    const rows = (await report('stock-movement-by-vendor')).map(({ vendor, ...units }): Row => ({
      vendor,
      ...Object.fromEntries(Object.entries(units).map(([name, value]) => [name, Number(value)])),
    }));
    const expected = new Map<string, { units_in: number; units_out: number }>();
    for (const [vendor, units] of within(30).flatMap(movementsOf)) {
      const sums = expected.get(vendor) ?? { units_in: 0, units_out: 0 };
      if (units > 0) sums.units_in += units;
      else sums.units_out -= units;
      expected.set(vendor, sums);
    }
    expect(rows).toEqual(
      [...expected.keys()].sort().map((vendor) => {
        const { units_in, units_out } = expected.get(vendor) as { units_in: number; units_out: number };
        return { vendor, units_in, units_out, net_change: units_in - units_out };
      }),
    );
    // The net change of each vendor's stock, as /bikes/all served it at the period's start and end.
    for (const vendor of new Set([...stockAtStart.keys(), ...stockAtEnd.keys()])) {
      const net = rows.find((r) => r.vendor === vendor)?.net_change ?? 0;
      expect([vendor, net]).toEqual([vendor, (stockAtEnd.get(vendor) ?? 0) - (stockAtStart.get(vendor) ?? 0)]);
    }
    // Figured by hand: a create in, a delete out, Gamma's bike moved to Beta out of one and into the other.
    expect(rows).toEqual([
      { vendor: ALPHA, units_in: 7, units_out: 9, net_change: -2 },
      { vendor: BETA, units_in: 8, units_out: 20, net_change: -12 },
      { vendor: GAMMA, units_in: 3, units_out: 15, net_change: -12 },
    ]);
  });

  it('bikes deleted this week: each delete of the last 7 days, with the title and vendor the bike last had, in order', async () => {
    const rows = await report('bikes-deleted-this-week');
    const deletes = within(7).filter((w) => w.before && !w.after);
    expect(rows.map(({ deleted_at, ...row }) => row)).toEqual(
      deletes.map(({ id, before }) => ({ bike_id: id, title: before?.title, vendor: before?.vendor })),
    );
    deletes.forEach((write, i) => expectWrittenAt(rows[i].deleted_at, write));
    // Figured by hand: a bike renamed 40 days ago (its older changes pruned), one renamed 10 days
    // ago, one deleted by SQL, one created again after; not those deleted 40 and 10 days ago.
    expect(rows.map((r) => [r.vendor, r.title])).toEqual([
      [ALPHA, expect.stringMatching(/^Hybrid Bicycle /)],
      [BETA, 'Beta Commuter (renamed 10 days ago)'],
      [GAMMA, 'Gamma Tourer (renamed 40 days ago)'],
      [BETA, expect.stringMatching(/^Hybrid Bicycle /)],
    ]);
  });
});

/**
 * Stock movement over the extremes the API accepts (docs/reporting.md#exact-figures): a stock of
 * the largest double taken to its negative (a movement twice the largest double), 1e308 moved
 * between vendors, the smallest double, fractions doubles cannot hold. Counted exactly.
 */
describe('stock movement over the extremes the API accepts', () => {
  const MAX = Number.MAX_VALUE; // 1.7976931348623157e308
  const TINY = Number.MIN_VALUE; // 5e-324
  let svc: TestService;
  let db: Client;
  afterAll(async () => {
    await db?.end();
    await svc?.stop();
  });

  it('counts every unit in and out of each vendor exactly, the net its stock at the end less at the start', async () => {
    svc = await startTestService();
    db = new Client({ connectionString: svc.databaseUrl });
    await db.connect();
    const api = client(svc.baseUrl, await svc.token());
    const patch = async (id: string, body: object) =>
      expect((await api.request('PATCH', `/bikes/${id}`, { body })).status).toBe(200);
    const a = await api.create(bike(ALPHA, MAX, 1, 2));
    await patch(a.id, { totalInventory: -MAX });
    const b = await api.create(bike(ALPHA, 1e308, 1, 2));
    await patch(b.id, { vendor: BETA });
    await patch(b.id, { totalInventory: TINY });
    expect((await api.request('DELETE', `/bikes/${b.id}`)).status).toBe(200);
    const c = await api.create(bike(BETA, 0.1, 1, 2));
    await patch(c.id, { totalInventory: 0.3 });

    const sql = fs.readFileSync(path.join(__dirname, 'reports', 'stock-movement-by-vendor.sql'), 'utf8');
    const rows = (await db.query<Record<string, string>>(sql)).rows.map(({ vendor, ...units }) => ({
      vendor,
      ...Object.fromEntries(Object.entries(units).map(([name, value]) => [name, exact(value)])),
    }));
    const [max, big] = [decimal(MAX), decimal(1e308)];
    expect(rows).toEqual([
      // In: a's MAX, b's 1e308. Out: a's MAX to -MAX, b's 1e308 moved to Beta.
      {
        vendor: ALPHA,
        units_in: exact(add(max, big)),
        units_out: exact(sum([max, max, big])),
        net_change: exact(negate(max)),
      },
      // In: b's 1e308, c's 0.1 and 0.2 more. Out: b's 1e308 down to 5e-324, then that deleted.
      { vendor: BETA, units_in: exact(add(big, decimal('0.3'))), units_out: exact(big), net_change: '0.3' },
    ]);
  });
});

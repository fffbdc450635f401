import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { type Bike, bikeFields, deriveHandle } from '../../src/bikes/bike';
import { validate } from '../../src/bikes/yup';
import { startEmbeddedPostgres } from '../../src/postgres/embedded-postgres';
import { createTestDatabase } from '../support/databases';
import { startTestService } from '../support/service';
import { tempDataDir } from '../support/temp-dir';
import { runSeed } from './seed-cli';

async function countBikes(databaseUrl: string): Promise<number> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: string }>('SELECT count(*) FROM bikes');
    return Number(rows[0].count);
  } finally {
    await client.end();
  }
}

/** The catalog as the API serves it. */
async function catalog(databaseUrl: string): Promise<Bike[]> {
  const svc = await startTestService({ databaseUrl });
  try {
    const res = await fetch(`${svc.baseUrl}/bikes/all`);
    expect(res.status).toBe(200);
    return (await res.json()) as Bike[];
  } finally {
    await svc.stop();
  }
}

const hasCents = (amount: number) => Math.abs(amount * 100 - Math.round(amount * 100)) < 1e-6;

describe('npm run db:seed (node dist/cli/seed.js)', () => {
  it('with --count 25 and DATABASE_URL, it adds 25 realistic bikes that the API serves, each with min price <= max price', async () => {
    const databaseUrl = await createTestDatabase();
    const run = await runSeed(['--count', '25'], { DATABASE_URL: databaseUrl });
    expect(run).toMatchObject({ code: 0, output: expect.stringContaining('added 25 bike(s) to the catalog') });
    expect(run.output).not.toContain(decodeURIComponent(new URL(databaseUrl).password) || 'no password');

    const bikes = await catalog(databaseUrl);
    expect(bikes).toHaveLength(25);
    const threeYearsAgo = Date.now() - 3 * 366 * 24 * 3600 * 1000;
    for (const bike of bikes) {
      const { id: _id, handle, ...fields } = bike;
      expect(validate(bikeFields, fields)).toEqual(fields);
      expect(handle).toBe(deriveHandle(bike.title));
      // "<bicycle type> <model>", e.g. "Hybrid Bicycle Sentra"; the product type is the type without "Bicycle".
      const [, type, model] = /^(.+? Bicycle|Tricycle) (.+)$/.exec(bike.title) ?? [];
      expect({ title: bike.title, type: type ?? null, model: model ?? null }).toEqual({
        title: bike.title,
        type: expect.any(String),
        model: expect.any(String),
      });
      expect(bike.productType).toBe(type.replace(/ Bicycle$/, ''));
      expect(bike.vendor.trim()).not.toBe('');
      expect(bike.description).toContain('frame');
      const created = Date.parse(bike.createdAt);
      expect(new Date(created).toISOString()).toBe(bike.createdAt);
      expect(created).toBeGreaterThan(threeYearsAgo);
      expect(created).toBeLessThanOrEqual(Date.now());
      expect(Number.isInteger(bike.totalInventory) && bike.totalInventory >= 0 && bike.totalInventory <= 60).toBe(true);

      const { minPrice, maxPrice } = bike.priceRange;
      expect(minPrice.amount).toBeGreaterThan(0);
      expect(minPrice.amount).toBeLessThanOrEqual(maxPrice.amount);
      expect(hasCents(minPrice.amount) && hasCents(maxPrice.amount)).toBe(true);
      expect(['USD', 'EUR', 'GBP']).toContain(minPrice.currencyCode);
      expect(maxPrice.currencyCode).toBe(minPrice.currencyCode);
    }
    // A catalog, not 25 copies of one bike.
    expect(new Set(bikes.map((bike) => bike.productType)).size).toBeGreaterThanOrEqual(3);
    expect(new Set(bikes.map((bike) => bike.vendor)).size).toBeGreaterThanOrEqual(3);
    expect(new Set(bikes.map((bike) => bike.title)).size).toBeGreaterThanOrEqual(20);
  }, 60_000);

  it('when run twice with the same --seed, it adds the same bikes both times', async () => {
    const [first, second] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    expect((await runSeed(['--count', '5', '--seed', '42'], { DATABASE_URL: first })).code).toBe(0);
    expect((await runSeed(['--count', '5', '--seed', '42'], { DATABASE_URL: second })).code).toBe(0);
    const withoutIds = (bikes: Bike[]) => bikes.map(({ id: _id, ...rest }) => rest);
    const firstBikes = withoutIds(await catalog(first));
    expect(firstBikes).toHaveLength(5);
    expect(withoutIds(await catalog(second))).toEqual(firstBikes);
  }, 60_000);

  it.each([['0'], ['abc'], ['2.5'], ['100001'], ['-3']])(
    'when --count is %s, it exits 2 with the usage and adds nothing',
    async (count) => {
      const databaseUrl = await createTestDatabase();
      const run = await runSeed([`--count=${count}`], { DATABASE_URL: databaseUrl });
      expect(run).toMatchObject({ code: 2, output: expect.stringContaining('usage: npm run db:seed') });
      expect(await countBikes(databaseUrl)).toBe(0);
    },
  );

  it('without DATABASE_URL, it creates, migrates and seeds the embedded database in DATA_DIR, then stops the PostgreSQL it started', async () => {
    const dataDir = tempDataDir('seed');
    try {
      expect(await runSeed(['--count', '3'], { DATA_DIR: dataDir })).toMatchObject({ code: 0 });
      expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
      expect(await runSeed(['--count', '2'], { DATA_DIR: dataDir })).toMatchObject({ code: 0 });

      const postgres = await startEmbeddedPostgres({ dataDir });
      try {
        expect(await countBikes(postgres.url)).toBe(5);
      } finally {
        await postgres.stop();
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

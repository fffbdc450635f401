import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { type Bike, bikeFields, deriveHandle } from '../../src/bikes/bike';
import { validate } from '../support/validate';
import { startEmbeddedPostgres } from '../../src/postgres/embedded-postgres';
import { createTestDatabase } from '../support/databases';
import { startTestService } from '../support/service';
import { tempDataDir } from '../support/temp-dir';
import { BIKE_TYPES, BRANDS, type BikeType } from '../../src/cli/bike-shop';
import { runSeed } from './seed-cli';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The built project in `dir` as the container image has it (Dockerfile: `npm prune --omit=dev`):
 * dist/, prisma/ and node_modules without the packages that prune removes, those package-lock.json
 * marks `dev` (needed by devDependencies only). node_modules is hard-linked (nothing here writes to it).
 */
function copyWithProductionDependencies(dir: string): void {
  for (const entry of ['package.json', 'dist', 'prisma']) {
    fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
  }
  execFileSync('cp', ['-al', fs.realpathSync(path.join(ROOT, 'node_modules')), path.join(dir, 'node_modules')]);
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  for (const [location, { dev }] of Object.entries(lock.packages)) {
    if (dev) fs.rmSync(path.join(dir, location), { recursive: true, force: true });
  }
}

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
  it("with --count 25 and DATABASE_URL, it adds 25 bikes of a bike shop that the API serves: real brands and their models, prices within their type's range", async () => {
    const databaseUrl = await createTestDatabase();
    // A fixed seed: the variety asked of the catalog below is then a fact, not a likelihood.
    const run = await runSeed(['--count', '25', '--seed', '3'], { DATABASE_URL: databaseUrl });
    expect(run).toMatchObject({ code: 0, output: expect.stringContaining('added 25 bike(s) to the catalog') });
    expect(run.output).not.toContain(decodeURIComponent(new URL(databaseUrl).password) || 'no password');

    const bikes = await catalog(databaseUrl);
    expect(bikes).toHaveLength(25);
    // A seeded run dates its bikes within the three years before 2026-01-01.
    const threeYearsAgo = Date.parse('2026-01-01T00:00:00.000Z') - 3 * 366 * 24 * 3600 * 1000;
    const types: Record<string, BikeType> = BIKE_TYPES;
    for (const bike of bikes) {
      const { id: _id, handle, ...fields } = bike;
      expect(validate(bikeFields, fields)).toEqual(fields);
      expect(handle).toBe(deriveHandle(bike.title));
      // "<brand> <model>", a model the brand sells, of the bike's type: "Trek Domane SL 5", a Road bike.
      expect(Object.keys(BRANDS)).toContain(bike.vendor);
      const model = bike.title.slice(bike.vendor.length + 1);
      expect(bike.title).toBe(`${bike.vendor} ${model}`);
      const [, typeName] = BRANDS[bike.vendor].find(([name]) => name === model) ?? [model, 'none'];
      const type = types[typeName];
      expect({ title: bike.title, productType: bike.productType }).toEqual({
        title: bike.title,
        productType: type.productType,
      });
      expect(bike.description).toMatch(new RegExp(`^An? ${type.noun} with an? .+ frame in .+, and .+\\.$`));
      const created = Date.parse(bike.createdAt);
      expect(new Date(created).toISOString()).toBe(bike.createdAt);
      expect(created).toBeGreaterThan(threeYearsAgo);
      expect(created).toBeLessThanOrEqual(Date.now());
      expect(Number.isInteger(bike.totalInventory) && bike.totalInventory >= 0 && bike.totalInventory <= 60).toBe(true);

      const { minPrice, maxPrice } = bike.priceRange;
      expect(minPrice.amount).toBeGreaterThanOrEqual(type.price.min);
      expect(minPrice.amount).toBeLessThanOrEqual(maxPrice.amount);
      expect(maxPrice.amount).toBeLessThanOrEqual(type.price.max);
      expect(hasCents(minPrice.amount) && hasCents(maxPrice.amount)).toBe(true);
      expect(['USD', 'EUR', 'GBP']).toContain(minPrice.currencyCode);
      expect(maxPrice.currencyCode).toBe(minPrice.currencyCode);
    }
    // A catalog, not 25 copies of one bike.
    expect(new Set(bikes.map((bike) => bike.productType)).size).toBeGreaterThanOrEqual(3);
    expect(new Set(bikes.map((bike) => bike.vendor)).size).toBeGreaterThanOrEqual(3);
    expect(new Set(bikes.map((bike) => bike.title)).size).toBeGreaterThanOrEqual(20);
  });

  it("prices every type within its range, kids' bikes below any carbon road bike or e-MTB", () => {
    for (const type of Object.values(BIKE_TYPES)) expect(type.price.min).toBeLessThan(type.price.max);
    expect(BIKE_TYPES.kids.price.max).toBeLessThan(BIKE_TYPES.road.price.min);
    expect(BIKE_TYPES.kids.price.max).toBeLessThan(BIKE_TYPES.eMtb.price.min);
  });

  it('when run twice with the same --seed, it adds the same bikes both times', async () => {
    const [first, second] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    expect((await runSeed(['--count', '5', '--seed', '42'], { DATABASE_URL: first })).code).toBe(0);
    expect((await runSeed(['--count', '5', '--seed', '42'], { DATABASE_URL: second })).code).toBe(0);
    const withoutIds = (bikes: Bike[]) => bikes.map(({ id: _id, ...rest }) => rest);
    const firstBikes = withoutIds(await catalog(first));
    expect(firstBikes).toHaveLength(5);
    expect(withoutIds(await catalog(second))).toEqual(firstBikes);

    // Another seed, another catalog.
    const third = await createTestDatabase();
    expect((await runSeed(['--count', '5', '--seed', '43'], { DATABASE_URL: third })).code).toBe(0);
    expect(withoutIds(await catalog(third))).not.toEqual(firstBikes);
  });

  it('runs where only the production dependencies are installed (the container image: npm prune --omit=dev)', async () => {
    const dir = tempDataDir('seed-prod');
    try {
      copyWithProductionDependencies(dir);
      // Really without them.
      for (const dev of ['@faker-js/faker', 'jest', 'pino-pretty', 'ts-jest']) {
        expect(fs.existsSync(path.join(dir, 'node_modules', dev))).toBe(false);
      }
      const databaseUrl = await createTestDatabase();
      const run = await runSeed(['--count', '50', '--seed', '7'], { DATABASE_URL: databaseUrl }, dir);
      expect(run).toMatchObject({ code: 0, output: expect.stringContaining('added 50 bike(s) to the catalog') });
      expect(await countBikes(databaseUrl)).toBe(50);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

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
  });
});

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { faker } from '@faker-js/faker';
import { type BikeFields, bikeFields, deriveHandle } from '../bikes/bike';
import { exampleOf } from '../bikes/yup';
import { createBikeRepository } from '../bikes/repository';
import { readConfig } from '../config';
import { prepareDatabase } from '../db/migrate';
import { connectPool } from '../db/pool';
import { createPrismaClient } from '../db/prisma';
import { createLogger } from '../logger';
import { openDatabaseServer } from '../postgres/database-server';

/**
 * npm run db:seed [-- --count 25] [-- --seed 42]: adds realistic bikes to the catalog, through
 * the same repository the API writes with (Prisma Client's create), in DATABASE_URL or the
 * embedded database. Applies pending migrations first, so it works on a database nothing has
 * touched yet. `--seed` makes the bikes the same on every run.
 */

const USAGE = 'usage: npm run db:seed -- [--count <1-100000>] [--seed <integer>]';
const MAX_COUNT = 100_000;

const FEATURES = ['hydraulic disc brakes', 'a carbon fork', 'tubeless-ready wheels', 'a dropper seatpost', 'lights'];
const FRAMES = ['aluminium', 'carbon', 'steel', 'titanium'];
// Most shops price in one currency; a few bikes in others make the per-currency reports meaningful.
const CURRENCIES = [
  { weight: 8, value: 'USD' },
  { weight: 1, value: 'EUR' },
  { weight: 1, value: 'GBP' },
];

const cents = (amount: number) => Math.round(amount * 100) / 100;

/**
 * One made-up bike: a bicycle type, a model and a manufacturer, with min price <= max price.
 * A field not made up here takes the example its schema carries.
 */
function fakeBike(): BikeFields {
  const type = faker.vehicle.bicycle(); // "Hybrid Bicycle", "Tricycle", ...
  const productType = type.replace(/ Bicycle$/, '');
  const model = faker.vehicle.model();
  const minPrice = faker.number.float({ min: 120, max: 4500, fractionDigits: 2 });
  const maxPrice = cents(minPrice + faker.number.float({ min: 0, max: minPrice * 0.6, fractionDigits: 2 }));
  const currencyCode = faker.helpers.weightedArrayElement(CURRENCIES);
  return {
    ...exampleOf(bikeFields),
    title: `${type} ${model}`,
    productType,
    createdAt: faker.date.past({ years: 3 }).toISOString(),
    description: `A ${faker.helpers.arrayElement(FRAMES)} frame in ${faker.color.human()}, with ${faker.helpers.arrayElement(FEATURES)}.`,
    vendor: faker.vehicle.manufacturer(),
    availableForSale: faker.datatype.boolean({ probability: 0.8 }),
    totalInventory: faker.number.int({ min: 0, max: 60 }),
    priceRange: {
      minPrice: { amount: minPrice, currencyCode },
      maxPrice: { amount: maxPrice, currencyCode },
    },
  };
}

function readOptions(args: string[]): { count: number; seed: number | undefined } {
  const { values } = parseArgs({ args, options: { count: { type: 'string' }, seed: { type: 'string' } } });
  const countText = values.count ?? '25';
  const count = Number(countText);
  if (!/^\d+$/.test(countText) || count < 1 || count > MAX_COUNT) {
    throw new Error(`--count must be a whole number from 1 to ${MAX_COUNT}\n${USAGE}`);
  }
  if (values.seed !== undefined && !/^-?\d+$/.test(values.seed)) throw new Error(`--seed must be an integer\n${USAGE}`);
  return { count, seed: values.seed === undefined ? undefined : Number(values.seed) };
}

async function main(): Promise<void> {
  let options: { count: number; seed: number | undefined };
  try {
    options = readOptions(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  if (options.seed !== undefined) {
    // Dates are drawn relative to a reference date: a fixed one, so a seed gives the same bikes on any day.
    faker.seed(options.seed);
    faker.setDefaultRefDate('2026-01-01T00:00:00.000Z');
  }

  const config = readConfig(process.env, { signsTokens: false });
  const logger = createLogger(config.logLevel);
  const server = await openDatabaseServer(config, logger);
  try {
    await prepareDatabase(server, (message) => logger.info(message));
    const pool = connectPool(server.url, (err) => logger.warn({ err: err.message }, 'database connection lost'));
    try {
      const bikes = createBikeRepository({ prisma: createPrismaClient(pool), writes: pool });
      // One at a time, so the catalog lists them in the order they were made.
      for (let i = 0; i < options.count; i++) {
        const fields = fakeBike();
        await bikes.create(randomUUID(), deriveHandle(fields.title), fields);
      }
    } finally {
      await pool.end();
    }
    logger.info({ count: options.count }, `added ${options.count} bike(s) to the catalog`);
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error('seeding failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

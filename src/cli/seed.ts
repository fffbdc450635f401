import { createHash, randomInt, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { type BikeFields, bikeFields, deriveHandle } from '../bikes/bike';
import { toModelFields } from '../bikes/fields';
import { readConfig } from '../config';
import { prepareToServe } from '../db/migrate';
import { connectPool } from '../db/pool';
import { createPrismaClient } from '../db/prisma';
import { exampleOf } from '../http/schema';
import { createLogger } from '../logger';
import { openDatabaseServer } from '../postgres/database-server';
import { BIKE_TYPES, BRANDS, COLOURS, CURRENCIES } from './bike-shop';

/**
 * npm run db:seed [-- --count 25] [-- --seed 42]: adds bikes that read like a bike shop's
 * catalog (src/cli/bike-shop.ts) with Prisma Client's createMany, a thousand to an INSERT, in
 * DATABASE_URL or the embedded database (docs/reference/database.md#prisma-client). Applies pending migrations first,
 * so it works on a database nothing has touched yet. `--seed` makes the bikes the same on every
 * run. Only node and the production dependencies are needed: it runs in the container image.
 */

const USAGE = 'usage: npm run db:seed -- [--count <1-100000>] [--seed <integer>]';
const MAX_COUNT = 100_000;
/** Bikes per INSERT. */
const BATCH = 1_000;
/** Bikes are dated within this long before the reference date. */
const THREE_YEARS_MS = 3 * 365 * 24 * 3600 * 1000;
/** The reference date of a seeded run: fixed, so a seed gives the same bikes on any day. */
const SEEDED_REFERENCE = Date.parse('2026-01-01T00:00:00.000Z');

/** Draws in [0, 1): SHA-256 (node:crypto) of the seed and a counter, the same on every machine. */
function randomSource(seed: number): () => number {
  let counter = 0;
  return () => createHash('sha256').update(`${seed}:${counter++}`).digest().readUIntBE(0, 6) / 2 ** 48;
}

/** A price as a shop lists it: the ten at or below `amount`, plus 9.99 (1,234 lists at 1,239.99). */
const listPrice = (amount: number) => Math.floor(amount / 10) * 10 + 9.99;

/** The word with its indefinite article: "an e-bike", "a steel". */
const withArticle = (word: string) => `${/^[aeiou]/i.test(word) ? 'an' : 'a'} ${word}`;

/** One of the values, each as likely as its weight. */
function weighted<T>(random: () => number, items: readonly { weight: number; value: T }[]): T {
  let draw = random() * items.reduce((sum, { weight }) => sum + weight, 0);
  return (items.find(({ weight }) => (draw -= weight) < 0) ?? items[items.length - 1]).value;
}

/**
 * One bike: a brand's model of its type, priced within the type's range, min price <= max price.
 * A field the shop knows nothing of has its definition's example.
 */
function shopBike(random: () => number, referenceDate: number): BikeFields {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const vendor = pick(Object.keys(BRANDS));
  const [model, typeName] = pick(BRANDS[vendor]);
  const type = BIKE_TYPES[typeName];
  // Listed prices stay within the range: the draw leaves room for rounding up to x9.99.
  const { min, max } = type.price;
  const minPrice = listPrice(min + random() * (max - 10 - min));
  const maxPrice = Math.max(minPrice, listPrice(Math.min(max - 10, minPrice * (1 + 0.3 * random()))));
  const currencyCode = weighted(random, CURRENCIES);
  const description = `${withArticle(type.noun)} with ${withArticle(pick(type.frames))} frame in ${pick(COLOURS)}, and ${pick(type.features)}.`;
  return {
    ...exampleOf(bikeFields),
    title: `${vendor} ${model}`,
    productType: type.productType,
    createdAt: new Date(referenceDate - Math.floor(random() * THREE_YEARS_MS)).toISOString(),
    description: description[0].toUpperCase() + description.slice(1),
    vendor,
    availableForSale: random() < 0.8,
    totalInventory: Math.floor(random() * 61),
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
  // Unseeded, a seed of its own, logged, so a run can be made again.
  const seed = options.seed ?? randomInt(2 ** 47);
  const random = randomSource(seed);
  const referenceDate = options.seed === undefined ? Date.now() : SEEDED_REFERENCE;

  const config = readConfig(process.env, { signsTokens: false });
  const logger = createLogger(config.logLevel);
  const server = await openDatabaseServer(config, logger);
  try {
    // As the service starts: in the compose stacks' api container, as a role that may not migrate.
    await prepareToServe(server, config, (message) => logger.info(message));
    const pool = connectPool(server.url, (err) => logger.warn({ err: err.message }, 'database connection lost'), {
      ServerClient: server.ServerClient,
    });
    try {
      const prisma = createPrismaClient(pool);
      // In batches, each one INSERT whose rows take their places (seq) in the order they were made.
      for (let made = 0; made < options.count; made += BATCH) {
        const batch = Array.from({ length: Math.min(BATCH, options.count - made) }, () => {
          const fields = shopBike(random, referenceDate);
          return toModelFields({ id: randomUUID(), handle: deriveHandle(fields.title), ...fields });
        });
        await prisma.bike.createMany({ data: batch });
      }
    } finally {
      await pool.end();
    }
    logger.info({ count: options.count, seed }, `added ${options.count} bike(s) to the catalog`);
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

import type { Bike, BikeFields, BikePatch } from './bike';
import { Prisma } from '../generated/prisma/client.ts';
import type { Database } from '../db/prisma';

/**
 * The catalog's storage. Speaks in Bike objects; the table's column layout (embedded price
 * columns, the insertion sequence) stays in this file.
 */

const bikeColumns = {
  id: true,
  handle: true,
  title: true,
  productType: true,
  createdAt: true,
  description: true,
  vendor: true,
  availableForSale: true,
  totalInventory: true,
  minPriceAmount: true,
  minPriceCurrencyCode: true,
  maxPriceAmount: true,
  maxPriceCurrencyCode: true,
} satisfies Prisma.BikeSelect;

type BikeRow = Prisma.BikeGetPayload<{ select: typeof bikeColumns }>;

function toBike(row: BikeRow): Bike {
  return {
    id: row.id,
    handle: row.handle,
    title: row.title,
    productType: row.productType,
    createdAt: row.createdAt,
    description: row.description,
    vendor: row.vendor,
    availableForSale: row.availableForSale,
    totalInventory: row.totalInventory,
    priceRange: {
      minPrice: { amount: row.minPriceAmount, currencyCode: row.minPriceCurrencyCode },
      maxPrice: { amount: row.maxPriceAmount, currencyCode: row.maxPriceCurrencyCode },
    },
  };
}

/**
 * Prisma 7 writes an integer-valued Float beyond the safe-integer range with only 16 significant
 * digits (1.2345678901234567e300 comes back rounded; 1.7976931348623157e308 overflows float8 and
 * fails). As a Decimal it reaches PostgreSQL as exact decimal text, which float8 reads back as the
 * same double.
 */
function exactFloat(n: number): number {
  return Number.isInteger(n) && !Number.isSafeInteger(n) ? (new Prisma.Decimal(n.toString()) as unknown as number) : n;
}

function toColumns(fields: Partial<BikeFields>): Prisma.BikeUpdateInput {
  const { priceRange, totalInventory, ...plain } = fields;
  return {
    ...plain,
    ...(totalInventory !== undefined && { totalInventory: exactFloat(totalInventory) }),
    ...(priceRange && {
      minPriceAmount: exactFloat(priceRange.minPrice.amount),
      minPriceCurrencyCode: priceRange.minPrice.currencyCode,
      maxPriceAmount: exactFloat(priceRange.maxPrice.amount),
      maxPriceCurrencyCode: priceRange.maxPrice.currencyCode,
    }),
  };
}

function allColumns(id: string, handle: string, fields: BikeFields): Prisma.BikeCreateInput {
  return { id, handle, ...(toColumns(fields) as Omit<Prisma.BikeCreateInput, 'id' | 'handle'>) };
}

/** `%`, `_` and `\` in a search term match themselves (backslash is LIKE's escape character). */
export function escapeLike(term: string): string {
  return term.replace(/[\\%_]/g, '\\$&');
}

/*
 * The reads (get by id, get by handle, and the batches behind /bikes/all and the search) run
 * these statements on the pg pool under Prisma rather than through Prisma's client. Profiled
 * under load on 100,000 bikes, Prisma's own work per query (about 230 µs for findUnique, 140 µs
 * for $queryRaw, on top of the driver) cost more than a whole request of a plain node:http + pg
 * server, and the busiest routes ran at 0.4 of its throughput; a batch of 1000 rows paid for it
 * again per row. Writes stay on Prisma. Columns are aliased to the Prisma field names, so one
 * toBike() maps rows from both. bench/baseline.js runs the very same statements.
 */
const BIKE_COLUMNS =
  'id, handle, title, product_type AS "productType", created_at AS "createdAt", description, vendor, ' +
  'available_for_sale AS "availableForSale", total_inventory AS "totalInventory", ' +
  'min_price_amount AS "minPriceAmount", min_price_currency_code AS "minPriceCurrencyCode", ' +
  'max_price_amount AS "maxPriceAmount", max_price_currency_code AS "maxPriceCurrencyCode"';

export const readStatements = {
  /** On the primary key. */
  byId: `SELECT ${BIKE_COLUMNS} FROM bikes WHERE id = $1`,
  /** On bikes_handle_idx (hash; a b-tree cannot hold long handles): the oldest of the rows with that handle. */
  firstByHandle: `SELECT ${BIKE_COLUMNS} FROM bikes WHERE handle = $1 ORDER BY seq LIMIT 1`,
  /** Keyset pagination on bikes_seq_key: every batch is one index range scan. */
  batch: `SELECT ${BIKE_COLUMNS}, seq FROM bikes WHERE seq > $1 ORDER BY seq LIMIT $2`,
  /** The pattern is a LIKE constant ('%term%'), which the planner can match to the trigram index. */
  titleBatch: `SELECT ${BIKE_COLUMNS}, seq FROM bikes WHERE title LIKE $1 AND seq > $2 ORDER BY seq LIMIT $3`,
};

/**
 * Rows per list or search batch. Rows pile up in memory while a batch is read, and V8 grows its
 * young generation with them: on 100,000 bikes, batches of 1000 raised the peak RSS of
 * /bikes/all by about 57 MB, batches of 250 by about 29 MB, for the same total time.
 */
export const LIST_BATCH_SIZE = 250;

/** Below every insertion sequence, so the first batch starts at the beginning. */
const BEFORE_FIRST_SEQ = '-9223372036854775808';

function isNotFound(err: unknown): boolean {
  return err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2025';
}

export interface BikeRepository {
  create(id: string, handle: string, fields: BikeFields): Promise<Bike>;
  findById(id: string): Promise<Bike | null>;
  findFirstByHandle(handle: string): Promise<Bike | null>;
  /** Bikes oldest first, in batches, optionally only those whose title contains a term. */
  listInBatches(options?: { titleContains?: string; batchSize?: number }): AsyncGenerator<Bike[]>;
  /** Stores the bike under `id`, replacing what was there but keeping its place; creates it if absent. */
  replace(id: string, handle: string, fields: BikeFields): Promise<Bike>;
  /** Writes only the given fields; null when there is no such bike. */
  patch(id: string, patch: BikePatch): Promise<Bike | null>;
  /** False when there was no such bike. */
  delete(id: string): Promise<boolean>;
}

/** Writes go through Prisma; the reads run plain SQL on the pool under it (see readStatements). */
export function createBikeRepository({ prisma, pool }: Pick<Database, 'prisma' | 'pool'>): BikeRepository {
  return {
    async create(id, handle, fields) {
      const row = await prisma.bike.create({ data: allColumns(id, handle, fields), select: bikeColumns });
      return toBike(row);
    },

    async findById(id) {
      const { rows } = await pool.query<BikeRow>(readStatements.byId, [id]);
      return rows.length > 0 ? toBike(rows[0]) : null;
    },

    async findFirstByHandle(handle) {
      // No stored string holds U+0000 (PostgreSQL text cannot), and as a parameter it is an error.
      if (handle.includes('\u0000')) return null;
      const { rows } = await pool.query<BikeRow>(readStatements.firstByHandle, [handle]);
      return rows.length > 0 ? toBike(rows[0]) : null;
    },

    async *listInBatches({ titleContains, batchSize = LIST_BATCH_SIZE } = {}) {
      // Keyset pagination on the insertion sequence: each batch is one indexed query, and
      // memory holds one batch at a time however large the catalog is.
      const pattern = titleContains ? `%${escapeLike(titleContains)}%` : undefined;
      let after = BEFORE_FIRST_SEQ;
      for (;;) {
        const { rows } =
          pattern === undefined
            ? await pool.query<BikeRow & { seq: string }>(readStatements.batch, [after, batchSize])
            : await pool.query<BikeRow & { seq: string }>(readStatements.titleBatch, [pattern, after, batchSize]);
        if (rows.length > 0) yield rows.map(toBike);
        if (rows.length < batchSize) return;
        // int8 comes back from pg as a string; it goes back as a parameter unchanged.
        after = rows[rows.length - 1].seq;
      }
    },

    async replace(id, handle, fields) {
      const data = allColumns(id, handle, fields);
      const row = await prisma.bike.upsert({
        where: { id },
        create: data,
        update: { ...data, updatedAt: new Date() },
        select: bikeColumns,
      });
      return toBike(row);
    },

    async patch(id, patch) {
      if (Object.keys(patch).length === 0) return this.findById(id);
      try {
        const row = await prisma.bike.update({ where: { id }, data: toColumns(patch), select: bikeColumns });
        return toBike(row);
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
    },

    async delete(id) {
      const { count } = await prisma.bike.deleteMany({ where: { id } });
      return count > 0;
    },
  };
}

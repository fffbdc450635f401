import type { Bike, BikeFields, BikePatch } from './bike';
import { Prisma, type PrismaClient } from '../generated/prisma/client.ts';

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

function toColumns(fields: Partial<BikeFields>): Prisma.BikeUpdateInput {
  const { priceRange, ...plain } = fields;
  return {
    ...plain,
    ...(priceRange && {
      minPriceAmount: priceRange.minPrice.amount,
      minPriceCurrencyCode: priceRange.minPrice.currencyCode,
      maxPriceAmount: priceRange.maxPrice.amount,
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

export function createBikeRepository(prisma: PrismaClient): BikeRepository {
  return {
    async create(id, handle, fields) {
      const row = await prisma.bike.create({ data: allColumns(id, handle, fields), select: bikeColumns });
      return toBike(row);
    },

    async findById(id) {
      const row = await prisma.bike.findUnique({ where: { id }, select: bikeColumns });
      return row && toBike(row);
    },

    async findFirstByHandle(handle) {
      const row = await prisma.bike.findFirst({ where: { handle }, orderBy: { seq: 'asc' }, select: bikeColumns });
      return row && toBike(row);
    },

    async *listInBatches({ titleContains, batchSize = 1000 } = {}) {
      // Keyset pagination on the insertion sequence: each batch is one indexed query, and
      // memory holds one batch at a time however large the catalog is.
      const titleFilter = titleContains ? { title: { contains: escapeLike(titleContains) } } : {};
      let after: bigint | undefined;
      for (;;) {
        const rows = await prisma.bike.findMany({
          where: { ...titleFilter, ...(after !== undefined && { seq: { gt: after } }) },
          orderBy: { seq: 'asc' },
          take: batchSize,
          select: { ...bikeColumns, seq: true },
        });
        if (rows.length > 0) yield rows.map(toBike);
        if (rows.length < batchSize) return;
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

import { Prisma } from '../generated/prisma/client.ts';
import type { Bike, BikePatch } from './bike';

/**
 * A bike as Prisma Client's Bike model holds it, by the model's field names; the repository's
 * SQL reads select the same fields under the same names. Written out by hand so that the
 * compiler checks both directions against the generated types: a field added to the bike or to
 * the model and not mapped here fails the build.
 */

const INT32 = 2 ** 31;

/**
 * A double in the form Prisma Client carries exactly (rule 27). Prisma 7.10 passes a fractional
 * number, or an integer within int32, to pg as a parameter; an integer-valued number beyond that
 * (every double from 2^53 up is one) it writes into its compiled query, and loses digits there:
 * 1.2345678901234567e300 was stored as 1.234567890123457e300, and 1.7976931348623157e308
 * overflowed to a 400. As a Decimal made from the number's shortest form it reaches PostgreSQL as
 * that text, which float8 reads back as the same double. The Float fields' input type says
 * number, hence this one cast.
 */
export function exactFloat(n: number): number {
  if (!Number.isInteger(n) || (n >= -INT32 && n < INT32)) return n;
  return new Prisma.Decimal(String(n)) as unknown as number;
}

/** The model's fields that make a bike (seq, version, insertedAt and updatedAt are the table's own). */
export const BIKE_SELECT = {
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
} as const satisfies Required<Omit<Prisma.BikeSelect, 'seq' | 'version' | 'insertedAt' | 'updatedAt'>>;

/** A bike in the model's fields. */
export type BikeModelFields = Prisma.BikeGetPayload<{ select: typeof BIKE_SELECT }>;

/** The model's fields for a whole bike: every one of them is written (create, replace). */
export function toModelFields(bike: Bike): BikeModelFields {
  return {
    id: bike.id,
    handle: bike.handle,
    title: bike.title,
    productType: bike.productType,
    createdAt: bike.createdAt,
    description: bike.description,
    vendor: bike.vendor,
    availableForSale: bike.availableForSale,
    totalInventory: exactFloat(bike.totalInventory),
    minPriceAmount: exactFloat(bike.priceRange.minPrice.amount),
    minPriceCurrencyCode: bike.priceRange.minPrice.currencyCode,
    maxPriceAmount: exactFloat(bike.priceRange.maxPrice.amount),
    maxPriceCurrencyCode: bike.priceRange.maxPrice.currencyCode,
  };
}

/**
 * The model's fields for the fields a patch carries, and only those (undefined is "leave as is"
 * to Prisma), so concurrent patches of other fields are kept. A price range is written whole.
 */
export function toModelPatch(patch: BikePatch): Prisma.BikeUpdateInput {
  const { priceRange } = patch;
  return {
    handle: patch.handle,
    title: patch.title,
    productType: patch.productType,
    createdAt: patch.createdAt,
    description: patch.description,
    vendor: patch.vendor,
    availableForSale: patch.availableForSale,
    totalInventory: patch.totalInventory === undefined ? undefined : exactFloat(patch.totalInventory),
    minPriceAmount: priceRange && exactFloat(priceRange.minPrice.amount),
    minPriceCurrencyCode: priceRange?.minPrice.currencyCode,
    maxPriceAmount: priceRange && exactFloat(priceRange.maxPrice.amount),
    maxPriceCurrencyCode: priceRange?.maxPrice.currencyCode,
  };
}

/**
 * The bike the model's fields hold (a Prisma result, or a row of the repository's reads), its
 * fields in the schema's order (the order responses list them).
 */
export function fromModelFields(row: BikeModelFields): Bike {
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

import type { Prisma } from '../generated/prisma/client.ts';
import type { Bike } from './bike';

/**
 * A bike as Prisma Client's Bike model holds it, by the model's field names; the repository's
 * statements select the same fields under the same names. Written out by hand so that the
 * compiler checks both directions against the generated types: a field added to the bike or to
 * the model and not mapped here fails the build. Types only: the service loads no Prisma Client.
 */

type TableOwnFields =
  'seq' | 'version' | 'insertedAt' | 'updatedAt' | 'titleKey' | 'vendorKey' | 'productTypeKey' | 'minPriceCurrencyKey';

/**
 * The model's fields that make a bike (seq, version, insertedAt, updatedAt and the generated keys
 * GET /bikes orders and filters by are the table's own).
 * @public bench/minimal/koa-prisma.js and bench/equivalent/koa-prisma.js require it from dist/.
 */
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
} as const satisfies Required<Omit<Prisma.BikeSelect, TableOwnFields>>;

/** A bike in the model's fields. */
export type BikeModelFields = Prisma.BikeGetPayload<{ select: typeof BIKE_SELECT }>;

/** The model's fields for a whole bike (what the seed gives Prisma Client's createMany). */
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
    totalInventory: bike.totalInventory,
    minPriceAmount: bike.priceRange.minPrice.amount,
    minPriceCurrencyCode: bike.priceRange.minPrice.currencyCode,
    maxPriceAmount: bike.priceRange.maxPrice.amount,
    maxPriceCurrencyCode: bike.priceRange.maxPrice.currencyCode,
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

/** A bike's columns, each as its Prisma model field: rows read here map to bikes as Prisma's do. */
export const BIKE_COLUMNS = [
  'bikes.id',
  'bikes.handle',
  'bikes.title',
  'bikes.product_type as productType',
  'bikes.created_at as createdAt',
  'bikes.description',
  'bikes.vendor',
  'bikes.available_for_sale as availableForSale',
  'bikes.total_inventory as totalInventory',
  'bikes.min_price_amount as minPriceAmount',
  'bikes.min_price_currency_code as minPriceCurrencyCode',
  'bikes.max_price_amount as maxPriceAmount',
  'bikes.max_price_currency_code as maxPriceCurrencyCode',
] as const;

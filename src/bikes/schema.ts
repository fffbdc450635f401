import * as yup from 'yup';
import type { BikeFields, BikePatch } from './bike';

/**
 * The request-body rules for bikes, in one place. Types are strict: "5" is not a number and
 * "true" is not a boolean. Every string must be one PostgreSQL can store as given: no U+0000
 * and no lone UTF-16 surrogate. Every number must be finite (JSON such as 1e999 parses to
 * Infinity, which could not be read back as sent).
 */

/**
 * yup's default type-error message prints the offending value with JSON.stringify, which
 * overflows the stack on a deeply nested body ([[[...]]]) and turned a 400 into a 500. Every
 * type check here uses this fixed message instead.
 */
const WRONG_TYPE = '${path} has the wrong type';

const text = () =>
  yup
    .string()
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    .test(
      'storable',
      '${path} contains U+0000 or a lone surrogate',
      (value) => value === undefined || (!value.includes('\u0000') && value.isWellFormed()),
    );

const finiteNumber = () =>
  yup
    .number()
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    .test('finite', '${path} must be a finite number', (value) => value === undefined || Number.isFinite(value));

export const moneySchema = yup
  .object({
    amount: finiteNumber(),
    currencyCode: text(),
  })
  .typeError(WRONG_TYPE)
  .strict()
  .defined();

export const priceRangeSchema = yup
  .object({
    minPrice: moneySchema,
    maxPrice: moneySchema,
  })
  .typeError(WRONG_TYPE)
  .strict()
  .defined();

const clientFields = {
  title: text(),
  productType: text(),
  createdAt: text(),
  description: text(),
  vendor: text(),
  availableForSale: yup.boolean().typeError(WRONG_TYPE).strict().defined(),
  totalInventory: finiteNumber(),
  priceRange: priceRangeSchema,
};

/** POST /bikes/: the eight client fields. A body id or handle is ignored. */
export const createBikeSchema = yup.object(clientFields).typeError(WRONG_TYPE).strict().defined();

/** PUT /bikes/<id>: the eight client fields plus a truthy id and handle. */
export const replaceBikeSchema = yup
  .object({
    ...clientFields,
    id: text().min(1),
    handle: text().min(1),
  })
  .typeError(WRONG_TYPE)
  .strict()
  .defined();

/** PATCH /bikes/<id>: any subset; each field present must be valid as on create. */
export const patchBikeSchema = yup
  .object({
    ...Object.fromEntries(Object.entries(clientFields).map(([key, schema]) => [key, schema.optional()])),
    handle: text().optional(),
  })
  .typeError(WRONG_TYPE)
  .strict()
  .defined();

export type Validated<T> = { ok: true; value: T } | { ok: false };

function validate(schema: yup.AnySchema, body: unknown): boolean {
  try {
    schema.validateSync(body, { strict: true, abortEarly: true });
    return true;
  } catch (err) {
    if (err instanceof yup.ValidationError) return false;
    throw err;
  }
}

function pickMoney(money: { amount: number; currencyCode: string }) {
  return { amount: money.amount, currencyCode: money.currencyCode };
}

function pickPriceRange(range: BikeFields['priceRange']): BikeFields['priceRange'] {
  return { minPrice: pickMoney(range.minPrice), maxPrice: pickMoney(range.maxPrice) };
}

/** Only the known fields are kept: unknown ones are neither stored nor returned. */
function pickFields(body: BikeFields): BikeFields {
  return {
    title: body.title,
    productType: body.productType,
    createdAt: body.createdAt,
    description: body.description,
    vendor: body.vendor,
    availableForSale: body.availableForSale,
    totalInventory: body.totalInventory,
    priceRange: pickPriceRange(body.priceRange),
  };
}

export function parseCreateBody(body: unknown): Validated<BikeFields> {
  return validate(createBikeSchema, body) ? { ok: true, value: pickFields(body as BikeFields) } : { ok: false };
}

export function parseReplaceBody(body: unknown): Validated<BikeFields & { handle: string }> {
  if (!validate(replaceBikeSchema, body)) return { ok: false };
  const fields = body as BikeFields & { handle: string };
  return { ok: true, value: { ...pickFields(fields), handle: fields.handle } };
}

const PATCHABLE = [
  'handle',
  'title',
  'productType',
  'createdAt',
  'description',
  'vendor',
  'availableForSale',
  'totalInventory',
] as const;

export function parsePatchBody(body: unknown): Validated<BikePatch> {
  if (!validate(patchBikeSchema, body)) return { ok: false };
  const source = body as BikePatch;
  const patch: Record<string, unknown> = {};
  for (const key of PATCHABLE) {
    if (Object.hasOwn(source, key) && source[key] !== undefined) patch[key] = source[key];
  }
  if (Object.hasOwn(source, 'priceRange') && source.priceRange !== undefined) {
    patch.priceRange = pickPriceRange(source.priceRange);
  }
  return { ok: true, value: patch as BikePatch };
}

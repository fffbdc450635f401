import * as yup from 'yup';
import { WRONG_TYPE } from '../http/schema';

/**
 * The bike, defined once: its fields, their types and their order in responses. The TypeScript
 * types, the request-body checks and the OpenAPI schemas (src/http/json-schema.ts) come from
 * these schemas; the table's columns are mapped to them once, in src/bikes/fields.ts, which the
 * compiler checks against both.
 *
 * Types are strict: "5" is not a number and "true" is not a boolean. Every string must be one
 * PostgreSQL can store as given (no U+0000, no lone UTF-16 surrogate), and every number a finite
 * double, stored as one (float8). A JSON number that has no nearest double (1e999 parses to
 * Infinity, 1e-400 to 0) never gets here: the body reader refuses it (src/http/json-numbers.ts).
 */

/** Strings PostgreSQL can store; written to mean the same with and without the regex `u` flag. */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what it excludes
const STORABLE = /^(?:[^\u0000\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/;

// Each field carries an example, for the API description (src/http/openapi.ts).
const text = (example: string) =>
  yup
    .string()
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    .matches(STORABLE, '${path} contains U+0000 or a lone surrogate')
    .meta({ example });

const finiteNumber = (example: number) =>
  yup
    .number()
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    // Absent or null (where the field may be null) is not a number to judge: yup's own tests skip them too.
    .test('finite', '${path} must be a finite number', (value) => value == null || Number.isFinite(value))
    .meta({ example });

const boolean = (example: boolean) => yup.boolean().typeError(WRONG_TYPE).strict().defined().meta({ example });

const object = <Shape extends yup.ObjectShape>(shape: Shape, name?: string) =>
  yup
    .object(shape)
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    .meta(name ? { name } : {});

const money = object({ amount: finiteNumber(499.99), currencyCode: text('USD') }, 'Money');

/**
 * The fields a client sets, in the order responses list them. A field every bike has is written as
 * above (`text('54 cm')`); one a bike may be without, as its type's `.nullable().optional()`
 * (`finiteNumber(9.5).nullable().optional()`): null is its value then, and a create or a
 * replacement that leaves it out stores null; a patch that leaves it out keeps it
 * (docs/development.md#adding-a-field-to-the-bike).
 */
const clientFields = {
  title: text('Hybrid Bicycle Sentra'),
  productType: text('Hybrid'),
  createdAt: text('2024-03-01T10:00:00Z'),
  description: text('A comfortable hybrid for the city, with hydraulic disc brakes'),
  vendor: text('Sentra Cycles'),
  availableForSale: boolean(true),
  totalInventory: finiteNumber(12),
  priceRange: object({ minPrice: money, maxPrice: money }, 'PriceRange'),
};

/** POST /bikes/: the client's fields. */
export const bikeFields = object(clientFields);

/** The server's part of a bike. */
const id = text('3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41');
const handle = text('hybrid-bicycle-sentra');

/** Each field of a shape as a response has it: always there, an optional one as null when the bike has no value. */
type Present<Shape> = { [Key in keyof Shape]: Shape[Key] extends { defined(): infer Defined } ? Defined : Shape[Key] };
const present = <Shape extends yup.ObjectShape>(shape: Shape) =>
  Object.fromEntries(
    Object.entries(shape).map(([key, field]) => [key, (field as yup.Schema).defined()]),
  ) as Present<Shape>;

/** A bike as stored and returned: the server's id and handle, then the client's fields, every one of them. */
export const bike = object({ id: id.uuid(), handle, ...present(clientFields) });

/** PUT /bikes/<id>: the client's fields, plus a truthy id and handle (the specification's words). */
export const replacement = object({ id: id.min(1), handle: handle.min(1), ...clientFields });

/** PATCH /bikes/<id>: any subset of the fields, and the handle; each present one valid as on create. */
export const patch = object({ handle, ...clientFields }).partial();

export type BikeFields = yup.InferType<typeof bikeFields>;
export type Bike = yup.InferType<typeof bike>;
export type BikePatch = yup.InferType<typeof patch>;

/**
 * The title with every space (U+0020) turned into '-', then lowercased, and nothing else
 * (docs/reference/bike.md#handle).
 */
export function deriveHandle(title: string): string {
  return title.replaceAll(' ', '-').toLowerCase();
}

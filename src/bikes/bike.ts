import * as yup from 'yup';

/**
 * The bike, defined once: its fields, their types and their order in responses. The TypeScript
 * types, the request-body checks, the OpenAPI schemas (src/http/json-schema.ts) and the table
 * columns (src/bikes/columns.ts) all come from these schemas.
 *
 * Types are strict: "5" is not a number and "true" is not a boolean. Every string must be one
 * PostgreSQL can store as given (no U+0000, no lone UTF-16 surrogate), and every number finite
 * (JSON such as 1e999 parses to Infinity, which could not be read back as sent).
 */

/** Strings PostgreSQL can store; written to mean the same with and without the regex `u` flag. */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what it excludes
const STORABLE = /^(?:[^\u0000\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/;

// yup's default type-error message prints the value with JSON.stringify, which overflows the
// stack on a deeply nested body ([[[...]]]): every type check uses this fixed message instead.
const WRONG_TYPE = '${path} has the wrong type';

const text = () =>
  yup
    .string()
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    .matches(STORABLE, '${path} contains U+0000 or a lone surrogate');

const finiteNumber = () =>
  yup
    .number()
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    .test('finite', '${path} must be a finite number', (value) => value === undefined || Number.isFinite(value));

const object = <Shape extends yup.ObjectShape>(shape: Shape, name?: string) =>
  yup
    .object(shape)
    .typeError(WRONG_TYPE)
    .strict()
    .defined()
    .meta(name ? { name } : {});

const money = object({ amount: finiteNumber(), currencyCode: text() }, 'Money');

/** The eight fields a client sets, in the order responses list them. */
const clientFields = {
  title: text(),
  productType: text(),
  createdAt: text(),
  description: text(),
  vendor: text(),
  availableForSale: yup.boolean().typeError(WRONG_TYPE).strict().defined(),
  totalInventory: finiteNumber(),
  priceRange: object({ minPrice: money, maxPrice: money }, 'PriceRange'),
};

/** POST /bikes/: the eight fields. */
export const bikeFields = object(clientFields);

/** A bike as stored and returned: the server's id and handle, then the client's fields. */
export const bike = object({ id: text().uuid(), handle: text(), ...clientFields });

/** PUT /bikes/<id>: the eight fields, plus a truthy id and handle (the specification's words). */
export const replacement = object({ id: text().min(1), handle: text().min(1), ...clientFields });

/** PATCH /bikes/<id>: any subset of the fields, and the handle; each present one valid as on create. */
export const patch = object({ handle: text(), ...clientFields }).partial();

export type BikeFields = yup.InferType<typeof bikeFields>;
export type Bike = yup.InferType<typeof bike>;
export type BikePatch = yup.InferType<typeof patch>;

/**
 * The handle is the title with every space (U+0020) turned into '-', then lowercased.
 * Nothing is removed, collapsed or transliterated: "Fat  Bike" -> "fat--bike".
 */
export function deriveHandle(title: string): string {
  return title.replaceAll(' ', '-').toLowerCase();
}

/**
 * `body` checked against `schema`, keeping only the fields the schema names (unknown ones are
 * neither stored nor returned); undefined when it does not pass.
 */
export function validate<T>(schema: yup.Schema<T>, body: unknown): T | undefined {
  try {
    schema.validateSync(body, { strict: true, abortEarly: true });
  } catch (err) {
    if (err instanceof yup.ValidationError) return undefined;
    throw err;
  }
  return pick(describe(schema), body) as T;
}

type Description = yup.SchemaDescription & { fields?: Record<string, Description> };

const descriptions = new WeakMap<yup.Schema, Description>();

/** yup's description of a schema (its fields, tests and meta), made once. */
export function describe(schema: yup.Schema): Description {
  let description = descriptions.get(schema);
  if (!description) descriptions.set(schema, (description = schema.describe() as Description));
  return description;
}

function pick(description: Description, value: unknown): unknown {
  if (!description.fields) return value;
  const source = value as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(description.fields)) {
    if (Object.hasOwn(source, key) && source[key] !== undefined) picked[key] = pick(field, source[key]);
  }
  return picked;
}

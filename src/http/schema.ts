import * as yup from 'yup';

/**
 * What the service does with a yup schema: check a request's input against it, describe it (the
 * OpenAPI document, json-schema.ts), take its example; and the pieces route inputs are made of.
 */

/**
 * yup's default type-error message prints the value with JSON.stringify, which overflows the
 * stack on a deeply nested body ([[[...]]]): every type check uses this fixed message instead.
 */
export const WRONG_TYPE = '${path} has the wrong type';

/** A route's input: its request body, query parameters and headers, each checked by its own schema. */
export const inputOf = <Shape extends yup.ObjectShape>(shape: Shape) =>
  yup.object(shape).typeError(WRONG_TYPE).strict();

/** The input of a route that reads none. */
export const NO_INPUT = inputOf({});

/** A page size: 1 to the most a route gives at once. */
export const pageSize = (max: number) =>
  yup.number().typeError(WRONG_TYPE).strict().integer('${path} is not a whole number').min(1).max(max);

/** A cursor the service gave, as a client sends it back. */
export const cursor = () => yup.string().typeError(WRONG_TYPE).strict().min(1);

/**
 * What checking a value against a schema gives: the value, or the dotted path (yup's, made of the
 * schema's own keys) of the first field that fails, in the schema's order; '' for the value as a whole.
 */
export type Checked<T> = { valid: true; value: T } | { valid: false; path: string };

/**
 * `value` checked against `schema`, keeping only the fields the schema names (unknown ones are
 * neither checked, stored nor returned).
 */
export function check<T>(schema: yup.Schema<T>, value: unknown): Checked<T> {
  const description = describe(schema);
  // An object of no fields takes any object as it is: nothing to validate (a route without input).
  if (description.fields && Object.keys(description.fields).length === 0) {
    return { valid: true, value: pick(description, value) as T };
  }
  try {
    // Every failure, not the first one met: yup meets them in no fixed order, and lists them in the schema's.
    schema.validateSync(value, { strict: true, abortEarly: false });
  } catch (err) {
    if (err instanceof yup.ValidationError) return { valid: false, path: (err.inner[0] ?? err).path ?? '' };
    throw err;
  }
  return { valid: true, value: pick(description, value) as T };
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
  // A null, where the schema lets a field be null, is a value as given.
  if (!description.fields || value === null) return value;
  const source = value as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(description.fields)) {
    if (Object.hasOwn(source, key) && source[key] !== undefined) picked[key] = pick(field, source[key]);
  }
  return picked;
}

/** An example of a schema's value, made of the examples its fields carry. */
export function exampleOf<T>(schema: yup.Schema<T>): T {
  const example = (description: Description): unknown =>
    description.fields
      ? Object.fromEntries(Object.entries(description.fields).map(([key, field]) => [key, example(field)]))
      : (description.meta as { example?: unknown } | undefined)?.example;
  return example(describe(schema)) as T;
}

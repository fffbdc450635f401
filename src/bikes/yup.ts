import * as yup from 'yup';

/** What the service does with a yup schema: check a body against it, describe it, take its example. */

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

/** An example of a schema's value, made of the examples its fields carry. */
export function exampleOf<T>(schema: yup.Schema<T>): T {
  const example = (description: Description): unknown =>
    description.fields
      ? Object.fromEntries(Object.entries(description.fields).map(([key, field]) => [key, example(field)]))
      : (description.meta as { example?: unknown } | undefined)?.example;
  return example(describe(schema)) as T;
}

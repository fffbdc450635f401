import type * as yup from 'yup';
import { describe } from './schema';

export type JsonSchema = { [keyword: string]: unknown };

type Description = ReturnType<typeof describe>;
type Params = Record<string, unknown> | undefined;

/**
 * What each yup test says in JSON Schema, by type. A test missing here makes the conversion
 * throw, so the document cannot silently drift from what the handlers check.
 */
const TESTS: Record<string, Record<string, (params: Params) => JsonSchema>> = {
  string: {
    matches: (params) => ({ pattern: (params?.regex as RegExp).source }),
    min: (params) => ({ minLength: params?.min }),
    max: (params) => ({ maxLength: params?.max }),
    uuid: () => ({ format: 'uuid' }),
  },
  // A JSON number is always finite (1e999 parses to Infinity, which the service refuses).
  number: {
    finite: () => ({}),
    integer: () => ({ type: 'integer' }),
    min: (params) => ({ minimum: params?.min }),
    max: (params) => ({ maximum: params?.max }),
  },
  boolean: {},
  object: {},
  array: {
    min: (params) => ({ minItems: params?.min }),
    max: (params) => ({ maxItems: params?.max }),
  },
};

/**
 * The JSON Schema (2020-12, as OpenAPI 3.1 uses) of a yup schema. With `components`, a nested
 * object named with `.meta({ name })` becomes a $ref to a schema of `components`, which this adds.
 */
export function toJsonSchema(schema: yup.Schema, components?: Record<string, JsonSchema>): JsonSchema {
  return fromDescription(describe(schema), components);
}

/** The same, from yup's description of the schema (a field of an object schema's description). */
export function fromDescription(description: Description, components?: Record<string, JsonSchema>): JsonSchema {
  return convert(description, components, true);
}

function convert(description: Description, components?: Record<string, JsonSchema>, top = false): JsonSchema {
  const name = (description.meta as { name?: string } | undefined)?.name;
  if (name && !top && components) {
    components[name] ??= convert({ ...description, nullable: false }, components, true);
    const ref = { $ref: `#/components/schemas/${name}` };
    return description.nullable ? { anyOf: [ref, { type: 'null' }] } : ref;
  }
  const tests = TESTS[description.type];
  if (!tests) throw new Error(`OpenAPI: no translation for this ${description.type} schema`);
  const meaning = (description.meta as { description?: string } | undefined)?.description;
  let schema: JsonSchema = {
    // A field that may be null says so: null is one of its values.
    type: description.nullable ? [description.type, 'null'] : description.type,
    ...(meaning && { description: meaning }),
    ...(description.oneOf.length > 0 && { enum: description.oneOf }),
  };
  const items = (description as { innerType?: Description }).innerType;
  if (items) schema.items = convert(items, components);
  if (description.fields) {
    const fields = Object.entries(description.fields);
    schema.properties = Object.fromEntries(fields.map(([key, field]) => [key, convert(field, components)]));
    const required = fields.filter(([, field]) => !field.optional).map(([key]) => key);
    if (required.length > 0) schema.required = required;
  }
  for (const test of description.tests) {
    const translate = test.name ? tests[test.name] : undefined;
    if (!translate) throw new Error(`OpenAPI: no translation for the yup test ${test.name} on a ${description.type}`);
    schema = { ...schema, ...translate(test.params) };
  }
  return schema;
}

/**
 * A small validator for the part of JSON Schema the OpenAPI document uses ($ref into the
 * document, type, properties, required, additionalProperties: false, items, minLength,
 * format: uuid). A keyword it does not know fails loudly, so the document cannot grow a rule
 * these tests silently skip.
 */

type Schema = Record<string, unknown>;

const KNOWN = new Set([
  '$ref',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minLength',
  'format',
  'description',
  'default',
]);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function resolve(document: unknown, ref: string): Schema {
  if (!ref.startsWith('#/')) throw new Error(`unsupported $ref ${ref}`);
  let node: unknown = document;
  for (const part of ref.slice(2).split('/')) node = (node as Record<string, unknown>)[part];
  if (!node || typeof node !== 'object') throw new Error(`$ref ${ref} points at nothing`);
  return node as Schema;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** The ways `value` breaks `schema`, as "path: problem" lines; empty when it conforms. */
export function schemaErrors(document: unknown, schema: Schema, value: unknown, at = '$'): string[] {
  for (const keyword of Object.keys(schema)) {
    if (!KNOWN.has(keyword)) throw new Error(`the test validator does not know the keyword ${keyword} (at ${at})`);
  }
  if (typeof schema.$ref === 'string') return schemaErrors(document, resolve(document, schema.$ref), value, at);

  const errors: string[] = [];
  const type = schema.type as string | undefined;
  if (type) {
    const actual = typeOf(value);
    const matches = type === 'integer' ? Number.isInteger(value) : actual === type;
    if (!matches) return [`${at}: expected ${type}, got ${actual}`];
  }
  if (typeof value === 'string') {
    if (typeof schema.minLength === 'number' && value.length < schema.minLength)
      errors.push(`${at}: shorter than ${schema.minLength}`);
    if (schema.format === 'uuid' && !UUID.test(value)) errors.push(`${at}: not a UUID`);
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => errors.push(...schemaErrors(document, schema.items as Schema, item, `${at}[${i}]`)));
  }
  if (typeOf(value) === 'object') {
    const object = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const key of (schema.required ?? []) as string[]) {
      if (!Object.hasOwn(object, key)) errors.push(`${at}: missing ${key}`);
    }
    for (const [key, item] of Object.entries(object)) {
      if (Object.hasOwn(properties, key)) errors.push(...schemaErrors(document, properties[key], item, `${at}.${key}`));
      else if (schema.additionalProperties === false) errors.push(`${at}: unexpected field ${key}`);
    }
  }
  return errors;
}

import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type Schema = Record<string, unknown>;

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const documents = new WeakMap<object, string>();
let added = 0;
/** Each schema compiled once: the fuzz tests check thousands of values against a few schemas. */
const compiled = new Map<string, ValidateFunction>();

/**
 * The ways `value` breaks `schema` (a schema of the OpenAPI `document`, whose `#/` references
 * point into that document), as "path: problem" lines; empty when it conforms.
 */
export function schemaErrors(document: object, schema: Schema, value: unknown): string[] {
  let id = documents.get(document);
  if (!id) {
    id = `openapi-${++added}`;
    ajv.addSchema(document, id);
    documents.set(document, id);
  }
  const anchored = JSON.stringify(schema).replaceAll('"$ref":"#/', `"$ref":"${id}#/`);
  let validate = compiled.get(anchored);
  if (!validate) compiled.set(anchored, (validate = ajv.compile(JSON.parse(anchored) as Schema)));
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `$${error.instancePath}: ${error.message}`);
}

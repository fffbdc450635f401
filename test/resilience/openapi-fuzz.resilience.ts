import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { API_ROUTES } from '../../src/api';
import { schemaErrors } from '../support/json-schema';
import { startTestService, type TestService } from '../support/service';

/**
 * Schema-driven fuzzing from the service's own /openapi.json: for every operation, requests
 * built from the documented parameters and body schemas, valid ones and invalid ones (a
 * required field missing, a wrong type, U+0000 in a string, a non-UUID id, no token). Every
 * answer must be documented for that operation, never a 5xx, and a 200 must match the
 * documented schema; a valid request must be accepted, an invalid one refused with a 4xx.
 */

const RUNS = Number(process.env.OPENAPI_FUZZ_RUNS ?? 100);

type Schema = Record<string, unknown>;
interface Operation {
  operationId: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Schema[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, Schema>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
}

/** A request an operation is sent, and whether it is one the documented schemas allow. */
interface Probe {
  /** Path parameters; those not given name a bike made for the request, so that a valid one exists. */
  params: Record<string, string>;
  query: string;
  body: unknown;
  token: 'valid' | 'none' | 'forged';
  valid: boolean;
  why: string;
}

function resolve(document: Document, schema: Schema): Schema {
  if (typeof schema.$ref !== 'string') return schema;
  let node: unknown = document;
  for (const part of schema.$ref.slice(2).split('/')) node = (node as Record<string, unknown>)[part];
  return resolve(document, node as Schema);
}

/** Values a schema accepts: objects with their required fields (and some optional ones), strings matching their pattern. */
function valid(document: Document, raw: Schema): fc.Arbitrary<unknown> {
  const schema = resolve(document, raw);
  switch (schema.type) {
    case 'object': {
      const properties = Object.fromEntries(
        Object.entries((schema.properties ?? {}) as Record<string, Schema>).map(([key, s]) => [
          key,
          valid(document, s),
        ]),
      );
      return fc.record(properties, { requiredKeys: (schema.required ?? []) as string[] });
    }
    case 'string': {
      if (schema.format === 'uuid') return fc.uuid();
      if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as string[]));
      const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : undefined;
      // A pattern that refuses plain text (a list of names): strings made from it.
      if (pattern && !pattern.test('a')) return fc.stringMatching(pattern);
      return fc
        .string({ unit: 'binary', minLength: (schema.minLength as number | undefined) ?? 0, maxLength: 40 })
        .filter((text) => !pattern || pattern.test(text));
    }
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'integer':
      return fc.integer({ min: schema.minimum as number, max: schema.maximum as number });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(valid(document, schema.items as Schema), {
        minLength: (schema.minItems as number | undefined) ?? 0,
        maxLength: Math.min((schema.maxItems as number | undefined) ?? 3, 3),
      });
    default:
      throw new Error(`no generator for the schema ${JSON.stringify(schema)}`);
  }
}

/** A value the schema refuses, and what is wrong with it. */
function invalid(document: Document, raw: Schema): fc.Arbitrary<{ value: unknown; why: string }> {
  const schema = resolve(document, raw);
  const wrongType = fc
    .constantFrom<unknown>(5, 'text', true, null, [], {})
    .filter(
      (value) =>
        typeof value !== schema.type &&
        !(schema.type === 'object' && isObject(value)) &&
        !(schema.type === 'integer' && Number.isInteger(value)),
    )
    .map((value) => ({ value, why: `a ${JSON.stringify(value)} for a ${String(schema.type)}` }));
  if (schema.type === 'string' && schema.pattern) return fc.oneof(wrongType, withNul);
  if (schema.type === 'integer') {
    const outside = fc
      .constantFrom((schema.minimum as number) - 1, (schema.maximum as number) + 1, 1.5)
      .map((value) => ({
        value,
        why: `${value} for an integer of ${String(schema.minimum)} to ${String(schema.maximum)}`,
      }));
    return fc.oneof(wrongType, outside);
  }
  if (schema.type !== 'object') return wrongType;
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = (schema.required ?? []) as string[];
  const fields = Object.keys(properties);
  const broken = fc.constantFrom(...fields).chain((field) =>
    fc.tuple(valid(document, schema), invalid(document, properties[field])).map(([value, bad]) => ({
      value: { ...(value as Schema), [field]: bad.value },
      why: `${field}: ${bad.why}`,
    })),
  );
  const missing =
    required.length === 0
      ? []
      : [
          fc.constantFrom(...required).chain((field) =>
            valid(document, schema).map((value) => {
              const { [field]: _dropped, ...rest } = value as Schema;
              return { value: rest, why: `no ${field}` };
            }),
          ),
        ];
  return fc.oneof(wrongType, broken, ...missing);
}

/** Every string pattern of the document excludes U+0000 (PostgreSQL cannot store it). */
const withNul = fc.string({ maxLength: 10 }).map((text) => ({ value: `${text}\u0000`, why: 'U+0000 in a string' }));

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * "." and ".." are dot-segments, which fetch's URL parser removes before the request is sent
 * (RFC 3986, 5.2.4), percent-encoded as %2E too: as a path value they would ask another path.
 */
const isDotSegment = (value: string) => value === '.' || value === '..';

/**
 * Cursors are the service's own, taken from an earlier answer (docs/reference/browse-and-sync.md#cursors): no
 * schema can make a valid one, so a valid probe leaves them out and an invalid one forges one.
 */
const CURSORS = new Set(['cursor', 'since']);

/** A query number as the service reads one (docs/reference/http.md#query-parameters): decimal, no exponent. */
const queryNumber = fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((n) => n.toFixed(2));

/** A price range is in a currency (docs/reference/browse-and-sync.md#paged-listing): a bound without one is refused. */
const priceInCurrency = (query: Record<string, unknown>) =>
  query.currency !== undefined || (query.minPrice === undefined && query.maxPrice === undefined);

/** Relevance ranks a shopper's words: it needs a `q` of some text (docs/reference/browse-and-sync.md#a-shoppers-search). */
const relevanceWithWords = (query: Record<string, unknown>) =>
  query.sort !== 'relevance' || (typeof query.q === 'string' && query.q.trim() !== '');

describe('requests generated from /openapi.json', () => {
  let svc: TestService;
  let document: Document;
  let token: string;

  beforeAll(async () => {
    svc = await startTestService();
    document = (await (await fetch(`${svc.baseUrl}/openapi.json`)).json()) as Document;
    token = await svc.token();
  });
  afterAll(() => svc.stop());

  /** A bike of its own for a request that needs one to exist (so a valid request can succeed). */
  async function freshBike(): Promise<{ id: string; handle: string }> {
    const res = await fetch(`${svc.baseUrl}/bikes/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        title: `Fuzz Target ${randomUUID()}`,
        productType: 'Hybrid',
        createdAt: 'now',
        description: 'd',
        vendor: 'v',
        availableForSale: true,
        totalInventory: 1,
        priceRange: { minPrice: { amount: 1, currencyCode: 'USD' }, maxPrice: { amount: 2, currencyCode: 'USD' } },
      }),
    });
    return (await res.json()) as { id: string; handle: string };
  }

  function probes(op: Operation): fc.Arbitrary<Probe> {
    const parameters = (op.parameters ?? []).map((p) => resolve(document, p));
    const pathParams = parameters.filter((p) => p.in === 'path');
    const queryParams = parameters.filter((p) => p.in === 'query');
    const bodySchema = op.requestBody?.content['application/json']?.schema;
    const secured = (op.security ?? []).length > 0;

    const generated = queryParams.filter((p) => !CURSORS.has(p.name as string));
    const validQuery = fc
      .record(
        Object.fromEntries(
          generated.map((p) => {
            const schema = resolve(document, p.schema as Schema);
            return [p.name as string, schema.type === 'number' ? queryNumber : valid(document, schema)];
          }),
        ),
        { requiredKeys: generated.filter((p) => p.required).map((p) => p.name as string) },
      )
      .filter(priceInCurrency)
      .filter(relevanceWithWords);
    const validProbe = fc
      .record({
        query: validQuery,
        body: bodySchema ? valid(document, bodySchema) : fc.constant(undefined),
      })
      .map(({ query, body }): Probe => ({
        params: {},
        // A list: its parameter repeated, a value each (style form, explode).
        query: new URLSearchParams(
          Object.entries(query).flatMap(([name, value]): [string, string][] =>
            Array.isArray(value) ? value.map((one) => [name, String(one)]) : [[name, String(value)]],
          ),
        ).toString(),
        body,
        token: 'valid',
        valid: true,
        why: 'valid',
      }));
    const invalidProbes: fc.Arbitrary<Probe>[] = [];
    if (bodySchema) {
      invalidProbes.push(invalid(document, bodySchema).map(({ value, why }) => ({ ...base(), body: value, why })));
    }
    for (const p of [...pathParams, ...queryParams]) {
      const schema = resolve(document, p.schema as Schema);
      if (schema.format === 'uuid') {
        invalidProbes.push(
          // Not empty: /bikes/ with no id is another route.
          fc
            .string({ minLength: 1, maxLength: 20 })
            .map((text) => ({ ...base(), why: `id ${JSON.stringify(text)}`, params: { [p.name as string]: text } })),
        );
      }
      if (p.in === 'query' && CURSORS.has(p.name as string)) {
        invalidProbes.push(
          fc.string({ minLength: 1, maxLength: 60 }).map((text) => ({
            ...base(),
            query: `${p.name as string}=${encodeURIComponent(text)}`,
            why: `a forged ${p.name as string}`,
          })),
        );
      }
      if (p.in === 'query' && schema.type === 'integer') {
        invalidProbes.push(
          invalid(document, schema).map(({ value, why }) => ({
            ...base(),
            query: `${p.name as string}=${encodeURIComponent(String(value))}`,
            why: `${p.name as string}: ${why}`,
          })),
        );
      }
      const pattern = schema.type === 'array' ? (schema.items as Schema).pattern : schema.pattern;
      if (p.in === 'query' && pattern) {
        // A query string carries only strings: the pattern is what can be broken.
        invalidProbes.push(
          withNul.map(({ value, why }) => ({
            ...base(),
            query: `${p.name as string}=${encodeURIComponent(String(value))}`,
            why,
          })),
        );
      }
    }
    if (secured) {
      invalidProbes.push(
        fc.constantFrom<Probe['token']>('none', 'forged').map((t) => ({ ...base(), token: t, why: `token ${t}` })),
      );
    }
    function base(): Probe {
      return { params: {}, query: '', body: bodySchema ? {} : undefined, token: 'valid', valid: false, why: '' };
    }
    return invalidProbes.length === 0 ? validProbe : fc.oneof(validProbe, ...invalidProbes);
  }

  it('every operation answers as documented: never a 5xx, valid requests accepted, invalid ones refused', async () => {
    // The API's operations; the operator's (tagged `operations`: health, metrics, the document
    // and its page) take no input to generate, and test/ops/ asks them.
    const operations = Object.entries(document.paths)
      .flatMap(([path, item]) =>
        Object.entries(item).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
      )
      .filter(({ op }) => !(op.tags ?? []).includes('operations'));
    // Every route the service declares, and only those.
    const declared = Object.values(API_ROUTES).map(
      (route) => `${route.method.toUpperCase()} ${route.path.replace(/:(\w+)/g, '{$1}')}`,
    );
    expect(operations.map(({ path, method }) => `${method} ${path}`).sort()).toEqual(declared.sort());

    for (const { path, method, op } of operations) {
      await fc.assert(
        fc.asyncProperty(probes(op), async (probe) => {
          const params: Record<string, string> = path.includes('{')
            ? { ...(await freshBike()), ...probe.params }
            : probe.params;
          fc.pre(!Object.values(params).some(isDotSegment));
          const url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]));
          const headers: Record<string, string> = {};
          if (probe.token === 'valid') headers.authorization = `Bearer ${token}`;
          if (probe.token === 'forged') headers.authorization = `Bearer ${token.slice(0, -2)}xx`;
          if (probe.body !== undefined) headers['content-type'] = 'application/json';
          const res = await fetch(`${svc.baseUrl}${url}${probe.query ? `?${probe.query}` : ''}`, {
            method,
            headers,
            body: probe.body === undefined ? undefined : JSON.stringify(probe.body),
          });
          const text = await res.text();
          const where = `${method} ${url} (${probe.why})`;
          expect({ where, documented: Object.keys(op.responses) }).toEqual({
            where,
            documented: expect.arrayContaining([String(res.status)]),
          });
          if (probe.valid) expect({ where, status: res.status }).toEqual({ where, status: 200 });
          else expect({ where, status: res.status >= 400 && res.status < 500 }).toEqual({ where, status: true });
          if (res.status === 200) {
            expect(res.headers.get('content-type')).toMatch(/^application\/json/);
            const schema = (op.responses['200'].content as Record<string, { schema: Schema }>)['application/json']
              .schema;
            expect({ where, errors: schemaErrors(document, schema, JSON.parse(text)) }).toEqual({ where, errors: [] });
          } else {
            expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
          }
        }),
        { numRuns: RUNS },
      );
    }
  });
});

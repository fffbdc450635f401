import { randomUUID } from 'node:crypto';
import type * as yup from 'yup';
import { type Bike, type BikeFields, bikeFields } from '../../src/bikes/bike';
import { describe as describeSchema, exampleOf } from '../../src/http/schema';

/** A schema's keys at every level, in its order: each object's with their own, each leaf's with its type. */
export interface Shape {
  [key: string]: Shape | string;
}

/** The shape of a schema of the definition (src/bikes/bike.ts): a field added there is in it at once. */
export function shapeOf(schema: yup.Schema): Shape {
  const shape = (fields: Record<string, ReturnType<typeof describeSchema>>): Shape =>
    Object.fromEntries(
      Object.entries(fields).map(([key, field]) => [key, field.fields ? shape(field.fields) : field.type]),
    );
  return shape(describeSchema(schema).fields ?? {});
}

/** The dotted paths of a schema's fields that may be null (the definition's optional fields: `.nullable()`). */
export function nullablePaths(schema: yup.Schema): string[] {
  const paths = (fields: Record<string, ReturnType<typeof describeSchema>>, prefix: string): string[] =>
    Object.entries(fields).flatMap(([key, field]) => [
      ...(field.nullable ? [`${prefix}${key}`] : []),
      ...(field.fields ? paths(field.fields, `${prefix}${key}.`) : []),
    ]);
  return paths(describeSchema(schema).fields ?? {}, '');
}

/** The fields a client sets, in the order responses list them. */
export const CLIENT_FIELDS = Object.keys(shapeOf(bikeFields)) as (keyof BikeFields)[];

/** The optional fields of a bike body, by path: each may be null, or left out of a create (then null). */
export const OPTIONAL_FIELD_PATHS = nullablePaths(bikeFields);

/** `value` with the field at a dotted path set to `to` (a copy). */
function withPath<T>(value: T, path: string, to: unknown): T {
  const copy = structuredClone(value) as Record<string, unknown>;
  const keys = path.split('.');
  let target = copy;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>;
  target[keys[keys.length - 1]] = to;
  return copy as T;
}

let made = 0;

/**
 * A valid bike body whose title is unique to this call; a field it does not name has its
 * definition's example, and every optional field is null in every other body (null is a value,
 * and each test's bikes hold some).
 */
export function newBike(overrides: Partial<BikeFields> = {}): BikeFields {
  const tag = randomUUID().slice(0, 8);
  const nulls = made++ % 2 === 1;
  const fields = OPTIONAL_FIELD_PATHS.reduce(
    (body, path) => (nulls ? withPath(body, path, null) : body),
    exampleOf(bikeFields),
  );
  return {
    ...fields,
    title: `Hybrid Bicycle ${tag}`,
    productType: 'Hybrid',
    createdAt: '2024-03-01T10:00:00Z',
    description: 'A comfortable hybrid for the city',
    vendor: 'Sentra',
    availableForSale: true,
    totalInventory: 12,
    priceRange: {
      minPrice: { amount: 499.99, currencyCode: 'USD' },
      maxPrice: { amount: 649.5, currencyCode: 'USD' },
    },
    ...overrides,
  };
}

export interface Client {
  request(
    method: string,
    path: string,
    options?: { body?: unknown; token?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  create(fields?: BikeFields): Promise<Bike>;
}

/** A small HTTP client for the tests: JSON bodies, optional bearer token. */
export function client(baseUrl: string, defaultToken?: string): Client {
  const request: Client['request'] = (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token ?? defaultToken;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    return fetch(`${baseUrl}${path}`, { method, headers, body });
  };
  return {
    request,
    async create(fields = newBike()) {
      const res = await request('POST', '/bikes/', { body: fields });
      if (res.status !== 200) throw new Error(`create answered ${res.status}`);
      return (await res.json()) as Bike;
    },
  };
}

/** A fresh token from POST /api/user. */
export async function issueToken(baseUrl: string, username = 'tester'): Promise<string> {
  const res = await fetch(`${baseUrl}/api/user`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username }),
  });
  if (res.status !== 200) throw new Error(`token endpoint answered ${res.status}`);
  return ((await res.json()) as { token: string }).token;
}

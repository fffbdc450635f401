import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { type Bike, bike as bikeSchema, type BikeFields, bikeFields } from '../../src/bikes/bike';
import { issueToken, newBike, nullablePaths, OPTIONAL_FIELD_PATHS, type Shape, shapeOf } from '../support/bikes';
import { createTestDatabase } from '../support/databases';
import { spawnService } from '../support/process';
import { startTestService } from '../support/service';

/**
 * Shared by the black-box API tests: a service per test file, a small HTTP client that can send
 * exactly the bytes and headers a test wants, and readers for what the API holds afterwards.
 */

export { newBike };
export type { Bike, BikeFields };

/** A bike's keys at every level, each leaf's with its type (the definition's, src/bikes/bike.ts). */
const BIKE_SHAPE = shapeOf(bikeSchema);

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Ids that are not UUIDs; every route must answer them 404 (never 500). */
export const NOT_UUIDS = [
  'not-a-uuid',
  '123',
  '0',
  'zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz',
  '6f1c0e4e-6b1a-4d54-9b2a-2f8f6c1c6a7', // one digit short
  '6f1c0e4e-6b1a-4d54-9b2a-2f8f6c1c6a7ff', // one digit long
  '6f1c0e4e6b1a4d549b2a2f8f6c1c6a7f0000', // no dashes
  "1'%20OR%20'1'%3D'1",
  '%00',
  'null',
];

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json<T = unknown>(): T;
}

export interface RequestOptions {
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as application/x-www-form-urlencoded. */
  form?: Record<string, string> | string;
  /** Sent as is, with `contentType` (or none). */
  raw?: string | Buffer;
  contentType?: string;
  /** null sends no Authorization header; a string is sent as `Bearer <token>`; default: the file's token. */
  token?: string | null;
  /** The whole Authorization header value, as given. */
  authorization?: string;
  headers?: Record<string, string>;
}

export interface Api {
  readonly baseUrl: string;
  readonly token: string;
  readonly jwtSecret: string;
  request(method: string, path: string, options?: RequestOptions): Promise<Reply>;
  /** Creates a bike (asserting 200) and returns it. */
  create(fields?: BikeFields | Record<string, unknown>): Promise<Bike>;
  /** The bike at `id`, or null when GET answers 404. */
  find(id: string): Promise<Bike | null>;
  all(): Promise<Bike[]>;
  search(query: string): Promise<Bike[]>;
  byHandle(handle: string): Promise<Reply>;
}

async function toReply(res: Response): Promise<Reply> {
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: <T>() => JSON.parse(text) as T };
}

interface Target {
  baseUrl: string;
  jwtSecret: string;
  stop(): Promise<void>;
}

/**
 * The service under test, over its own fresh database: in this process by default, or, with
 * API_TEST_TARGET=process, the built `node dist/server.js` (what `npm start` runs) as a child
 * process, so the same suite also checks the process wrapper (build dist/ first).
 */
async function startTarget(): Promise<Target> {
  if (process.env.API_TEST_TARGET !== 'process') return startTestService();
  const jwtSecret = randomBytes(32).toString('base64url');
  const proc = await spawnService({
    DATABASE_URL: await createTestDatabase(),
    JWT_SECRET: jwtSecret,
  });
  return {
    baseUrl: proc.baseUrl,
    jwtSecret,
    async stop() {
      proc.child.kill('SIGTERM');
      await proc.exited;
    },
  };
}

/**
 * Starts one service over its own fresh database for the enclosing describe block (or file) and
 * stops it afterwards. The returned object is usable inside tests and hooks.
 */
export function useApi(): Api {
  let svc: Target | undefined;
  let token = '';
  beforeAll(async () => {
    svc = await startTarget();
    token = await issueToken(svc.baseUrl);
  });
  afterAll(async () => {
    await svc?.stop();
  });
  const started = (): Target => {
    if (!svc) throw new Error('the service is not started');
    return svc;
  };

  const api: Api = {
    get baseUrl() {
      return started().baseUrl;
    },
    get token() {
      return token;
    },
    get jwtSecret() {
      return started().jwtSecret;
    },
    async request(method, path, options = {}) {
      const headers: Record<string, string> = {};
      let body: string | Buffer | undefined;
      if (options.json !== undefined) {
        body = JSON.stringify(options.json);
        headers['content-type'] = 'application/json';
      } else if (options.form !== undefined) {
        body = typeof options.form === 'string' ? options.form : new URLSearchParams(options.form).toString();
        headers['content-type'] = 'application/x-www-form-urlencoded';
      } else if (options.raw !== undefined) {
        body = options.raw;
      }
      if (options.contentType !== undefined) headers['content-type'] = options.contentType;
      const bearer = options.token === undefined ? token : options.token;
      if (options.authorization !== undefined) headers.authorization = options.authorization;
      else if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
      Object.assign(headers, options.headers);
      const res = await fetch(`${started().baseUrl}${path}`, { method, headers, body });
      return toReply(res);
    },
    async create(fields = newBike()) {
      const res = await api.request('POST', '/bikes/', { json: fields });
      if (res.status !== 200) throw new Error(`create answered ${res.status}`);
      return res.json<Bike>();
    },
    async find(id) {
      const res = await api.request('GET', `/bikes/${id}`, { token: null });
      if (res.status === 404) return null;
      if (res.status !== 200) throw new Error(`GET /bikes/${id} answered ${res.status}`);
      return res.json<Bike>();
    },
    async all() {
      const res = await api.request('GET', '/bikes/all', { token: null });
      if (res.status !== 200) throw new Error(`GET /bikes/all answered ${res.status}`);
      return res.json<Bike[]>();
    },
    async search(query) {
      const res = await api.request('GET', `/bikes/search/by-title?query=${encodeURIComponent(query)}`, {
        token: null,
      });
      if (res.status !== 200) throw new Error(`search answered ${res.status}`);
      return res.json<Bike[]>();
    },
    byHandle(handle) {
      return api.request('GET', `/bikes/by-handle/${encodeURIComponent(handle)}`, { token: null });
    },
  };
  return api;
}

/** The bike a create with `fields` should answer: the fields plus the server's id and handle, and nothing else. */
export function expectedBike(fields: BikeFields, id: string, handle: string): Bike {
  const picked = (value: unknown, shape: Shape): unknown =>
    Object.fromEntries(
      Object.entries(shape).map(([key, field]) => {
        const given = (value as Record<string, unknown>)[key];
        // An optional field left out is stored as null.
        return [key, typeof field === 'string' ? (given ?? null) : picked(given, field)];
      }),
    );
  return picked({ id, handle, ...fields }, BIKE_SHAPE) as Bike;
}

/** The fields of a bike that may be null. */
const NULLABLE = new Set(nullablePaths(bikeSchema));

/**
 * The shape of a value as shapeOf gives a schema's: objects' keys, and each leaf's JSON type; a
 * null where the bike's field may be null, as the field's type.
 */
function shapeOfValue(value: unknown, path = '', shape: Shape | string = BIKE_SHAPE): Shape | string {
  if (value === null && NULLABLE.has(path)) return shape;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return value === null ? 'null' : typeof value;
  return Object.fromEntries(
    Object.entries(value).map(([key, field]) => [
      key,
      shapeOfValue(field, path ? `${path}.${key}` : key, typeof shape === 'string' ? shape : (shape[key] ?? '')),
    ]),
  );
}

/** Asserts the object has exactly the bike's fields, at every level, each of its type. */
export function expectExactShape(bike: unknown): void {
  expect(shapeOfValue(bike)).toEqual(BIKE_SHAPE);
}

/** Error answers are a status and its plain-text reason phrase, never JSON. */
export function expectPlainError(res: Reply, status: number, phrase: string): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  expect(res.text).toBe(phrase);
}

export function unknownId(): string {
  return randomUUID();
}

/** A body of the given fields with one of them (a dotted path) removed. */
export function without(fields: BikeFields, path: string): Record<string, unknown> {
  const copy = structuredClone(fields) as unknown as Record<string, unknown>;
  const keys = path.split('.');
  let target = copy;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>;
  delete target[keys[keys.length - 1]];
  return copy;
}

/** A body of the given fields with one of them (a dotted path) set to `value`. */
export function withValue(fields: BikeFields, path: string, value: unknown): Record<string, unknown> {
  const copy = structuredClone(fields) as unknown as Record<string, unknown>;
  const keys = path.split('.');
  let target = copy;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>;
  target[keys[keys.length - 1]] = value;
  return copy;
}

/** The dotted path of every field of a body, nested ones included, and its type ('object' for one). */
const CLIENT_FIELD_TYPES = (function paths(shape: Shape, prefix = ''): [string, string][] {
  return Object.entries(shape).flatMap(([key, field]): [string, string][] =>
    typeof field === 'string'
      ? [[`${prefix}${key}`, field]]
      : [[`${prefix}${key}`, 'object'], ...paths(field, `${prefix}${key}.`)],
  );
})(shapeOf(bikeFields));

/** Every client field path a bike body must carry, nested ones included (an optional field may be left out). */
export const CLIENT_FIELD_PATHS = CLIENT_FIELD_TYPES.map(([path]) => path).filter(
  (path) => !OPTIONAL_FIELD_PATHS.includes(path),
);

/** Values of the wrong type for each client field (strict: "5" is not a number, "true" not a boolean). */
export const WRONG_TYPES: Array<[string, unknown]> = [
  ['title', 5],
  ['title', null],
  ['title', true],
  ['title', ['Road Bike']],
  ['title', { text: 'Road Bike' }],
  ['productType', 1],
  ['createdAt', 1709287200000],
  ['createdAt', null],
  ['description', false],
  ['vendor', {}],
  ['availableForSale', 'true'],
  ['availableForSale', 1],
  ['availableForSale', 0],
  ['availableForSale', null],
  ['totalInventory', '5'],
  ['totalInventory', true],
  ['totalInventory', null],
  ['totalInventory', [5]],
  ['priceRange', 'cheap'],
  ['priceRange', null],
  ['priceRange', []],
  ['priceRange.minPrice', 10],
  ['priceRange.maxPrice', null],
  ['priceRange.minPrice.amount', '10'],
  ['priceRange.minPrice.amount', null],
  ['priceRange.maxPrice.amount', '649.50'],
  ['priceRange.minPrice.currencyCode', 840],
  ['priceRange.maxPrice.currencyCode', null],
];

/** Strings PostgreSQL cannot hold, at every string field. */
export const NUL_FIELDS = CLIENT_FIELD_TYPES.filter(([, type]) => type === 'string').map(([path]) => path);

/** Doubles, sent as JSON.stringify writes them: each must read back as the same double (docs/reference/bike.md#numbers). */
export const EXACT_NUMBERS = [
  -1,
  -273.15,
  0.1,
  0.30000000000000004,
  499.99,
  1e308,
  -1e308,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  1.2345678901234567e300,
  123456789012345680000,
  5e-324,
  2.2250738585072014e-308,
  9007199254740991,
  9007199254740994,
  0,
];

export interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The bytes as sent (compressed, if the server compressed them). */
  body: Buffer;
  text: string;
}

/**
 * A request over node:http, for bodies the server may refuse before reading them (401 on a
 * 2 MB body, 413): the answer is taken even if the server stops reading or closes early.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  // A list is sent as that many lines of the field.
  headers: Record<string, string | string[]>,
  body?: string | Buffer,
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const url = new URL(baseUrl);
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers: { connection: 'close', ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text: body.toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    // The server may answer and close before the whole body is sent; the answer is what counts.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    req.end(body);
  });
}

export interface DecodedToken {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
}

export function decodeToken(token: string): DecodedToken {
  const [header, payload] = token.split('.');
  const read = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  return { header: read(header), payload: read(payload) };
}

export function signToken(payload: object, secret: string, options: jwt.SignOptions = {}): string {
  return jwt.sign(payload, secret, { algorithm: 'HS256', ...options });
}

/** A JWT with `alg: none` and no signature. */
export function unsignedToken(payload: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(payload)}.`;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

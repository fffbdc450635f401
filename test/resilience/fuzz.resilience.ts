import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import fc from 'fast-check';
import jwt from 'jsonwebtoken';
import { type Bike, bike as bikeSchema } from '../../src/bikes/bike';
import { CLIENT_FIELDS, client, newBike, nullablePaths, type Shape, shapeOf } from '../support/bikes';
import { startTestService, type TestService } from '../support/service';
import { describeRequest, type FuzzCase, fuzzCases, type World } from './support/fuzz-requests';
import { RawConnection, type RawResponse } from './support/raw-http';
import { expectationFor, NODE_STATUSES } from './support/route-table';

/**
 * Property-based fuzzing of every route over raw sockets. Each generated request must get a
 * whole response (no dropped connection, no hang), never a 5xx, and a status the route table
 * in support/route-table.ts allows. Every write acknowledged with 200 is kept in a model, and
 * the catalog must match that model exactly: during the run (GET by id) and at the end.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 5_000);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The prototypes a polluting body would reach, in the test's realm and in node's own. */
function prototypes(): Array<[string, object]> {
  const nodeObjectPrototype = Object.getPrototypeOf(STATUS_CODES) as object;
  return [
    ['Object.prototype', Object.prototype],
    ['Array.prototype', Array.prototype],
    ['Function.prototype', Function.prototype],
    ['String.prototype', String.prototype],
    ["node's Object.prototype", nodeObjectPrototype],
  ];
}

function snapshot(): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    prototypes().map(([name, proto]) => [
      name,
      Object.fromEntries(
        Reflect.ownKeys(proto).map((key) => [
          String(key),
          Object.getOwnPropertyDescriptor(proto, key)?.value ?? 'accessor',
        ]),
      ),
    ]),
  );
}

/** Each path of the definition's bike that may be null (an optional field). */
const NULLABLE = new Set(nullablePaths(bikeSchema));

/** Whether `value` has exactly the members of `shape`, in its order, each of its type (or null where that may be). */
function fits(value: unknown, shape: Shape, prefix = ''): boolean {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const object = value as Record<string, unknown>;
  return (
    Object.keys(object).join() === Object.keys(shape).join() &&
    Object.entries(shape).every(([key, type]) => {
      const member = object[key];
      if (member === null) return NULLABLE.has(`${prefix}${key}`);
      return typeof type === 'string' ? typeof member === type : fits(member, type, `${prefix}${key}.`);
    })
  );
}

/** A bike as the definition (src/bikes/bike.ts) has it in an answer. */
function isBike(value: unknown): value is Bike {
  return fits(value, shapeOf(bikeSchema));
}

/**
 * The members of `shape` that `sent` has, at every level, as JSON carries them (so -0 reads as 0);
 * `whole`: as a create or a replacement stores them, an optional member left out as null.
 */
function pick(sent: Record<string, unknown>, shape: Shape, whole: boolean, prefix = ''): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const [key, type] of Object.entries(shape)) {
    if (!Object.hasOwn(sent, key)) {
      if (whole && NULLABLE.has(`${prefix}${key}`)) picked[key] = null;
      continue;
    }
    const value = sent[key];
    picked[key] =
      typeof type !== 'string' && value && typeof value === 'object'
        ? pick(value as Record<string, unknown>, type, whole, `${prefix}${key}.`)
        : value;
  }
  return JSON.parse(JSON.stringify(picked)) as Record<string, unknown>;
}

/** The known fields among `keys` (top-level) of a sent body (`whole`: a create's or a replacement's), as stored. */
function pickSent(sent: Record<string, unknown>, keys: readonly string[], whole = false): Record<string, unknown> {
  const shape: Shape = { handle: 'string', ...shapeOf(bikeSchema) };
  return pick(sent, Object.fromEntries(keys.map((key) => [key, shape[key]])), whole);
}

function describeCase(c: FuzzCase): string {
  return `${describeRequest(c.request, c.bodyKind)} (auth ${c.auth})`;
}

describe('every route, under generated hostile requests', () => {
  let svc: TestService;
  let world: World;
  /** What the catalog must hold: every bike as its last 200 acknowledged it. */
  const model = new Map<string, Bike>();
  const deleted = new Set<string>();
  const statusCounts = new Map<number, number>();
  let sent = 0;

  beforeAll(async () => {
    svc = await startTestService();
    const token = await svc.token('fuzzer');
    const api = client(svc.baseUrl, token);
    const bikes: Bike[] = [];
    for (let i = 0; i < 12; i++)
      bikes.push(
        await api.create(newBike({ title: i % 3 === 0 ? `Fat  Bike ${i}` : `Road Bike ${randomUUID().slice(0, 6)}` })),
      );
    for (const bike of bikes) model.set(bike.id, bike);
    world = {
      token,
      foreignToken: jwt.sign({ username: 'mallory' }, 'another-secret-entirely-0123456789', {
        algorithm: 'HS256',
        expiresIn: 1800,
      }),
      ids: bikes.map((b) => b.id),
      freeIds: Array.from({ length: 10 }, () => randomUUID()),
      handles: [...bikes.map((b) => b.handle), 'no-such-handle', ''],
    };
  });
  afterAll(() => svc?.stop());

  function checkAcknowledgedWrite(c: FuzzCase, response: RawResponse, path: string): void {
    const method = c.request.method;
    const segment = path.split('/')[2] ?? '';
    const key = UUID.test(decodeURIComponent(segment)) ? decodeURIComponent(segment).toLowerCase() : undefined;
    const body: unknown = JSON.parse(response.body.toString('utf8'));
    const sentObject =
      c.sentJson && typeof c.sentJson === 'object' && !Array.isArray(c.sentJson)
        ? (c.sentJson as Record<string, unknown>)
        : undefined;

    if (method === 'DELETE') {
      expect(body).toEqual({ id: key });
      model.delete(key!);
      deleted.add(key!);
      return;
    }
    expect(isBike(body)).toBe(true);
    const bike = body as Bike;
    if (method === 'POST') {
      expect(bike.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(model.has(bike.id) || deleted.has(bike.id)).toBe(false);
      expect(bike.handle).toBe(bike.title.replaceAll(' ', '-').toLowerCase());
      if (c.plainJson && sentObject)
        expect(pickSent(bike as never, CLIENT_FIELDS)).toEqual(pickSent(sentObject, CLIENT_FIELDS, true));
    } else {
      expect(bike.id).toBe(key);
      if (c.plainJson && sentObject && method === 'PUT')
        expect(pickSent(bike as never, ['handle', ...CLIENT_FIELDS])).toEqual(
          pickSent(sentObject, ['handle', ...CLIENT_FIELDS], true),
        );
      if (c.plainJson && sentObject && method === 'PATCH') {
        const keys = ['handle', ...CLIENT_FIELDS].filter((k) => Object.hasOwn(sentObject, k));
        expect(pickSent(bike as never, keys)).toEqual(pickSent(sentObject, keys));
      }
    }
    model.set(bike.id, bike);
    deleted.delete(bike.id);
  }

  it(`answers ${RUNS} generated requests on every route without a 5xx, a dropped connection or a status the route does not allow, and keeps every acknowledged write`, async () => {
    const before = snapshot();
    const connection = new RawConnection(svc.service.port);
    let previous = '(nothing)';

    await fc.assert(
      fc.asyncProperty(fuzzCases(world), async (c) => {
        sent++;
        let response: RawResponse;
        try {
          response = await connection.send(c.request);
        } catch (err) {
          throw new Error(`${(err as Error).message}\n  for ${describeCase(c)}\n  after ${previous}`, { cause: err });
        } finally {
          previous = describeCase(c);
        }
        statusCounts.set(response.status, (statusCounts.get(response.status) ?? 0) + 1);
        const where = `\n  ${response.status} for ${describeCase(c)}`;
        if (response.status >= 500) throw new Error(`a 5xx${where}`);

        const fromApp = response.headers['x-request-id'] !== undefined;
        if (!fromApp) {
          if (!NODE_STATUSES.has(response.status))
            throw new Error(`node itself answered a status outside ${[...NODE_STATUSES]}${where}`);
          return;
        }
        const expectation = expectationFor(c.request.method, c.request.target, c.auth);
        if (!expectation.allowed.has(response.status))
          throw new Error(`status not allowed (allowed: ${[...expectation.allowed]})${where}`);
        if (expectation.exact !== undefined && response.status !== expectation.exact)
          throw new Error(`expected exactly ${expectation.exact}${where}`);

        const route = expectation.route?.pattern.source;
        const method = c.request.method;
        const onId = route === '^\\/bikes\\/[^/]+$';
        const segment = expectation.path.split('/')[2] ?? '';
        const id = onId && UUID.test(safeDecode(segment)) ? safeDecode(segment).toLowerCase() : undefined;

        // A valid bike, sent plainly with a good token and no query (every parameter is unknown to
        // a write: 400, docs/reference/http.md#query-parameters), is created or replaced: nothing else.
        if (c.auth === 'valid' && c.plainJson && !c.request.target.includes('?')) {
          if (method === 'POST' && route === '^\\/bikes$' && c.bodyKind === 'valid-create' && response.status !== 200)
            throw new Error(`a valid bike was refused${where}`);
          if (method === 'PUT' && id && c.bodyKind === 'valid-replace' && response.status !== 200)
            throw new Error(`a valid replace was refused${where}`);
          // A member null where its field may not be, or of another type: no write takes it.
          const writes =
            (method === 'POST' && route === '^\\/bikes$') || ((method === 'PUT' || method === 'PATCH') && id);
          if (writes && c.refused && response.status === 200)
            throw new Error(`a body with a member null or of the wrong type was taken${where}`);
        }
        // Reads agree with the acknowledged writes so far.
        if ((method === 'GET' || method === 'HEAD') && id) {
          const known = model.get(id);
          if (known) {
            if (response.status !== 200) throw new Error(`an acknowledged bike was not found${where}`);
            if (method === 'GET') expect(JSON.parse(response.body.toString('utf8'))).toEqual(known);
          } else if (response.status !== 404) throw new Error(`a bike that was never acknowledged was found${where}`);
        }
        const isWrite = method !== 'GET' && method !== 'HEAD';
        if (response.status === 200 && isWrite && (route === '^\\/bikes$' || onId)) {
          try {
            checkAcknowledgedWrite(c, response, expectation.path);
          } catch (err) {
            throw new Error(
              `${(err as Error).message}${where}\n  answered ${response.body.subarray(0, 300).toString('utf8')}`,
              { cause: err },
            );
          }
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    connection.close();

    // Figures for the report: how many requests, which statuses.
    const counts = Object.fromEntries([...statusCounts].sort(([a], [b]) => a - b));
    console.log(
      `fuzz: ${sent} requests, statuses ${JSON.stringify(counts)}, ${model.size} bikes acknowledged and kept, ${deleted.size} deleted`,
    );
    expect(sent).toBeGreaterThanOrEqual(RUNS);
    expect([...statusCounts.keys()].filter((s) => s >= 500)).toEqual([]);

    // No body, JSON or form, reached a prototype.
    expect(snapshot()).toEqual(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    // The catalog is exactly the acknowledged writes: each reads back as acknowledged, deleted
    // ones are gone, and nothing unacknowledged was stored.
    const api = client(svc.baseUrl);
    for (const [id, bike] of model) {
      const res = await api.request('GET', `/bikes/${id}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(bike);
    }
    for (const id of deleted) expect((await api.request('GET', `/bikes/${id}`)).status).toBe(404);
    const all = (await (await api.request('GET', '/bikes/all')).json()) as Bike[];
    const byId = (bikes: Bike[]) => [...bikes].sort((a, b) => a.id.localeCompare(b.id));
    expect(byId(all)).toEqual(byId([...model.values()]));
  });
});

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

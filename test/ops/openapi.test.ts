import { STATUS_CODES } from 'node:http';
import { randomUUID } from 'node:crypto';
import type Router from '@koa/router';
import pino from 'pino';
import { createApp } from '../../src/app';
import { createTokens } from '../../src/auth/tokens';
import { bikeFields, patch, replacement } from '../../src/bikes/bike';
import { validate } from '../support/validate';
import { createBikeRepository } from '../../src/bikes/repository';
import { apiKeys } from '../../src/db/api-keys';
import { connectPool, queryOn, writeOn } from '../../src/db/pool';
import { sharedLimit } from '../../src/db/rate-limits';
import { databaseReadiness } from '../../src/db/readiness';
import { liveFeed } from '../../src/feed/live';
import { cursors } from '../../src/http/cursors';
import { abuseLimits } from '../../src/http/limits';
import { client, newBike, OPTIONAL_FIELD_PATHS } from '../support/bikes';
import { type EventStream, openEventStream } from '../support/event-stream';
import { startTestService, type TestService } from '../support/service';
import { schemaErrors } from '../support/json-schema';

type Json = Record<string, unknown>;
interface Operation {
  operationId: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Json[];
  requestBody?: { content: Record<string, { schema: Json; example?: unknown }> };
  responses: Record<string, Json>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Json>;
    securitySchemes: Record<string, Json>;
    parameters: Record<string, Json>;
  };
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace'];

/** Headers of the message itself, which the document does not describe per operation. */
const HTTP_OWN_HEADERS = new Set([
  'connection',
  'content-encoding',
  'content-length',
  'content-type',
  'date',
  'keep-alive',
  'transfer-encoding',
  'vary',
]);

/**
 * The statuses each operation may answer, from the specification and docs/decisions.md:
 * docs/reference/requests-and-answers.md#no-5xx-from-input: 503 when the database is down;
 * docs/reference/requests-and-answers.md#a-5xx-says-what-was-written: 504 for a write whose outcome is unknown;
 * docs/reference/caching-and-conditions.md#conditional-writes: 412 when a write's If-Match or If-None-Match does not hold;
 * docs/reference/caching-and-conditions.md#idempotency-keys: 409 and 422 for an Idempotency-Key in use, or used with
 * other fields; docs/reference/callers.md#abuse-limits: 429 over an abuse limit;
 * docs/reference/requests-and-answers.md#content-codings: 415 for a body in a coding the service cannot decode, on
 * every route that reads one.
 */
/**
 * What the listener answers any request before a route sees it (src/http/listener.ts,
 * LISTENER_ANSWERS): a request it cannot read safely (400), too slow (408), chunk extensions over
 * the limit (413), an Expect it cannot meet (417), headers over 256 KB (431).
 */
const LISTENER = [400, 408, 413, 417, 431];
const withListener = (...statuses: number[]) => [...new Set([...statuses, ...LISTENER])].sort((a, b) => a - b);

/**
 * docs/reference/http.md#query-parameters: 400 for a query parameter the route does not know, on every
 * route (PUT's every-failure-404 aside); docs/reference/caching-and-conditions.md#conditional-get: a read answers 304 to
 * If-None-Match and 412 to an If-Match that does not hold (RFC 9110 13.1.1), but the change feed,
 * which has no ETag.
 */
const ALLOWED_STATUSES: Record<string, number[]> = {
  browseBikes: withListener(200, 304, 412, 503),
  bikeFacets: withListener(200, 304, 412, 503),
  listBikes: withListener(200, 304, 412, 429, 503),
  bikeChanges: withListener(200, 410, 429, 503),
  getBike: withListener(200, 304, 404, 412, 503),
  getBikeByHandle: withListener(200, 304, 404, 412, 503),
  searchBikesByTitle: withListener(200, 304, 412, 429, 503),
  createBike: withListener(200, 401, 403, 409, 415, 422, 429, 503, 504),
  replaceBike: withListener(200, 401, 403, 404, 412, 415, 429, 503, 504),
  updateBike: withListener(200, 401, 403, 404, 412, 415, 429, 503, 504),
  deleteBike: withListener(200, 401, 403, 404, 412, 429, 503, 504),
  // 503 and 504: trading an API key reads and marks it in the database (docs/reference/callers.md#api-keys).
  issueToken: withListener(200, 403, 415, 429, 503, 504),
  // For operators and the docs page (src/http/health-router.ts, docs-router.ts).
  liveness: withListener(200),
  readiness: withListener(200, 503),
  metrics: withListener(200, 404),
  openApiDocument: withListener(200),
  docsPage: withListener(200),
  docsPageScript: withListener(200),
  docsPageAsset: withListener(200, 404),
};

function operations(document: Document): { method: string; path: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ method, path, operation })),
  );
}

function operation(document: Document, operationId: string): { method: string; path: string; operation: Operation } {
  const found = operations(document).find((entry) => entry.operation.operationId === operationId);
  if (!found) throw new Error(`no operation ${operationId}`);
  return found;
}

/** "/bikes/:id" and "/bikes/{id}" alike, without a trailing slash ("POST /bikes" and "POST /bikes/" are one route). */
function routeKey(method: string, path: string): string {
  const normalized = path.replace(/:(\w+)/g, '{$1}').replace(/(.)\/$/, '$1');
  return `${method.toUpperCase()} ${normalized}`;
}

function responseSchema(document: Document, operationId: string, status = '200'): Json {
  const response = operation(document, operationId).operation.responses[status];
  return (response.content as Record<string, { schema: Json }>)['application/json'].schema;
}

function example(document: Document, operationId: string, where: 'request' | 'response'): unknown {
  const { operation: op } = operation(document, operationId);
  if (where === 'request') return op.requestBody?.content['application/json'].example;
  return (op.responses['200'].content as Record<string, { example: unknown }>)['application/json'].example;
}

describe('GET /openapi.json', () => {
  let svc: TestService;
  let document: Document;
  beforeAll(async () => {
    svc = await startTestService();
    const res = await fetch(`${svc.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    document = (await res.json()) as Document;
  });
  afterAll(() => svc.stop());

  it('answers an OpenAPI 3.1 document with exactly the operations the routes declare, each with its own id', () => {
    expect(document.openapi).toBe('3.1.0');
    const ids = operations(document).map((entry) => entry.operation.operationId);
    expect(ids.sort()).toEqual(Object.keys(ALLOWED_STATUSES).sort());
  });

  it('lists every route the routers serve, and the routers serve every operation it lists', async () => {
    // The real app, built as the server builds it, asked for its routing table.
    const pool = connectPool(svc.databaseUrl, () => undefined);
    try {
      const app = createApp({
        bikes: createBikeRepository({ writes: pool }),
        bikesOnPrimary: createBikeRepository({ writes: pool }),
        catalogIdentity: () => 'a-catalog',
        cursors: cursors(svc.jwtSecret),
        tokens: createTokens(svc.jwtSecret),
        keys: apiKeys(writeOn(pool)),
        logger: pino({ level: 'silent' }),
        readiness: databaseReadiness(pool),
        limits: abuseLimits(
          { tokens: sharedLimit(pool, 'tokens', 1_000), writes: sharedLimit(pool, 'writes', 1_000) },
          { listStreams: 10, eventStreams: 10 },
        ),
        live: liveFeed(queryOn(pool), { onError: () => undefined }),
        maxEventStreams: 10,
      });
      const routers = app.middleware
        .map((middleware) => (middleware as { router?: Router }).router)
        .filter((router): router is Router => router !== undefined);
      const served = routers.flatMap((router) =>
        router.stack.flatMap((layer) =>
          layer.methods.filter((m) => m !== 'HEAD').map((m) => routeKey(m, String(layer.path))),
        ),
      );
      const documented = operations(document).map(({ method, path }) => routeKey(method, path));

      expect([...served].sort()).toEqual([...documented].sort());
    } finally {
      await pool.end();
    }
  });

  it('gives each operation exactly the statuses the specification and docs/decisions.md allow', () => {
    for (const { operation: op } of operations(document)) {
      const statuses = Object.keys(op.responses)
        .map(Number)
        .sort((a, b) => a - b);
      expect({ operationId: op.operationId, statuses }).toEqual({
        operationId: op.operationId,
        statuses: ALLOWED_STATUSES[op.operationId],
      });
    }
  });

  it('requires the bearer token on the four writes under /bikes and on nothing else', () => {
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const secured = operations(document)
      .filter(({ operation: op }) => op.security?.length)
      .map(({ method, path }) => routeKey(method, path))
      .sort();
    expect(secured).toEqual(['DELETE /bikes/{id}', 'PATCH /bikes/{id}', 'POST /bikes', 'PUT /bikes/{id}']);
    // The others say so: an empty list, not a missing one.
    for (const { operation: op } of operations(document).filter(({ operation: op }) => !op.security?.length)) {
      expect({ operationId: op.operationId, security: op.security }).toEqual({
        operationId: op.operationId,
        security: [],
      });
    }
    // Each with the scope it needs (docs/reference/callers.md#scopes).
    const scopes = Object.fromEntries(
      operations(document)
        .filter(({ operation: op }) => op.security?.length)
        .map(({ operation: op }) => [op.operationId, op.security]),
    );
    expect(scopes).toEqual({
      createBike: [{ bearerAuth: ['bikes:write'] }],
      replaceBike: [{ bearerAuth: ['bikes:write'] }],
      updateBike: [{ bearerAuth: ['bikes:write'] }],
      deleteBike: [{ bearerAuth: ['bikes:delete'] }],
    });
    for (const { operation: op } of operations(document).filter(({ operation: op }) => op.security?.length)) {
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '403']));
    }
  });

  it('documents WWW-Authenticate on every 401 and 403, as the service sends it (docs/reference/callers.md#refusals)', () => {
    const protectedOperations = operations(document).filter(({ operation: op }) => op.responses['401']);
    expect(protectedOperations).toHaveLength(4);
    for (const { operation: op } of [
      ...protectedOperations,
      ...operations(document).filter(({ operation: op }) => op.operationId === 'issueToken'),
    ]) {
      for (const status of ['401', '403'].filter((status) => op.responses[status])) {
        const headers = op.responses[status].headers as Record<string, { schema: { pattern: string } }> | undefined;
        const schema = headers?.['WWW-Authenticate']?.schema;
        expect(new RegExp(schema?.pattern ?? '^$').test('Bearer realm="bike-catalog"')).toBe(true);
        expect(
          new RegExp(schema?.pattern ?? '^$').test(
            'Bearer realm="bike-catalog", error="insufficient_scope", error_description="needs it", scope="bikes:delete"',
          ),
        ).toBe(true);
        expect(new RegExp(schema?.pattern ?? '^$').test('Basic realm="x"')).toBe(false);
      }
    }
  });

  it('has request examples that the handlers\u2019 own schemas accept', () => {
    expect(validate(bikeFields, example(document, 'createBike', 'request'))).toBeDefined();
    expect(validate(replacement, example(document, 'replaceBike', 'request'))).toBeDefined();
    expect(validate(patch, example(document, 'updateBike', 'request'))).toBeDefined();
    expect(example(document, 'issueToken', 'request')).toEqual({ username: expect.any(String) });
  });

  it('has 200 examples that match the documented response schemas, and error examples that are the reason phrases', () => {
    // The API's: the operator's routes answer text, the docs page's files.
    const api = operations(document).filter(({ operation: op }) => !op.tags?.includes('operations'));
    expect(api).toHaveLength(12);
    for (const { operation: op } of api) {
      expect(
        schemaErrors(document, responseSchema(document, op.operationId), example(document, op.operationId, 'response')),
      ).toEqual([]);
    }
    for (const { operation: op } of api) {
      for (const [status, response] of Object.entries(op.responses)) {
        // The listener's own (408, 417, 431) have no body.
        if (Number(status) < 400 || response.content === undefined) continue;
        const example = (response.content as Record<string, { example: string }>)['text/plain'].example;
        expect({ operation: op.operationId, status, example }).toEqual({
          operation: op.operationId,
          status,
          example: STATUS_CODES[Number(status)],
        });
      }
    }
  });

  it('marks required exactly the bike fields without which a create answers 400, nullable exactly the optional ones, with the types the server checks', async () => {
    const api = client(svc.baseUrl, await svc.token());
    const schema = document.components.schemas.NewBike as { properties: Record<string, Json>; required: string[] };
    const valid = newBike();
    const optional = OPTIONAL_FIELD_PATHS.filter((field) => !field.includes('.'));
    expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(valid).sort());
    expect([...schema.required].sort()).toEqual(
      Object.keys(valid)
        .filter((field) => !optional.includes(field))
        .sort(),
    );
    const wrongValue: Record<string, unknown> = { string: 5, number: '5', boolean: 'true', object: 'not an object' };
    for (const [field, property] of Object.entries(schema.properties)) {
      const without: Json = { ...valid };
      delete without[field];
      // An optional field may be left out (it is stored as null); any other may not.
      expect({ field, status: (await api.request('POST', '/bikes/', { body: without })).status }).toEqual({
        field,
        status: optional.includes(field) ? 200 : 400,
      });
      const types = property.$ref ? ['object'] : ([property.type].flat() as string[]);
      expect({ field, nullable: types.includes('null') }).toEqual({ field, nullable: optional.includes(field) });
      const type = types[0];
      const wrong = { ...valid, [field]: wrongValue[type] };
      expect({ field, type, status: (await api.request('POST', '/bikes/', { body: wrong })).status }).toEqual({
        field,
        type,
        status: 400,
      });
    }
  });

  it('replays its examples in order against a fresh database and gets the documented 200 responses', async () => {
    const fresh = await startTestService();
    try {
      const issued = await client(fresh.baseUrl).request('POST', '/api/user', {
        body: example(document, 'issueToken', 'request'),
      });
      expect(issued.status).toBe(200);
      const { token } = (await issued.json()) as { token: string };
      expect(schemaErrors(document, responseSchema(document, 'issueToken'), { token })).toEqual([]);
      const api = client(fresh.baseUrl, token);
      const id = document.components.parameters.BikeId.example as string;
      const handleParam = operation(document, 'getBikeByHandle').operation.parameters?.[0] as Json;
      const queryParam = operation(document, 'searchBikesByTitle').operation.parameters?.[0] as Json;

      const replay = async (operationId: string, method: string, path: string, body?: unknown) => {
        const res = await api.request(method, path, { body });
        expect({ operationId, status: res.status }).toEqual({ operationId, status: 200 });
        const received = await res.json();
        expect(schemaErrors(document, responseSchema(document, operationId), received)).toEqual([]);
        return received;
      };

      // The create example: the server makes its own id, so compare everything else.
      const created = await replay('createBike', 'POST', '/bikes/', example(document, 'createBike', 'request'));
      const { id: _documentedId, ...documentedCreated } = example(document, 'createBike', 'response') as Json;
      expect(created).toEqual({ ...documentedCreated, id: expect.any(String) });
      await api.request('DELETE', `/bikes/${(created as Json).id}`);

      // The rest use the documented id, so the documented responses must come back exactly.
      expect(await replay('replaceBike', 'PUT', `/bikes/${id}`, example(document, 'replaceBike', 'request'))).toEqual(
        example(document, 'replaceBike', 'response'),
      );
      expect(await replay('getBike', 'GET', `/bikes/${id}`)).toEqual(example(document, 'getBike', 'response'));
      expect(await replay('getBikeByHandle', 'GET', `/bikes/by-handle/${handleParam.example as string}`)).toEqual(
        example(document, 'getBikeByHandle', 'response'),
      );
      expect(
        await replay(
          'searchBikesByTitle',
          'GET',
          `/bikes/search/by-title?query=${encodeURIComponent(queryParam.example as string)}`,
        ),
      ).toEqual(example(document, 'searchBikesByTitle', 'response'));
      expect(await replay('listBikes', 'GET', '/bikes/all')).toEqual(example(document, 'listBikes', 'response'));
      expect(await replay('updateBike', 'PATCH', `/bikes/${id}`, example(document, 'updateBike', 'request'))).toEqual(
        example(document, 'updateBike', 'response'),
      );
      expect(await replay('deleteBike', 'DELETE', `/bikes/${id}`)).toEqual(example(document, 'deleteBike', 'response'));
    } finally {
      await fresh.stop();
    }
  });

  it('lists, for every probe of every operation, the status the server answers, with a matching body', async () => {
    const token = await svc.token();
    const api = client(svc.baseUrl, token);
    const bike = await api.create(newBike());
    const victim = await api.create(newBike());
    const unknownId = randomUUID();
    const huge = JSON.stringify({ ...newBike(), description: 'x'.repeat(1_100_000) });
    const noToken = { token: '' };
    const badToken = { token: 'not.a.token' };
    const replacement = { ...newBike(), id: bike.id, handle: bike.handle };
    const zstd = { 'content-encoding': 'zstd' };

    const probes: [
      operationId: string,
      method: string,
      path: string,
      options: Parameters<typeof api.request>[2],
      expected: number,
    ][] = [
      ['listBikes', 'GET', '/bikes/all', {}, 200],
      ['getBike', 'GET', `/bikes/${bike.id}`, {}, 200],
      ['getBike', 'GET', `/bikes/${unknownId}`, {}, 404],
      ['getBike', 'GET', '/bikes/not-a-uuid', {}, 404],
      ['getBikeByHandle', 'GET', `/bikes/by-handle/${bike.handle}`, {}, 200],
      ['getBikeByHandle', 'GET', `/bikes/by-handle/no-such-${unknownId}`, {}, 404],
      ['searchBikesByTitle', 'GET', `/bikes/search/by-title?query=${encodeURIComponent(bike.title)}`, {}, 200],
      ['searchBikesByTitle', 'GET', '/bikes/search/by-title?query=a&query=b', {}, 400],
      ['createBike', 'POST', '/bikes/', { body: newBike() }, 200],
      ['createBike', 'POST', '/bikes', { body: newBike() }, 200],
      ['createBike', 'POST', '/bikes/', { body: { title: 'only a title' } }, 400],
      ['createBike', 'POST', '/bikes/', { body: newBike(), ...noToken }, 401],
      ['createBike', 'POST', '/bikes/', { body: newBike(), ...badToken }, 403],
      ['createBike', 'POST', '/bikes/', { body: huge }, 413],
      ['createBike', 'POST', '/bikes/', { body: newBike(), headers: { 'idempotency-key': 'probe-key' } }, 200],
      ['createBike', 'POST', '/bikes/', { body: newBike(), headers: { 'idempotency-key': 'probe-key' } }, 422],
      ['replaceBike', 'PUT', `/bikes/${bike.id}`, { body: replacement }, 200],
      ['replaceBike', 'PUT', `/bikes/${bike.id}`, { body: { title: 'only a title' } }, 404],
      ['replaceBike', 'PUT', `/bikes/${bike.id}`, { body: replacement, ...noToken }, 401],
      ['replaceBike', 'PUT', `/bikes/${bike.id}`, { body: replacement, ...badToken }, 403],
      ['replaceBike', 'PUT', `/bikes/${bike.id}`, { body: huge }, 413],
      ['replaceBike', 'PUT', `/bikes/${bike.id}`, { body: replacement, headers: { 'if-match': '"stale"' } }, 412],
      ['updateBike', 'PATCH', `/bikes/${bike.id}`, { body: { totalInventory: 3 } }, 200],
      ['updateBike', 'PATCH', `/bikes/${bike.id}`, { body: { totalInventory: '3' } }, 400],
      ['updateBike', 'PATCH', `/bikes/${unknownId}`, { body: { totalInventory: 3 } }, 404],
      ['updateBike', 'PATCH', `/bikes/${bike.id}`, { body: {}, ...noToken }, 401],
      ['updateBike', 'PATCH', `/bikes/${bike.id}`, { body: {}, ...badToken }, 403],
      ['updateBike', 'PATCH', `/bikes/${bike.id}`, { body: huge }, 413],
      ['updateBike', 'PATCH', `/bikes/${bike.id}`, { body: {}, headers: { 'if-match': '"stale"' } }, 412],
      ['deleteBike', 'DELETE', `/bikes/${victim.id}`, noToken, 401],
      ['deleteBike', 'DELETE', `/bikes/${victim.id}`, badToken, 403],
      ['deleteBike', 'DELETE', `/bikes/${victim.id}`, { headers: { 'if-none-match': '*' } }, 412],
      ['deleteBike', 'DELETE', `/bikes/${victim.id}`, {}, 200],
      ['deleteBike', 'DELETE', `/bikes/${victim.id}`, {}, 404],
      // Paths that spell "all" as no literal path does: each is the id route of the document
      // ("concrete paths first"), never the list. (A write at /bikes/all itself is 405.)
      ['getBike', 'GET', '/bikes/ALL', {}, 404],
      ['getBike', 'GET', '/bikes/%61ll', {}, 404],
      ['replaceBike', 'PUT', '/bikes/ALL', { body: replacement, ...noToken }, 401],
      ['replaceBike', 'PUT', '/bikes/ALL', { body: replacement }, 404],
      ['updateBike', 'PATCH', '/bikes/%61ll', { body: {} }, 404],
      ['deleteBike', 'DELETE', '/bikes/All', noToken, 401],
      ['deleteBike', 'DELETE', '/bikes/All', {}, 404],
      // A body in a coding the service cannot decode: 415 on every route that reads one.
      ['createBike', 'POST', '/bikes/', { body: newBike(), headers: zstd }, 415],
      ['replaceBike', 'PUT', `/bikes/${bike.id}`, { body: replacement, headers: zstd }, 415],
      ['updateBike', 'PATCH', `/bikes/${bike.id}`, { body: {}, headers: zstd }, 415],
      ['issueToken', 'POST', '/api/user', { body: {}, headers: zstd, ...noToken }, 415],
      ['issueToken', 'POST', '/api/user', { body: { username: 'probe' }, ...noToken }, 200],
      ['issueToken', 'POST', '/api/user', { body: { username: 5 }, ...noToken }, 400],
      [
        'issueToken',
        'POST',
        '/api/user',
        { body: JSON.stringify({ username: 'x'.repeat(1_100_000) }), ...noToken },
        413,
      ],
      ['listBikes', 'GET', '/bikes/all', { headers: { 'x-padding': 'x'.repeat(300 * 1024) } }, 431],
    ];

    for (const [operationId, method, path, options, expected] of probes) {
      const res = await api.request(method, path, options);
      const documented = operation(document, operationId).operation.responses;
      const probe = `${method} ${path.slice(0, 60)}`;
      expect({ probe, status: res.status }).toEqual({ probe, status: expected });
      expect({ probe, documented: Object.keys(documented) }).toEqual({
        probe,
        documented: expect.arrayContaining([String(res.status)]),
      });
      if (res.status === 200) {
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect({
          probe,
          errors: schemaErrors(document, responseSchema(document, operationId), await res.json()),
        }).toEqual({
          probe,
          errors: [],
        });
      } else if (res.status === 431) {
        expect(await res.text()).toBe('');
      } else {
        expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
        const phrase = await res.text();
        const content = documented[String(res.status)].content as Record<string, { example: string }>;
        // The reason phrase, and for a refusal why after it (docs/reference/callers.md#refusals).
        expect(phrase.replace(/^(Forbidden): .*$/, '$1')).toBe(content['text/plain'].example);
      }
      expectHeadersDocumented(probe, [...res.headers.keys()], documented[String(res.status)]);
    }
  });

  it("documents the event stream's answers (docs/reference/browse-and-sync.md#live-updates): its media type, Last-Event-ID, 429 and 503 with their headers", async () => {
    const { operation: op } = operation(document, 'bikeChanges');
    expect(op.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Last-Event-ID', in: 'header' })]),
    );
    expect(Object.keys(op.responses['200'].content as Json)).toEqual(['application/json', 'text/event-stream']);
    // One stream a client, two an instance; clients told apart by the proxy in front (TRUST_PROXY).
    const bounded = await startTestService({
      env: { TRUST_PROXY: '1', MAX_EVENT_STREAMS_PER_CLIENT: '1', MAX_EVENT_STREAMS: '2' },
    });
    const streams: EventStream[] = [];
    const open = async (client: string, headers: Record<string, string> = {}) => {
      const stream = await openEventStream(`${bounded.baseUrl}/bikes/changes`, {
        headers: { 'x-forwarded-for': `10.0.0.${client}`, ...headers },
      });
      streams.push(stream);
      return stream;
    };
    try {
      const probes: [probe: string, stream: EventStream, expected: number][] = [
        ['a stream', await open('1'), 200],
        ["past the client's streams", await open('1'), 429],
        ['another client', await open('2'), 200],
        ["past the instance's streams", await open('3'), 503],
        ['a Last-Event-ID not ours', await open('4', { 'last-event-id': 'not-a-cursor' }), 400],
      ];
      for (const [probe, stream, expected] of probes) {
        expect({ probe, status: stream.status }).toEqual({ probe, status: expected });
        const documented = op.responses[String(stream.status)];
        expectHeadersDocumented(probe, Object.keys(stream.headers), documented);
        if (stream.status === 200) {
          expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
          continue;
        }
        await stream.ended;
        expect(stream.text()).toBe((documented.content as Record<string, { example: string }>)['text/plain'].example);
      }
    } finally {
      for (const stream of streams) stream.close();
      await bounded.stop();
    }
  });
});

/** Every header an answer carries is in the document for its status, or is HTTP's own. */
function expectHeadersDocumented(probe: string, names: string[], documented: Json): void {
  const described = Object.keys((documented.headers as Json | undefined) ?? {});
  const undocumented = names.filter(
    (name) => !HTTP_OWN_HEADERS.has(name) && !described.some((header) => header.toLowerCase() === name),
  );
  expect({ probe, undocumented }).toEqual({ probe, undocumented: [] });
}

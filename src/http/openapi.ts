import fs from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import type * as yup from 'yup';
import { bike, bikeFields, patch, replacement } from '../bikes/bike';
import { exampleOf } from '../bikes/yup';
import { BIKE_POLICIES } from './bikes-router';
import { type JsonSchema, toJsonSchema } from './json-schema';
import type { Policy } from './route';
import { TOKEN_POLICY } from './token-router';

/**
 * The OpenAPI 3.1 description of the nine operations, served at GET /openapi.json. The bike
 * schemas are converted from the yup schemas the handlers validate with, and each operation's
 * error statuses follow from the policy its route declares; what is written here is the prose
 * and the examples. test/ops/openapi.test.ts checks the document against the running service.
 */

const STRINGS_NOTE =
  'Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. ' +
  'Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored.';

// Examples, from those the bike's fields carry. test/ops/openapi.test.ts sends each request example to the server.
const EXAMPLE_FIELDS = exampleOf(bikeFields);
const EXAMPLE_BIKE = exampleOf(bike);
const EXAMPLE_ID = EXAMPLE_BIKE.id;
const EXAMPLE_PATCH = { totalInventory: 7, availableForSale: false };
// An illustration only: a token of this shape, signed with no real secret.
const EXAMPLE_TOKEN =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2VybmFtZSI6ImFsaWNlIiwiaWF0IjoxNzY0MDAwMDAwLCJleHAiOjE3NjQwMDE4MDB9.' +
  'c2lnbmF0dXJlLW9mLWFuLWV4YW1wbGUtdG9rZW4';

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});
const json = (schema: JsonSchema, example?: unknown): Record<string, unknown> => ({
  'application/json': { schema, ...(example !== undefined && { example }) },
});
const REQUEST_ID_HEADER = { 'X-Request-Id': ref('headers', 'RequestId') };

/** The error responses, each a status and its reason phrase as plain text, never JSON; what each means. */
const ERRORS = {
  400: 'The request failed validation.',
  401: 'No bearer token: the Authorization header is missing or has no second element.',
  403: 'The token failed verification (tampered, another secret, expired, not HS256, or living over 1800 s).',
  404: 'No such bike (a path id that is not a UUID names no bike).',
  413: 'The body is larger than 1 MB; nothing is stored.',
  503: 'The database is not answering; retry (see Retry-After).',
} as const;
type ErrorStatus = keyof typeof ERRORS;
/** The component of an error response: its reason phrase without spaces (NotFound). */
const errorName = (status: number) => (STATUS_CODES[status] as string).replaceAll(' ', '');

/** Any request can get it: node's HTTP parser answers it before any route, with no body. */
const HEADERS_TOO_LARGE = {
  description: 'The request headers are larger than 256 KB; the connection closes.',
};

/**
 * The error statuses of an operation, from its route's policy: 401 and 403 with a token, 413
 * and the policy's status for bad input with a body, 404 for a bike id that names nothing,
 * 503 where the database is needed; and those its handler adds.
 */
function errorResponses(
  policy: Policy,
  { id = false, database = true, also = [] as ErrorStatus[], meanings = {} as Partial<Record<ErrorStatus, string>> },
) {
  const statuses = new Set<ErrorStatus>(also);
  if (policy.token) [401, 403].forEach((s) => statuses.add(s as ErrorStatus));
  if (policy.body) [413, policy.invalid ?? 404].forEach((s) => statuses.add(s as ErrorStatus));
  if (id) statuses.add(404);
  if (database) statuses.add(503);
  const responses: Record<string, unknown> = {};
  for (const status of [...statuses].sort()) {
    const name = errorName(status);
    responses[status] = meanings[status]
      ? { ...ref('responses', name), description: meanings[status] }
      : ref('responses', name);
  }
  return { ...responses, 431: HEADERS_TOO_LARGE };
}

const BIKE = ref('schemas', 'Bike');
const BIKES = { type: 'array', items: BIKE };
const ID_PARAMETER = ref('parameters', 'BikeId');
const READ_PARAMETERS = [
  {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'The ETag of the copy you have: 304, with no body, while it is current.',
    schema: { type: 'string' },
  },
  {
    name: 'X-Read-From',
    in: 'header',
    required: false,
    description: '`primary`: read from the primary database, to see your own writes at once (see Scaling).',
    schema: { type: 'string', enum: ['primary'] },
  },
];
const READ_HEADERS = {
  ETag: { description: 'A weak ETag of this representation.', schema: { type: 'string' } },
  'Cache-Control': { description: '`no-cache`: revalidate before using a stored copy.', schema: { type: 'string' } },
};
const NOT_MODIFIED = {
  description: 'Not Modified: the If-None-Match ETag is still current; no body.',
  headers: { ...REQUEST_ID_HEADER, ETag: READ_HEADERS.ETag },
};

interface Operation {
  /** Method and path: 'get /bikes/all'. */
  route: string;
  summary: string;
  description?: string;
  policy: Policy;
  parameters?: unknown[];
  requestBody?: unknown;
  /** The 200: what it is, its schema and an example. */
  ok: [string, JsonSchema, unknown];
  errors?: Parameters<typeof errorResponses>[1];
}

function buildDocument() {
  const { version } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const schemas: Record<string, JsonSchema> = {};
  schemas.Bike = {
    description: 'A bike as the service returns it: exactly these fields, each as the client sent it.',
    ...toJsonSchema(bike, schemas),
    additionalProperties: false,
  };
  const body = (name: string, schema: yup.Schema, description: string, example: unknown, required = true) => {
    schemas[name] = { description: `${description} ${STRINGS_NOTE}`, ...toJsonSchema(schema, schemas) };
    return { required, description, content: json(ref('schemas', name), example) };
  };
  const patchBody = body(
    'BikePatch',
    patch,
    'Any subset of the fields, each valid as on create.',
    EXAMPLE_PATCH,
    false,
  );
  patchBody.content['application/merge-patch+json'] = { schema: ref('schemas', 'BikePatch') };

  const operations: Record<string, Operation> = {
    listBikes: {
      route: 'get /bikes/all',
      summary: 'List every bike',
      description: 'Every bike, oldest first (creation order). No pagination: the array is streamed.',
      policy: BIKE_POLICIES.listBikes,
      ok: ['Every bike', BIKES, [EXAMPLE_BIKE]],
    },
    getBike: {
      route: 'get /bikes/{id}',
      summary: 'Get a bike by id',
      policy: BIKE_POLICIES.getBike,
      ok: ['The bike', BIKE, EXAMPLE_BIKE],
    },
    replaceBike: {
      route: 'put /bikes/{id}',
      summary: 'Replace a bike',
      description:
        'Stores the body under the path id (a body id is not used as the key; the handle is stored as given). ' +
        'A well-formed id with no bike creates it there. Every failure, including a body that fails ' +
        'validation, answers 404, as the specification says.',
      policy: BIKE_POLICIES.replaceBike,
      requestBody: body(
        'BikeReplacement',
        replacement,
        'All eight fields, plus a non-empty id and handle.',
        EXAMPLE_BIKE,
      ),
      ok: ['The stored bike', BIKE, EXAMPLE_BIKE],
      errors: { meanings: { 404: 'Not a UUID, malformed JSON, or a body that fails validation.' } },
    },
    updateBike: {
      route: 'patch /bikes/{id}',
      summary: 'Update some fields of a bike',
      description:
        'Writes only the fields in the body; each must be valid as on create (a priceRange must be complete). ' +
        'A body id is ignored; a handle is written as given; a new title does not change the handle. No body is ' +
        'an empty patch.',
      policy: BIKE_POLICIES.updateBike,
      requestBody: patchBody,
      ok: ['The bike with the fields applied', BIKE, { ...EXAMPLE_BIKE, ...EXAMPLE_PATCH }],
      errors: { meanings: { 400: 'A field has the wrong type, or the JSON is malformed. Nothing changes.' } },
    },
    deleteBike: {
      route: 'delete /bikes/{id}',
      summary: 'Delete a bike',
      policy: BIKE_POLICIES.deleteBike,
      ok: ['The id of the deleted bike', ref('schemas', 'DeletedBike'), { id: EXAMPLE_ID }],
    },
    getBikeByHandle: {
      route: 'get /bikes/by-handle/{handle}',
      summary: 'Get the first bike with a handle',
      description: 'Handles are not unique: the bike created first wins.',
      policy: BIKE_POLICIES.getBikeByHandle,
      parameters: [
        {
          name: 'handle',
          in: 'path',
          required: true,
          description: 'The handle: the title with spaces turned into dashes, lowercased.',
          schema: { type: 'string' },
          example: EXAMPLE_BIKE.handle,
        },
      ],
      ok: ['The bike', BIKE, EXAMPLE_BIKE],
      errors: { also: [404] },
    },
    searchBikesByTitle: {
      route: 'get /bikes/search/by-title',
      summary: 'Search bikes by title',
      description: 'Case-sensitive substring match on the title, oldest first. `%`, `_` and `\\` match themselves.',
      policy: BIKE_POLICIES.searchBikesByTitle,
      parameters: [
        {
          name: 'query',
          in: 'query',
          required: false,
          description: 'The text to look for. Missing or empty: every bike. Given twice, or with U+0000: 400.',
          schema: { type: 'string', default: '', pattern: '^[^\\u0000]*$' },
          example: 'Hybrid',
        },
      ],
      ok: ['The matching bikes', BIKES, [EXAMPLE_BIKE]],
      errors: {
        also: [400],
        meanings: { 400: 'A failed search: `query` given more than once, or containing U+0000.' },
      },
    },
    createBike: {
      route: 'post /bikes/',
      summary: 'Create a bike',
      description:
        'The server makes the id (UUID v4) and the handle (from the title); a body id or handle is ignored. ' +
        '`POST /bikes` is the same route.',
      policy: BIKE_POLICIES.createBike,
      requestBody: body('NewBike', bikeFields, 'The eight client fields.', EXAMPLE_FIELDS),
      ok: ['The created bike', BIKE, EXAMPLE_BIKE],
      errors: { meanings: { 400: 'No body, malformed JSON, or a body that fails validation.' } },
    },
    issueToken: {
      route: 'post /api/user',
      summary: 'Get a bearer token',
      description:
        'No authentication. The token is an HS256 JWT carrying `username`, `iat` and `exp`, valid for 1800 seconds.',
      policy: TOKEN_POLICY,
      requestBody: {
        required: false,
        content: {
          ...json(ref('schemas', 'TokenRequest'), { username: 'alice' }),
          'application/x-www-form-urlencoded': { schema: ref('schemas', 'TokenRequest') },
        },
      },
      ok: ['A token', ref('schemas', 'Token'), { token: EXAMPLE_TOKEN }],
      errors: {
        database: false,
        meanings: { 400: '`username` is present but not a string, or the JSON is malformed.' },
      },
    },
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, op] of Object.entries(operations)) {
    const [method, urlPath] = op.route.split(' ');
    const id = urlPath.includes('{id}');
    // The reads of the catalog: conditional (ETag, 304), and from a replica unless told otherwise.
    const read = method === 'get';
    const parameters = [...(id ? [ID_PARAMETER] : []), ...(op.parameters ?? []), ...(read ? READ_PARAMETERS : [])];
    paths[urlPath] ??= {};
    paths[urlPath][method] = {
      tags: [urlPath === '/api/user' ? 'tokens' : 'bikes'],
      operationId,
      security: op.policy.token ? [{ bearerAuth: [] }] : [],
      summary: op.summary,
      ...(op.description && { description: op.description }),
      ...(parameters.length > 0 && { parameters }),
      ...(op.requestBody !== undefined && { requestBody: op.requestBody }),
      responses: {
        200: {
          description: op.ok[0],
          headers: { ...REQUEST_ID_HEADER, ...(read && READ_HEADERS) },
          content: json(op.ok[1], op.ok[2]),
        },
        ...(read && { 304: NOT_MODIFIED }),
        ...errorResponses(op.policy, { id, ...op.errors }),
      },
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Bike catalog',
      version,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'A catalog of bikes. Reads are open; creating, replacing, updating and deleting need a bearer token ' +
        'from `POST /api/user`. Failures are a status code with its reason phrase as plain text, never a JSON ' +
        'body. Every response carries an `X-Request-Id` (yours when you send a short plain one). HEAD works ' +
        'wherever GET does; a known path asked with another method answers 405 with an `Allow` header.',
    },
    // Relative: the server that serves this document.
    servers: [{ url: '/', description: 'This service' }],
    tags: [
      { name: 'bikes', description: 'The catalog' },
      { name: 'tokens', description: 'Bearer tokens for the write operations' },
    ],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'Authorization: Bearer <token>, the token from POST /api/user.',
        },
      },
      parameters: {
        BikeId: {
          name: 'id',
          in: 'path',
          required: true,
          description: 'The bike id. A value that is not a UUID names no bike: 404.',
          schema: { type: 'string', format: 'uuid' },
          example: EXAMPLE_ID,
        },
      },
      headers: {
        RequestId: {
          description: 'The X-Request-Id you sent (when short and plain), otherwise a generated one.',
          schema: { type: 'string' },
        },
      },
      responses: Object.fromEntries(
        Object.entries(ERRORS).map(([status, description]) => [
          errorName(Number(status)),
          {
            description,
            headers: {
              ...REQUEST_ID_HEADER,
              ...(status === '503' && {
                'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } },
              }),
            },
            content: { 'text/plain': { schema: { type: 'string' }, example: STATUS_CODES[Number(status)] } },
          },
        ]),
      ),
      schemas: {
        ...schemas,
        Money: { description: 'An amount and its currency.', ...schemas.Money },
        PriceRange: { description: 'The lowest and highest price.', ...schemas.PriceRange },
        DeletedBike: {
          type: 'object',
          properties: { id: { type: 'string', format: 'uuid' } },
          required: ['id'],
          additionalProperties: false,
        },
        TokenRequest: {
          type: 'object',
          properties: { username: { type: 'string', description: 'Carried in the token. Optional.' } },
        },
        Token: {
          type: 'object',
          properties: { token: { type: 'string', description: 'A signed JSON Web Token (HS256), valid for 1800 s.' } },
          required: ['token'],
          additionalProperties: false,
        },
      },
    },
  };
}

let built: ReturnType<typeof buildDocument> | undefined;

/** The document, built once. */
export function openApiDocument(): ReturnType<typeof buildDocument> {
  built ??= buildDocument();
  return built;
}

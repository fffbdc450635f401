import fs from 'node:fs';
import path from 'node:path';
import type * as yup from 'yup';
import { type Bike, type BikeFields, deriveHandle } from '../bikes/bike';
import { createBikeSchema, moneySchema, patchBikeSchema, priceRangeSchema, replaceBikeSchema } from '../bikes/schema';

/**
 * The OpenAPI 3.1 description of the nine operations, served at GET /openapi.json.
 *
 * The bike body schemas are translated from the yup schemas the handlers validate with
 * (`schema.describe()`), so the document cannot drift from the rules: a yup rule this file
 * does not know how to express makes building the document throw. The statuses listed per
 * operation are those the specification and DECISIONS.md allow; test/ops/openapi.test.ts
 * checks the document against the routers and the running service.
 */

export type JsonSchema = { [keyword: string]: unknown };

interface YupDescription {
  type: string;
  optional: boolean;
  nullable: boolean;
  oneOf: unknown[];
  tests: { name?: string; params?: Record<string, unknown> }[];
  fields?: Record<string, YupDescription>;
}

/** Named schemas: a nested yup schema equal to one of these becomes a $ref to it. */
const NAMED: { name: string; schema: yup.AnySchema }[] = [
  { name: 'Money', schema: moneySchema },
  { name: 'PriceRange', schema: priceRangeSchema },
];

/** The shape of a description, without what belongs to its place in a parent (optional, default). */
function shapeKey(description: YupDescription): string {
  const { optional: _optional, default: _default, ...shape } = description as YupDescription & { default?: unknown };
  return JSON.stringify(shape);
}

function describe(schema: yup.AnySchema): YupDescription {
  return schema.describe() as unknown as YupDescription;
}

const namedShapes = new Map(
  NAMED.map(({ name, schema }) => [shapeKey(describe(schema)), `#/components/schemas/${name}`]),
);

/**
 * Strings PostgreSQL can store: no U+0000 and no lone UTF-16 surrogate (the yup test
 * "storable"). Written so that it means the same with and without the regex `u` flag.
 */
const STORABLE_PATTERN = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$';

function fromYup(description: YupDescription, { top = false } = {}): JsonSchema {
  const ref = top ? undefined : namedShapes.get(shapeKey(description));
  if (ref) return { $ref: ref };
  if (description.nullable || description.oneOf.length > 0) {
    throw new Error(`OpenAPI: no translation for a nullable or oneOf yup schema (${description.type})`);
  }
  const schema: JsonSchema = {};
  switch (description.type) {
    case 'object': {
      const fields = Object.entries(description.fields ?? {});
      schema.type = 'object';
      schema.properties = Object.fromEntries(fields.map(([key, field]) => [key, fromYup(field)]));
      const required = fields.filter(([, field]) => !field.optional).map(([key]) => key);
      if (required.length > 0) schema.required = required;
      break;
    }
    case 'string':
    case 'number':
    case 'boolean':
      schema.type = description.type;
      break;
    default:
      throw new Error(`OpenAPI: no translation for yup type ${description.type}`);
  }
  for (const test of description.tests) {
    if (test.name === 'finite') continue; // JSON numbers are finite anyway; 1e999 is stated in the descriptions
    if (test.name === 'storable') schema.pattern = STORABLE_PATTERN;
    else if (test.name === 'min' && description.type === 'string') schema.minLength = test.params?.min;
    else throw new Error(`OpenAPI: no translation for the yup test ${test.name} on a ${description.type}`);
  }
  return schema;
}

function schemaFromYup(schema: yup.AnySchema, description: string): JsonSchema {
  return { description, ...fromYup(describe(schema), { top: true }) };
}

const STRINGS_NOTE =
  'Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. ' +
  'Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored.';

// Examples. test/ops/openapi.test.ts sends each request example to the server.
const EXAMPLE_ID = '3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41';
const EXAMPLE_FIELDS: BikeFields = {
  title: 'Hybrid Bicycle Sentra',
  productType: 'Hybrid',
  createdAt: '2024-03-01T10:00:00Z',
  description: 'A comfortable hybrid for the city, with hydraulic disc brakes',
  vendor: 'Sentra Cycles',
  availableForSale: true,
  totalInventory: 12,
  priceRange: {
    minPrice: { amount: 499.99, currencyCode: 'USD' },
    maxPrice: { amount: 649.5, currencyCode: 'USD' },
  },
};
const EXAMPLE_BIKE: Bike = { id: EXAMPLE_ID, handle: deriveHandle(EXAMPLE_FIELDS.title), ...EXAMPLE_FIELDS };
const EXAMPLE_PATCH = { totalInventory: 7, availableForSale: false };
// An illustration only: a token of this shape, signed with no real secret.
const EXAMPLE_TOKEN =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ1c2VybmFtZSI6ImFsaWNlIiwiaWF0IjoxNzY0MDAwMDAwLCJleHAiOjE3NjQwMDE4MDB9.' +
  'c2lnbmF0dXJlLW9mLWFuLWV4YW1wbGUtdG9rZW4';

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

const json = (schema: JsonSchema, example?: unknown) => ({
  'application/json': { schema, ...(example !== undefined && { example }) },
});

const REQUEST_ID_HEADER = { 'X-Request-Id': ref('headers', 'RequestId') };

function ok(description: string, schema: JsonSchema, example: unknown) {
  return { description, headers: REQUEST_ID_HEADER, content: json(schema, example) };
}

/** The error responses: a status and its reason phrase as plain text, never JSON. */
const ERRORS = {
  400: ['BadRequest', 'Bad Request'],
  401: ['Unauthorized', 'Unauthorized'],
  403: ['Forbidden', 'Forbidden'],
  404: ['NotFound', 'Not Found'],
  413: ['PayloadTooLarge', 'Payload Too Large'],
  431: ['HeadersTooLarge', 'Request Header Fields Too Large'],
  503: ['ServiceUnavailable', 'Service Unavailable'],
} as const;
type ErrorStatus = keyof typeof ERRORS;

const ERROR_MEANINGS: Record<ErrorStatus, string> = {
  400: 'The request failed validation.',
  401: 'No bearer token: the Authorization header is missing or has no second element.',
  403: 'The token failed verification (tampered, another secret, expired, or not HS256).',
  404: 'No such bike (a path id that is not a UUID names no bike).',
  413: 'The body is larger than 1 MB; nothing is stored.',
  431: 'The request headers are larger than 256 KB. Answered before any route, with no body; the connection closes.',
  503: 'The database is not answering; retry (see Retry-After).',
};

/** The error responses of an operation: `statuses`, and 431, which any request can get. */
function errorResponses(statuses: ErrorStatus[], meanings: Partial<Record<ErrorStatus, string>> = {}) {
  return Object.fromEntries(
    [...statuses, 431 as const].map((status) => {
      const [name] = ERRORS[status];
      return [
        String(status),
        meanings[status] ? { ...ref('responses', name), description: meanings[status] } : ref('responses', name),
      ];
    }),
  );
}

const BEARER = [{ bearerAuth: [] }];
const PUBLIC: typeof BEARER = [];

const idParameter = ref('parameters', 'BikeId');

function bikeBody(schema: string, example: unknown, description: string) {
  return { required: true, description, content: json(ref('schemas', schema), example) };
}

function buildDocument() {
  const packageJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const bikeFromCreate = fromYup(describe(createBikeSchema), { top: true }) as {
    properties: Record<string, JsonSchema>;
    required: string[];
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Bike catalog',
      version: packageJson.version,
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
    paths: {
      '/bikes/all': {
        get: {
          tags: ['bikes'],
          operationId: 'listBikes',
          security: PUBLIC,
          summary: 'List every bike',
          description: 'Every bike, oldest first (creation order). No pagination: the array is streamed.',
          responses: {
            200: ok('Every bike', { type: 'array', items: ref('schemas', 'Bike') }, [EXAMPLE_BIKE]),
            ...errorResponses([503]),
          },
        },
      },
      '/bikes/{id}': {
        get: {
          tags: ['bikes'],
          operationId: 'getBike',
          security: PUBLIC,
          summary: 'Get a bike by id',
          parameters: [idParameter],
          responses: { 200: ok('The bike', ref('schemas', 'Bike'), EXAMPLE_BIKE), ...errorResponses([404, 503]) },
        },
        put: {
          tags: ['bikes'],
          operationId: 'replaceBike',
          summary: 'Replace a bike',
          description:
            'Stores the body under the path id (a body id is not used as the key; the handle is stored as given). ' +
            'A well-formed id with no bike creates it there. Every failure, including a body that fails ' +
            'validation, answers 404, as the specification says.',
          security: BEARER,
          parameters: [idParameter],
          requestBody: bikeBody('BikeReplacement', EXAMPLE_BIKE, 'All eight fields, and a non-empty id and handle.'),
          responses: {
            200: ok('The stored bike', ref('schemas', 'Bike'), EXAMPLE_BIKE),
            ...errorResponses([401, 403, 404, 413, 503], {
              404: 'Not a UUID, malformed JSON, or a body that fails validation.',
            }),
          },
        },
        patch: {
          tags: ['bikes'],
          operationId: 'updateBike',
          summary: 'Update some fields of a bike',
          description:
            'Writes only the fields in the body; each must be valid as on create (a priceRange must be complete). ' +
            'A body id is ignored; a handle is written as given; a new title does not change the handle.',
          security: BEARER,
          parameters: [idParameter],
          requestBody: {
            required: false,
            description: 'Any subset of the fields. No body is an empty patch.',
            content: {
              ...json(ref('schemas', 'BikePatch'), EXAMPLE_PATCH),
              'application/merge-patch+json': { schema: ref('schemas', 'BikePatch') },
            },
          },
          responses: {
            200: ok('The bike with the fields applied', ref('schemas', 'Bike'), { ...EXAMPLE_BIKE, ...EXAMPLE_PATCH }),
            ...errorResponses([400, 401, 403, 404, 413, 503], {
              400: 'A field has the wrong type, or the JSON is malformed. Nothing changes.',
            }),
          },
        },
        delete: {
          tags: ['bikes'],
          operationId: 'deleteBike',
          summary: 'Delete a bike',
          security: BEARER,
          parameters: [idParameter],
          responses: {
            200: ok('The id of the deleted bike', ref('schemas', 'DeletedBike'), { id: EXAMPLE_ID }),
            ...errorResponses([401, 403, 404, 503]),
          },
        },
      },
      '/bikes/by-handle/{handle}': {
        get: {
          tags: ['bikes'],
          operationId: 'getBikeByHandle',
          security: PUBLIC,
          summary: 'Get the first bike with a handle',
          description: 'Handles are not unique: the bike created first wins.',
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
          responses: { 200: ok('The bike', ref('schemas', 'Bike'), EXAMPLE_BIKE), ...errorResponses([404, 503]) },
        },
      },
      '/bikes/search/by-title': {
        get: {
          tags: ['bikes'],
          operationId: 'searchBikesByTitle',
          security: PUBLIC,
          summary: 'Search bikes by title',
          description: 'Case-sensitive substring match on the title, oldest first. `%`, `_` and `\\` match themselves.',
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
          responses: {
            200: ok('The matching bikes', { type: 'array', items: ref('schemas', 'Bike') }, [EXAMPLE_BIKE]),
            ...errorResponses([400, 503], {
              400: 'A failed search: `query` given more than once, or containing U+0000.',
            }),
          },
        },
      },
      '/bikes/': {
        post: {
          tags: ['bikes'],
          operationId: 'createBike',
          summary: 'Create a bike',
          description:
            'The server makes the id (UUID v4) and the handle (from the title); a body id or handle is ignored. ' +
            '`POST /bikes` is the same route.',
          security: BEARER,
          requestBody: bikeBody('NewBike', EXAMPLE_FIELDS, 'The eight client fields.'),
          responses: {
            200: ok('The created bike', ref('schemas', 'Bike'), EXAMPLE_BIKE),
            ...errorResponses([400, 401, 403, 413, 503], {
              400: 'No body, malformed JSON, or a body that fails validation.',
            }),
          },
        },
      },
      '/api/user': {
        post: {
          tags: ['tokens'],
          operationId: 'issueToken',
          security: PUBLIC,
          summary: 'Get a bearer token',
          description: 'No authentication. The token is an HS256 JWT carrying `username`, valid for 1800 seconds.',
          requestBody: {
            required: false,
            content: {
              ...json(ref('schemas', 'TokenRequest'), { username: 'alice' }),
              'application/x-www-form-urlencoded': { schema: ref('schemas', 'TokenRequest') },
            },
          },
          responses: {
            200: ok('A token', ref('schemas', 'Token'), { token: EXAMPLE_TOKEN }),
            ...errorResponses([400, 413], { 400: '`username` is present but not a string, or the JSON is malformed.' }),
          },
        },
      },
    },
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
        Object.entries(ERRORS).map(([status, [name, phrase]]) => [
          name,
          status === '431'
            ? { description: ERROR_MEANINGS[431] }
            : {
                description: ERROR_MEANINGS[Number(status) as ErrorStatus],
                headers: {
                  ...REQUEST_ID_HEADER,
                  ...(status === '503' && {
                    'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } },
                  }),
                },
                content: { 'text/plain': { schema: { type: 'string' }, example: phrase } },
              },
        ]),
      ),
      schemas: {
        Money: schemaFromYup(moneySchema, 'An amount and its currency.'),
        PriceRange: schemaFromYup(priceRangeSchema, 'The lowest and highest price.'),
        NewBike: schemaFromYup(createBikeSchema, `The eight fields a client sets. ${STRINGS_NOTE}`),
        BikeReplacement: schemaFromYup(
          replaceBikeSchema,
          `All eight fields, plus a non-empty id and handle. ${STRINGS_NOTE}`,
        ),
        BikePatch: schemaFromYup(patchBikeSchema, `Any subset of the fields, each valid as on create. ${STRINGS_NOTE}`),
        Bike: {
          description: 'A bike as the service returns it: exactly these fields, each as the client sent it.',
          type: 'object',
          properties: {
            id: { type: 'string', format: 'uuid' },
            handle: { type: 'string' },
            ...bikeFromCreate.properties,
          },
          required: ['id', 'handle', ...bikeFromCreate.required],
          additionalProperties: false,
        },
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

export type OpenApiDocument = ReturnType<typeof buildDocument>;

let built: OpenApiDocument | undefined;

/** The document, built once. */
export function openApiDocument(): OpenApiDocument {
  built ??= buildDocument();
  return built;
}

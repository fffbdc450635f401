import { bike } from '../bikes/bike';
import { toJsonSchema, type JsonSchema } from '../http/json-schema';
import { openApiDocument } from '../http/openapi';
import { EXAMPLE_BIKE, ref } from './bike-json';
import { API_ROUTES } from './index';

/**
 * The API's OpenAPI 3.1 document, served at GET /openapi.json (docs-router.ts): its operations
 * from their declarations (openapi.ts), and what the API says of itself beside them.
 * test/ops/openapi.test.ts checks it against the running service.
 */

const STRINGS_NOTE =
  'Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. ' +
  'Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored.';

/** The error responses, each a status and its reason phrase as plain text, never JSON; what each means. */
const ERRORS = {
  400: 'The request failed validation.',
  401: 'No bearer token: the Authorization header is missing or has no second element.',
  403: 'The token failed verification (tampered, another secret or key, expired, an algorithm or issuer not accepted, or living over 1800 s).',
  404: 'No such bike (a path id that is not a UUID names no bike).',
  409: 'Conflict: another request with the same Idempotency-Key is still running; retry after Retry-After seconds.',
  410: 'Gone: the cursor is older than what is kept, or of another history of the catalog; list again.',
  412: 'A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists, or it names the state the bike is in). Nothing changed.',
  413: 'The body is larger than 1 MB; nothing is stored.',
  415: 'The body is in a Content-Encoding the service cannot decode (see Accept-Encoding); nothing is stored.',
  422: 'The Idempotency-Key was used before with other fields; nothing is stored.',
  429: 'Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds.',
  503: 'What the service needs is not answering (the database; for a token of the identity provider, its key set), and nothing was written; retry after Retry-After seconds.',
  504: 'The database stopped answering while the write ran (`Write-Outcome: unknown`): it may or may not have been applied. Read the bike named in Content-Location to know; retry a POST only with the same Idempotency-Key, other writes with If-Match.',
} as const;

/** The bike's schemas, which the request bodies refer to too. */
function bikeSchemas(): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  schemas.Bike = {
    description: 'A bike as the service returns it: exactly these fields, each as the client sent it.',
    ...toJsonSchema(bike, schemas),
    additionalProperties: false,
  };
  return {
    ...schemas,
    Money: { description: 'An amount and its currency.', ...schemas.Money },
    PriceRange: { description: 'The lowest and highest price.', ...schemas.PriceRange },
  };
}

/** The schemas only answers use. */
const ANSWER_SCHEMAS: Record<string, JsonSchema> = {
  Change: {
    description: 'A change to the catalog: an upsert carries the bike as it is after it; a delete, its id.',
    type: 'object',
    properties: {
      cursor: { type: 'string', description: 'Where to go on from, as `since`: opaque.' },
      type: { type: 'string', enum: ['upsert', 'delete'] },
      id: { type: 'string', format: 'uuid' },
      bike: ref('Bike'),
    },
    required: ['cursor', 'type', 'id'],
    additionalProperties: false,
  },
  DeletedBike: {
    type: 'object',
    properties: { id: { type: 'string', format: 'uuid' } },
    required: ['id'],
    additionalProperties: false,
  },
  Token: {
    type: 'object',
    properties: { token: { type: 'string', description: 'A signed JSON Web Token (HS256), valid for 1800 s.' } },
    required: ['token'],
    additionalProperties: false,
  },
};

/** The document, made anew at each call (the docs router keeps the one it serves). */
export function apiDocument() {
  return openApiDocument({
    routes: API_ROUTES,
    info: {
      title: 'Bike catalog',
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'A catalog of bikes. Reads are open; creating, replacing, updating and deleting need a bearer token ' +
        'from `POST /api/user` (or, where the operator has closed it, from the operator or an identity ' +
        'provider). Failures are a status code with its reason phrase as plain text, never a JSON body. ' +
        'Every response carries an `X-Request-Id` (yours when you send a short plain one). HEAD works ' +
        'wherever GET does; a known path asked with another method answers 405 with an `Allow` header.',
    },
    tags: [
      { name: 'bikes', description: 'The catalog' },
      { name: 'tokens', description: 'Bearer tokens for the write operations' },
      { name: 'operations', description: "For operators and this document's page, beside the API" },
    ],
    tagOf: (route) => (route.path.startsWith('/bikes') ? 'bikes' : 'tokens'),
    errors: ERRORS,
    pathParameters: {
      id: { $ref: '#/components/parameters/BikeId' },
      handle: {
        name: 'handle',
        in: 'path',
        required: true,
        description: 'The handle: the title with spaces turned into dashes, lowercased.',
        schema: { type: 'string' },
        example: EXAMPLE_BIKE.handle,
      },
    },
    bodyNote: STRINGS_NOTE,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'Authorization: Bearer <token>, the token from POST /api/user; where the operator has closed it, ' +
            "one from the operator or the shop's identity provider.",
        },
      },
      parameters: {
        BikeId: {
          name: 'id',
          in: 'path',
          required: true,
          description: 'The bike id. A value that is not a UUID names no bike: 404.',
          schema: { type: 'string', format: 'uuid' },
          example: EXAMPLE_BIKE.id,
        },
      },
      schemas: bikeSchemas(),
      answerSchemas: ANSWER_SCHEMAS,
    },
  });
}

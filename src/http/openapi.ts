import fs from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { bike } from '../bikes/bike';
import { describe, exampleOf } from '../bikes/yup';
import { API_ROUTES } from './api-routes';
import { HEADERS, type HeaderName } from './headers';
import { fromDescription, type JsonSchema, toJsonSchema } from './json-schema';
import { type ErrorStatus, headersOf, type RouteDeclaration } from './route';

/**
 * The OpenAPI 3.1 description of the nine operations, served at GET /openapi.json, made from
 * their declarations (api-routes.ts): the request schemas are converted from the yup schemas
 * the routes validate with, and each operation's error statuses follow from what its route
 * declares. test/ops/openapi.test.ts checks the document against the running service.
 */

const STRINGS_NOTE =
  'Strings may not contain U+0000 or a lone UTF-16 surrogate; numbers are any finite JSON number. ' +
  'Types are strict: "5" is not a number and "true" is not a boolean. Unknown fields are ignored.';

const EXAMPLE_ID = exampleOf(bike).id;

const ref = (kind: 'schemas' | 'parameters', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});
const json = (schema: JsonSchema, example?: unknown): Record<string, unknown> => ({
  'application/json': { schema, ...(example !== undefined && { example }) },
});
/** A header as the document describes it, from its one declaration (headers.ts). */
function headerObject(name: HeaderName): Record<string, unknown> {
  const { description, schema } = HEADERS[name];
  const example = 'example' in HEADERS[name] ? HEADERS[name].example : undefined;
  return { description, schema, ...(example !== undefined && { example }) };
}
const headerObjects = (names: HeaderName[]) => Object.fromEntries(names.map((name) => [name, headerObject(name)]));

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
} as const satisfies Record<ErrorStatus, string>;

/** Any request can get it: node's HTTP parser answers it before any route, with no body. */
const HEADERS_TOO_LARGE = {
  description: 'The request headers are larger than 256 KB; the connection closes.',
};

/** The error responses of an operation, each with the headers it carries (headersOf, route.ts). */
function errorResponses(route: RouteDeclaration<unknown>) {
  const responses: Record<string, unknown> = {};
  for (const [status, headers] of headersOf(route).errors) {
    responses[status] = {
      description: route.meanings?.[status] ?? ERRORS[status],
      headers: headerObjects(headers),
      content: { 'text/plain': { schema: { type: 'string' }, example: STATUS_CODES[status] } },
    };
  }
  return { ...responses, 431: HEADERS_TOO_LARGE };
}

const PATH_PARAMETERS: Record<string, unknown> = {
  id: ref('parameters', 'BikeId'),
  handle: {
    name: 'handle',
    in: 'path',
    required: true,
    description: 'The handle: the title with spaces turned into dashes, lowercased.',
    schema: { type: 'string' },
    example: exampleOf(bike).handle,
  },
};
/** A 304 carries what its 200 would have of the validators. */
const NOT_MODIFIED = {
  description: 'Not Modified: the If-None-Match ETag is still current; no body.',
  headers: headerObjects(['X-Request-Id', 'ETag', 'Cache-Control']),
};

/** Request headers that are not parameters: the security scheme's, and the body's type. */
const NOT_PARAMETERS = new Set<HeaderName>(['Authorization', 'Content-Type']);

/** The OpenAPI path of a route's: /bikes/{id} for /bikes/:id. */
const openApiPath = (routePath: string) => routePath.replace(/:(\w+)/g, '{$1}');

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

  const paths: Record<string, Record<string, unknown>> = {};
  const routes: Record<string, RouteDeclaration<unknown>> = API_ROUTES;
  for (const [operationId, route] of Object.entries(routes)) {
    const urlPath = openApiPath(route.path);
    const inputs = describe(route.input).fields ?? {};
    const queryFields = inputs.query?.fields ?? {};
    const queryParameters = Object.entries(route.queryParameters ?? {}).map(([name, { description, example }]) => ({
      name,
      in: 'query',
      required: !queryFields[name].optional,
      description,
      schema: fromDescription(queryFields[name]),
      example,
    }));
    const headerFields = inputs.headers?.fields ?? {};
    const headers = headersOf(route);
    const headerParameters = headers.request
      .filter((name) => !NOT_PARAMETERS.has(name))
      .map((name) => {
        const checked = headerFields[name.toLowerCase()];
        const { description, schema, ...rest } = headerObject(name);
        return {
          name,
          in: 'header',
          required: checked ? !checked.optional : false,
          description,
          schema: checked ? fromDescription(checked) : schema,
          ...rest,
        };
      });
    const pathParameters = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => PATH_PARAMETERS[name]);
    // The reads of the catalog: conditional (ETag, 304), and from a replica unless told otherwise.
    const read = route.method === 'get';
    const parameters = [...pathParameters, ...queryParameters, ...headerParameters];
    const body = route.requestBody;
    if (body && inputs.body) {
      const note = route.database === false ? '' : ` ${STRINGS_NOTE}`;
      schemas[body.name] = { description: `${body.description}${note}`, ...fromDescription(inputs.body, schemas) };
    }
    paths[urlPath] ??= {};
    paths[urlPath][route.method] = {
      tags: [route.path.startsWith('/bikes') ? 'bikes' : 'tokens'],
      operationId,
      security: route.token ? [{ bearerAuth: [] }] : [],
      summary: route.summary,
      ...(route.description && { description: route.description }),
      ...(parameters.length > 0 && { parameters }),
      ...(body && {
        requestBody: {
          required: body.required ?? true,
          description: body.description,
          content: Object.fromEntries(
            (body.mediaTypes ?? ['application/json']).map((type, i) => [
              type,
              { schema: ref('schemas', body.name), ...(i === 0 && { example: body.example }) },
            ]),
          ),
        },
      }),
      responses: {
        200: {
          description: route.ok.description,
          headers: headerObjects(headers.ok),
          content: {
            ...json(route.ok.schema, route.ok.example),
            ...(route.eventStream && {
              'text/event-stream': {
                schema: { type: 'string', description: route.eventStream.description },
                example: route.eventStream.example,
              },
            }),
          },
        },
        ...(read && { 304: NOT_MODIFIED }),
        ...errorResponses(route),
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
        'from `POST /api/user` (or, where the operator has closed it, from the operator or an identity ' +
        'provider). Failures are a status code with its reason phrase as plain text, never a JSON body. ' +
        'Every response carries an `X-Request-Id` (yours when you send a short plain one). HEAD works ' +
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
          example: EXAMPLE_ID,
        },
      },
      schemas: {
        ...schemas,
        Money: { description: 'An amount and its currency.', ...schemas.Money },
        PriceRange: { description: 'The lowest and highest price.', ...schemas.PriceRange },
        Change: {
          description: 'A change to the catalog: an upsert carries the bike as it is after it; a delete, its id.',
          type: 'object',
          properties: {
            cursor: { type: 'string', description: 'Where to go on from, as `since`: opaque.' },
            type: { type: 'string', enum: ['upsert', 'delete'] },
            id: { type: 'string', format: 'uuid' },
            bike: ref('schemas', 'Bike'),
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

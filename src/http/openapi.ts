import fs from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import { bike } from '../bikes/bike';
import { describe, exampleOf } from '../bikes/yup';
import { API_ROUTES } from './api-routes';
import { ACCEPTED_CONTENT_CODINGS } from './body';
import { INVALID_FIELD_HEADER } from './invalid-field';
import { fromDescription, type JsonSchema, toJsonSchema } from './json-schema';
import { BEARER_CHALLENGE, type ErrorStatus, hasBody, type RouteDeclaration } from './route';

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

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});
const json = (schema: JsonSchema, example?: unknown): Record<string, unknown> => ({
  'application/json': { schema, ...(example !== undefined && { example }) },
});
const REQUEST_ID_HEADER = { 'X-Request-Id': ref('headers', 'RequestId') };
/** On a 400 (src/http/invalid-field.ts). */
const INVALID_FIELD = {
  [INVALID_FIELD_HEADER]: {
    description:
      'The first field that failed, in the order of its schema: its dotted path in the body as sent ' +
      '(`priceRange.minPrice.amount`), or the name of the query parameter (`query`) or request header ' +
      '(`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media ' +
      'type or charset that cannot be read, or a value the database refuses.',
    schema: { type: 'string' },
    example: 'priceRange.minPrice.amount',
  },
};

/** On every 401 (route.ts): what to send. */
const BEARER_CHALLENGE_HEADER = {
  'WWW-Authenticate': {
    description: 'The challenge: a bearer token, from `POST /api/user`.',
    required: true,
    schema: { type: 'string', const: BEARER_CHALLENGE },
  },
};

/** On every 415 (body.ts): the codings a body may come in. */
const ACCEPT_ENCODING_HEADER = {
  'Accept-Encoding': {
    description: 'The content codings a request body may be sent in.',
    required: true,
    schema: { type: 'string', const: ACCEPTED_CONTENT_CODINGS },
  },
};

/** The error responses, each a status and its reason phrase as plain text, never JSON; what each means. */
const ERRORS = {
  400: 'The request failed validation.',
  401: 'No bearer token: the Authorization header is missing or has no second element.',
  403: 'The token failed verification (tampered, another secret, expired, not HS256, or living over 1800 s).',
  404: 'No such bike (a path id that is not a UUID names no bike).',
  409: 'Conflict: another request with the same Idempotency-Key is still running.',
  412: 'A precondition failed (If-Match names another state of the bike, or none; If-None-Match: * and the bike exists). Nothing changed.',
  413: 'The body is larger than 1 MB; nothing is stored.',
  415: 'The body is in a Content-Encoding the service cannot decode (see Accept-Encoding); nothing is stored.',
  422: 'The Idempotency-Key was used before with other fields; nothing is stored.',
  429: 'Over an abuse limit of this client (tokens or writes per minute, lists at once); retry after Retry-After seconds.',
  503: 'The database is not answering; retry (see Retry-After).',
} as const satisfies Record<ErrorStatus, string>;
/** The component of an error response: its reason phrase without spaces (NotFound). */
const errorName = (status: number) => (STATUS_CODES[status] as string).replaceAll(' ', '');

/** Any request can get it: node's HTTP parser answers it before any route, with no body. */
const HEADERS_TOO_LARGE = {
  description: 'The request headers are larger than 256 KB; the connection closes.',
};

/**
 * The error statuses of an operation, from its declaration: 401 and 403 with a token; 413, 415
 * and the status for bad input with a body; that status with query parameters; 404 with a path
 * parameter (an id that is not a UUID, a handle no bike has); 503 where the database is needed.
 */
function errorResponses(route: RouteDeclaration<unknown>) {
  const statuses = new Set<ErrorStatus>();
  const invalid = route.invalid ?? 404;
  if (route.token) [401, 403].forEach((s) => statuses.add(s as ErrorStatus));
  if (hasBody(route)) [413, 415, invalid].forEach((s) => statuses.add(s as ErrorStatus));
  if (route.queryParameters) statuses.add(invalid);
  if (route.path.includes('/:')) statuses.add(404);
  if (route.preconditions) statuses.add(412);
  for (const status of route.alsoAnswers ?? []) statuses.add(status);
  if (route.limit) statuses.add(429);
  if (route.database !== false) statuses.add(503);
  const responses: Record<string, unknown> = {};
  for (const status of [...statuses].sort()) {
    const name = errorName(status);
    const meaning = route.meanings?.[status];
    responses[status] = meaning ? { ...ref('responses', name), description: meaning } : ref('responses', name);
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
    description:
      'A list; an element `primary` reads from the primary database, to see your own writes at once ' +
      '(see Scaling). Other values are ignored.',
    schema: { type: 'string' },
    example: 'primary',
  },
];
/** If-Match and If-None-Match on the writes that honour them (src/http/conditional.ts). */
const PRECONDITION_PARAMETERS = [
  {
    name: 'If-Match',
    in: 'header',
    required: false,
    description:
      'Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or ' +
      '`*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes.',
    schema: { type: 'string' },
  },
  {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: '`*`: write only if there is no such bike (on PUT, create only). Otherwise 412.',
    schema: { type: 'string', enum: ['*'] },
  },
];
/** On every answer of a route limited per minute (rule 28): the IETF httpapi draft's headers. */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    description: 'The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client).',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`.',
    schema: { type: 'string' },
  },
};
const REPLAYED = {
  'Idempotent-Replayed': {
    description: '`true` on an answer given again for an Idempotency-Key seen before (nothing was created).',
    schema: { type: 'string', enum: ['true'] },
  },
};
const WRITTEN_ETAG = {
  ETag: {
    description: 'The strong ETag of the bike as written: send it in If-Match to write over exactly this state.',
    schema: { type: 'string' },
  },
};
const READ_HEADERS = {
  ETag: {
    description:
      "This representation's ETag: strong for a bike (its state; send it in If-Match), weak for a list. A " +
      'compressed answer\'s strong tag ends in its coding (`-gzip"`, `-br"`), and stands for the same state.',
    schema: { type: 'string' },
  },
  'Cache-Control': { description: '`no-cache`: revalidate before using a stored copy.', schema: { type: 'string' } },
  'X-Stale': {
    description:
      'Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit ' +
      'the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes.',
    schema: { type: 'string' },
  },
};
const NOT_MODIFIED = {
  description: 'Not Modified: the If-None-Match ETag is still current; no body.',
  headers: { ...REQUEST_ID_HEADER, ETag: READ_HEADERS.ETag },
};

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
    const headerParameters = Object.entries(route.headerParameters ?? {}).map(([name, { description, example }]) => ({
      name,
      in: 'header',
      required: !headerFields[name.toLowerCase()].optional,
      description,
      schema: fromDescription(headerFields[name.toLowerCase()]),
      example,
    }));
    const pathParameters = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => PATH_PARAMETERS[name]);
    // The reads of the catalog: conditional (ETag, 304), and from a replica unless told otherwise.
    const read = route.method === 'get';
    const parameters = [
      ...pathParameters,
      ...queryParameters,
      ...headerParameters,
      ...(read ? READ_PARAMETERS : []),
      ...(route.preconditions ? PRECONDITION_PARAMETERS : []),
    ];
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
          headers: {
            ...REQUEST_ID_HEADER,
            ...(read && READ_HEADERS),
            ...(route.writesBike && WRITTEN_ETAG),
            ...(route.headerParameters?.['Idempotency-Key'] && REPLAYED),
            ...((route.limit === 'tokens' || route.limit === 'writes') && RATE_LIMIT_HEADERS),
          },
          content: json(route.ok.schema, route.ok.example),
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
              ...(status === '400' && INVALID_FIELD),
              ...(status === '401' && BEARER_CHALLENGE_HEADER),
              ...(status === '415' && ACCEPT_ENCODING_HEADER),
              ...((status === '503' || status === '429') && {
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

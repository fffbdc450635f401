import * as yup from 'yup';
import { bike, bikeFields, patch, replacement } from '../bikes/bike';
import { type PageFilters, SORTS } from '../bikes/pages';
import { exampleOf } from '../bikes/yup';
import type { RouteDeclaration } from './route';

/**
 * The API's operations, each declared once: method, path, token, input schema, the status
 * for bad input, and what it answers. The router (routerOf in route.ts) mounts them with their
 * handlers (bike-handlers.ts, token-handlers.ts); the OpenAPI document (openapi.ts) describes
 * them. The order is the document's.
 */

// yup's default type-error message prints the value with JSON.stringify, which overflows the
// stack on a deeply nested body ([[[...]]]): these schemas use a fixed message.
const WRONG_TYPE = '${path} has the wrong type';

/** A route's input: its request body and query parameters, each checked by its own schema. */
const input = <Shape extends yup.ObjectShape>(shape: Shape) => yup.object(shape).typeError(WRONG_TYPE).strict();

const NO_INPUT = input({});

/** POST /api/user: `username` is optional and any string (it is only signed into the token). */
const tokenRequest = yup
  .object({
    username: yup.string().typeError(WRONG_TYPE).strict().meta({ description: 'Carried in the token. Optional.' }),
  })
  .typeError(WRONG_TYPE)
  .strict()
  .defined();

/** A page size: 1 to the most a route gives at once. */
const pageSize = (max: number) =>
  yup.number().typeError(WRONG_TYPE).strict().integer('${path} is not a whole number').min(1).max(max);

/** The most changes one page of the feed gives. */
const MAX_CHANGES_PAGE = 1000;
/** The changes a page of GET /bikes/changes gives when the client does not say. */
export const DEFAULT_CHANGES_PAGE = 100;

/** A cursor the service gave, as a client sends it back. */
const cursor = () => yup.string().typeError(WRONG_TYPE).strict().min(1);

/** GET /bikes/changes: where to go on from, and how many at most (a page; a stream gives every change). */
const changesQuery = yup.object({ since: cursor(), limit: pageSize(MAX_CHANGES_PAGE) });

/** Text in a query string: any but U+0000, which PostgreSQL cannot hold. */
const queryText = () =>
  yup
    .string()
    .typeError(WRONG_TYPE)
    .strict()
    // eslint-disable-next-line no-control-regex -- U+0000 is exactly what it excludes
    .matches(/^[^\u0000]*$/, '${path} contains U+0000');

/** The most bikes one page of GET /bikes gives, and how many when the client does not say. */
const MAX_PAGE = 250;
export const DEFAULT_PAGE = 24;

/** GET /bikes's filters, one schema each (pages.ts says what each means in SQL). */
const pageFilters = {
  vendor: queryText(),
  productType: queryText(),
  availableForSale: yup.boolean().typeError(WRONG_TYPE).strict(),
  inStock: yup.boolean().typeError(WRONG_TYPE).strict(),
  currency: queryText(),
  minPrice: yup.number().typeError(WRONG_TYPE).strict(),
  maxPrice: yup.number().typeError(WRONG_TYPE).strict(),
  titleContains: queryText(),
} satisfies Record<keyof PageFilters, yup.Schema<unknown>>;

const browseParameters = {
  ...pageFilters,
  sort: yup.string().typeError(WRONG_TYPE).strict().oneOf(SORTS),
  limit: pageSize(MAX_PAGE),
  cursor: yup.string().typeError(WRONG_TYPE).strict().min(1),
};

/** A parameter's name as X-Invalid-Field may carry it: a plain name, never other bytes of the client's. */
const PLAIN_NAME = /^[A-Za-z0-9_.[\]-]{1,64}$/;

/**
 * GET /bikes's query: its parameters, a price range only with its currency, and no parameter it
 * does not know (a misspelt filter would otherwise widen the answer without a word).
 */
const browseQuery = yup
  .object(browseParameters)
  .test('price range in a currency', (query, context) =>
    query.currency === undefined && (query.minPrice ?? query.maxPrice) !== undefined
      ? context.createError({ path: `${context.path}.currency`, message: '${path} is required with a price range' })
      : true,
  )
  .test('known parameters', (query, context) => {
    const unknown = Object.keys(query).find((name) => !Object.hasOwn(browseParameters, name));
    if (unknown === undefined) return true;
    const named = PLAIN_NAME.test(unknown) ? `.${unknown}` : '';
    return context.createError({ path: `${context.path}${named}`, message: 'an unknown parameter' });
  });

/** The search term: one `query` parameter (given twice it is a list, and refused), without U+0000. */
const searchQuery = yup.object({
  query: yup
    .string()
    .typeError(WRONG_TYPE)
    .strict()
    // eslint-disable-next-line no-control-regex -- U+0000 is exactly what it excludes
    .matches(/^[^\u0000]*$/),
});

/**
 * Idempotency-Key (docs/decisions.md#idempotency-keys): the client's name for one create, as
 * sent, 1 to 255 visible ASCII characters; no comma, so a key sent twice (which arrives joined by
 * one) is refused.
 */
const idempotencyKey = yup
  .string()
  .typeError(WRONG_TYPE)
  .strict()
  .matches(/^[\x21-\x2b\x2d-\x7e]{1,255}$/, '${path} is not a key');

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const BIKE = ref('Bike');
const BIKES = { type: 'array', items: BIKE };
const CHANGES = { type: 'array', items: ref('Change') };

// Examples, from those the bike's fields carry. test/ops/openapi.test.ts sends each request example to the server.
const EXAMPLE_FIELDS = exampleOf(bikeFields);
const EXAMPLE_BIKE = exampleOf(bike);
const EXAMPLE_PATCH = { totalInventory: 7, availableForSale: false };
const EXAMPLE_CURSOR = 'eyJrIjoiZmVlZCIsImkiOiJBQkNEIiwidCI6IkVGR0giLCJwIjpbIjc0MiIsIjEzIl19.c2lnbmF0dXJlLW9mLWl0';
const EXAMPLE_PAGE_CURSOR = 'eyJrIjoicGFnZSIsInMiOiJwcmljZSIsImEiOlsiVVNEIiwiNDk5Ljk5Il0sInEiOiI0MiJ9.c2lnbmF0dXJl';
const EXAMPLE_CHANGE = { cursor: EXAMPLE_CURSOR, type: 'upsert', id: EXAMPLE_BIKE.id, bike: EXAMPLE_BIKE };
const EXAMPLE_EVENTS = `retry: 2417\n\nid: ${EXAMPLE_CURSOR}\ndata: ${JSON.stringify(EXAMPLE_CHANGE)}\n\n: keep-alive\n\n`;
// An illustration only: a token of this shape, signed with no real secret.
const EXAMPLE_TOKEN =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.' +
  'eyJ1c2VybmFtZSI6ImFsaWNlIiwiaWF0IjoxNzY0MDAwMDAwLCJleHAiOjE3NjQwMDE4MDAsImp0aSI6IjhKMW5CcTN2UzBtWWwybzRjWjV5U2cifQ.' +
  'c2lnbmF0dXJlLW9mLWFuLWV4YW1wbGUtdG9rZW4';

export const API_ROUTES = {
  browseBikes: {
    method: 'get',
    path: '/bikes',
    summary: 'Browse bikes: filtered, sorted, a page at a time',
    description:
      `A page of bikes (${DEFAULT_PAGE} unless \`limit\` says, at most ${MAX_PAGE}) that pass every filter given, ` +
      'in the order `sort` names. While another page follows, `Link: <...>; rel="next"` gives its address, with ' +
      'the cursor that starts it (keyset: each page costs the same however deep). `GET /bikes/` is the same route.',
    input: input({ query: browseQuery }),
    invalid: 400,
    queryParameters: {
      vendor: { description: 'Only this vendor (the whole string, case-sensitive).', example: 'Sentra Cycles' },
      productType: { description: 'Only this product type (the whole string, case-sensitive).', example: 'Hybrid' },
      availableForSale: { description: '`true` or `false`.', example: true },
      inStock: { description: '`true`: totalInventory above 0; `false`: 0 or less.', example: true },
      currency: {
        description: "The minimum price's currency code; required with `minPrice` or `maxPrice`.",
        example: 'USD',
      },
      minPrice: { description: 'The minimum price at least this (in `currency`).', example: 100 },
      maxPrice: { description: 'The minimum price at most this (in `currency`).', example: 1000 },
      titleContains: {
        description: 'The title contains this text (case-sensitive; `%`, `_` and `\\` match themselves).',
        example: 'Hybrid',
      },
      sort: {
        description:
          'The order: `created` (insertion order, the default), `title` (its first 200 characters, by code ' +
          'point), `price` (by currency, then minimum price), `updatedAt` (when last changed); `-` before any ' +
          'reverses it. Ties go by insertion order.',
        example: 'price',
      },
      limit: { description: `Bikes per page, 1 to ${MAX_PAGE}; ${DEFAULT_PAGE} when absent.`, example: DEFAULT_PAGE },
      cursor: {
        description: 'Where the page starts: from the `Link` of the page before. Only with the same sort and filters.',
        example: EXAMPLE_PAGE_CURSOR,
      },
    },
    responseHeaders: ['Catalog-Cursor', 'Link'],
    ok: { description: 'A page of bikes', schema: BIKES, example: [EXAMPLE_BIKE] },
    meanings: {
      400:
        'A parameter that is not valid (`X-Invalid-Field` names it), a price range without `currency`, a parameter ' +
        'the route does not know, or a cursor of another sort or other filters, or not of this service.',
    },
  },
  listBikes: {
    method: 'get',
    path: '/bikes/all',
    summary: 'List every bike',
    description: 'Every bike, oldest first (creation order). No pagination: the array is streamed.',
    limit: 'listStreams',
    input: NO_INPUT,
    responseHeaders: ['Catalog-Cursor'],
    ok: { description: 'Every bike', schema: BIKES, example: [EXAMPLE_BIKE] },
  },
  bikeChanges: {
    method: 'get',
    path: '/bikes/changes',
    summary: 'Follow the changes to the catalog',
    description:
      'The changes after a cursor, oldest first: each an `upsert` (the whole bike as it is after it) or a ' +
      "`delete` (its id), with the cursor to go on from. Pass the last one's `cursor` as `since` for the next " +
      'page; `[]` means caught up. Without `since`, from the oldest change kept. Every list answers with ' +
      '`Catalog-Cursor`, the point its rows are consistent with: follow from it and nothing is missed or repeated. ' +
      "A bike's changes come in the order they were committed, and a change comes only once no transaction that " +
      'could still write one before it is running. A cursor older than what is kept, or of another history of the ' +
      'catalog (a restore), is 410: list again. With `Accept: text/event-stream` (an EventSource), the same ' +
      'changes as Server-Sent Events, as they commit, through any instance.',
    input: input({ query: changesQuery, headers: yup.object({ 'last-event-id': cursor() }) }),
    invalid: 400,
    queryParameters: {
      since: {
        description: 'A cursor from a change or a Catalog-Cursor header. Absent: from the start.',
        example: EXAMPLE_CURSOR,
      },
      limit: {
        description: `The most changes a page gives, 1 to ${MAX_CHANGES_PAGE}; ${DEFAULT_CHANGES_PAGE} when absent. A stream gives them all.`,
        example: DEFAULT_CHANGES_PAGE,
      },
    },
    responseHeaders: ['Catalog-Cursor'],
    alsoAnswers: [410],
    eventStream: {
      description:
        'Each change as an event once it has committed (on any instance): `id` its cursor, `data` the change as ' +
        'a page gives it. An EventSource resumes after the last event it got (Last-Event-ID). A comment every ' +
        '15 s keeps proxies from closing the stream; a `retry:` line says when to reconnect, at its start and ' +
        'when the server ends it (shutting down, or the log no longer followable from it: reconnecting then ' +
        'gives 503 or 410).',
      example: EXAMPLE_EVENTS,
    },
    ok: { description: 'The changes, oldest first', schema: CHANGES, example: [EXAMPLE_CHANGE] },
    meanings: {
      400:
        '`since` or `Last-Event-ID` is not a cursor of this service (tampered, or of a sort of page), or `limit` is ' +
        'not 1 to 1000.',
      410: 'The cursor is older than the changes kept, or of another history of the catalog: list again.',
      429: 'This client has as many event streams open on this instance as it may; retry after Retry-After seconds.',
      503:
        'The database is not answering, or a capture trigger is off (the log may lack changes), or this instance ' +
        'has as many event streams open as it takes; retry after Retry-After seconds.',
    },
  },
  getBike: {
    method: 'get',
    path: '/bikes/:id',
    summary: 'Get a bike by id',
    input: NO_INPUT,
    ok: { description: 'The bike', schema: BIKE, example: EXAMPLE_BIKE },
  },
  replaceBike: {
    method: 'put',
    path: '/bikes/:id',
    summary: 'Replace a bike',
    description:
      'Stores the body under the path id (a body id is not used as the key; the handle is stored as given). ' +
      'A well-formed id with no bike creates it there. Every failure, including a body that fails ' +
      'validation, answers 404, as the specification says; a body in a Content-Encoding the service ' +
      'cannot decode is no failure of the replace, but an unsupported media: 415.',
    token: true,
    limit: 'writes',
    input: input({ body: replacement }),
    // Every failure of a replace is a 404, as the specification says.
    invalid: 404,
    preconditions: true,
    writesBike: true,
    requestBody: {
      name: 'BikeReplacement',
      description: 'All eight fields, plus a non-empty id and handle.',
      example: EXAMPLE_BIKE,
    },
    ok: { description: 'The stored bike', schema: BIKE, example: EXAMPLE_BIKE },
    meanings: { 404: 'Not a UUID, malformed JSON, or a body that fails validation.' },
  },
  updateBike: {
    method: 'patch',
    path: '/bikes/:id',
    summary: 'Update some fields of a bike',
    description:
      'Writes only the fields in the body; each must be valid as on create (a priceRange must be complete). ' +
      'A body id is ignored; a handle is written as given; a new title does not change the handle. No body is ' +
      'an empty patch.',
    token: true,
    limit: 'writes',
    input: input({ body: patch }),
    invalid: 400,
    // The bike must exist before its fields are judged: a missing bike is 404 first
    // (docs/decisions.md#partial-update-patch).
    bikeBeforeBody: true,
    preconditions: true,
    writesBike: true,
    requestBody: {
      name: 'BikePatch',
      description: 'Any subset of the fields, each valid as on create.',
      example: EXAMPLE_PATCH,
      required: false,
      mediaTypes: ['application/json', 'application/merge-patch+json'],
    },
    ok: {
      description: 'The bike with the fields applied',
      schema: BIKE,
      example: { ...EXAMPLE_BIKE, ...EXAMPLE_PATCH },
    },
    meanings: { 400: 'A field has the wrong type, or the JSON is malformed. Nothing changes.' },
  },
  deleteBike: {
    method: 'delete',
    path: '/bikes/:id',
    summary: 'Delete a bike',
    token: true,
    limit: 'writes',
    input: NO_INPUT,
    preconditions: true,
    ok: { description: 'The id of the deleted bike', schema: ref('DeletedBike'), example: { id: EXAMPLE_BIKE.id } },
  },
  getBikeByHandle: {
    method: 'get',
    path: '/bikes/by-handle/:handle',
    summary: 'Get the first bike with a handle',
    description: 'Handles are not unique: the bike created first wins.',
    input: NO_INPUT,
    ok: { description: 'The bike', schema: BIKE, example: EXAMPLE_BIKE },
  },
  searchBikesByTitle: {
    method: 'get',
    path: '/bikes/search/by-title',
    summary: 'Search bikes by title',
    description: 'Case-sensitive substring match on the title, oldest first. `%`, `_` and `\\` match themselves.',
    limit: 'listStreams',
    input: input({ query: searchQuery }),
    invalid: 400,
    queryParameters: {
      query: {
        description: 'The text to look for. Missing or empty: every bike. Given twice, or with U+0000: 400.',
        example: 'Hybrid',
      },
    },
    responseHeaders: ['Catalog-Cursor'],
    ok: { description: 'The matching bikes', schema: BIKES, example: [EXAMPLE_BIKE] },
    meanings: { 400: 'A failed search: `query` given more than once, or containing U+0000.' },
  },
  createBike: {
    method: 'post',
    path: '/bikes/',
    summary: 'Create a bike',
    description:
      'The server makes the id (UUID v4) and the handle (from the title); a body id or handle is ignored. ' +
      '`POST /bikes` is the same route.',
    token: true,
    limit: 'writes',
    input: input({ body: bikeFields, headers: yup.object({ 'idempotency-key': idempotencyKey }) }),
    invalid: 400,
    writesBike: true,
    requestHeaders: ['Idempotency-Key'],
    responseHeaders: ['Idempotent-Replayed'],
    alsoAnswers: [409, 422],
    requestBody: { name: 'NewBike', description: 'The eight client fields.', example: EXAMPLE_FIELDS },
    ok: { description: 'The created bike', schema: BIKE, example: EXAMPLE_BIKE },
    meanings: {
      400: 'No body, malformed JSON, a body that fails validation, or an Idempotency-Key that is not one.',
      409: 'A request with this Idempotency-Key is still running; retry later.',
      422: 'This Idempotency-Key was used with other fields.',
    },
  },
  issueToken: {
    method: 'post',
    path: '/api/user',
    summary: 'Get a bearer token',
    description:
      'No authentication. The token is an HS256 JWT carrying `username`, `iat`, `exp` and `jti` (unique to it), ' +
      'valid for 1800 seconds. Where the operator has closed issuance (`TOKEN_ISSUANCE=closed`), 403: tokens ' +
      'then come from the operator or the identity provider.',
    limit: 'tokens',
    input: input({ body: tokenRequest }),
    invalid: 400,
    requestBody: {
      name: 'TokenRequest',
      description: 'Who the token is for.',
      example: { username: 'alice' },
      required: false,
      mediaTypes: ['application/json', 'application/x-www-form-urlencoded'],
    },
    ok: { description: 'A token', schema: ref('Token'), example: { token: EXAMPLE_TOKEN } },
    alsoAnswers: [403],
    meanings: {
      400: '`username` is present but not a string, or the JSON is malformed.',
      403: 'Token issuance is closed (`TOKEN_ISSUANCE=closed`): no token is given here, to anyone.',
    },
    database: false,
  },
} satisfies Record<string, RouteDeclaration<unknown>>;

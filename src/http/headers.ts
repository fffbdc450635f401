import type { JsonSchema } from './json-schema';

/**
 * Every header the API reads or answers with, declared once (docs/reference/http.md#headers). Routes
 * name the ones of their own (route.ts, `headersOf`, adds those that follow from what a route
 * is); the CORS layer's allowed and exposed headers, the OpenAPI document's parameters and
 * response headers, and what an error answer keeps all come from here, so a header cannot be
 * added to a route and forgotten by one of them.
 */
export interface HeaderDeclaration {
  description: string;
  schema: JsonSchema;
  example?: string;
  /**
   * Kept on an error answer of a route that set it before the error: it describes the request,
   * not the answer it replaces (RateLimit: a refused request still spent its quota).
   */
  keptOnErrors?: true;
  /**
   * Every answer it is declared for carries it (the document marks it `required` there), but those
   * the listener gives before the app sees the request (LISTENER_ANSWERS, listener.ts), and, for a
   * limit's headers, the statuses also answered before the limit is counted (route.ts, headersOf).
   */
  always?: true;
}

const text: JsonSchema = { type: 'string' };

/**
 * What a 401 asks for: a bearer token (RFC 9110 15.5.2 and RFC 6750 3 make the challenge part of
 * every 401; docs/reference/callers.md#bearer-challenge). No error code: the request had no token.
 */
export const BEARER_CHALLENGE = 'Bearer realm="bike-catalog"';

/**
 * A refused token's challenge (RFC 6750 3.1): the error code, a description (its quoted-string
 * holds no `"` or `\`, as RFC 6750 allows) and, for a scope the token lacks, the scope needed.
 */
export const refusalChallenge = (error: 'invalid_token' | 'insufficient_scope', description: string, scope?: string) =>
  `${BEARER_CHALLENGE}, error="${error}", error_description="${description}"` +
  (scope === undefined ? '' : `, scope="${scope}"`);

/** What every challenge the service sends looks like (refusalChallenge, BEARER_CHALLENGE). */
const CHALLENGE_PATTERN =
  '^Bearer realm="bike-catalog"(, error="(invalid_token|insufficient_scope)", ' +
  'error_description="[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*"(, scope="[\\x21\\x23-\\x5B\\x5D-\\x7E]+( [\\x21\\x23-\\x5B\\x5D-\\x7E]+)*")?)?$';

/** The content codings a request body may come in (RFC 9110, 12.5.3: a 415 names them). */
export const ACCEPTED_CONTENT_CODINGS = 'gzip, deflate, br';

export const HEADERS = {
  'X-Request-Id': {
    description: 'Your id for the request (up to 128 of `A-Za-z0-9_.:-`), echoed; otherwise one is made.',
    schema: text,
    always: true,
  },
  Authorization: { description: '`Bearer <token>`, the token from POST /api/user.', schema: text },
  'Content-Type': { description: 'The media type of the body.', schema: text },
  'Content-Encoding': {
    description: `The body's content coding, if any: \`${ACCEPTED_CONTENT_CODINGS.replace(/, /g, '`, `')}\` (any other: 415).`,
    schema: text,
  },
  'If-None-Match': {
    description:
      'On a read: the ETag of the copy you have; 304, with no body, while it is current. On a write: ' +
      '`*`, write only if there is no such bike (on PUT: create only); or tags, write only if the bike is in ' +
      'none of their states. Otherwise 412.',
    schema: text,
  },
  'If-Match': {
    description:
      'Write only if the bike is in this state: its strong ETag, from a read or a write (a list of them, or ' +
      '`*` for any state). Compared strongly: a weak tag never matches. Otherwise 412 and nothing changes.',
    schema: text,
  },
  'X-Read-From': {
    description:
      'A list; an element `primary` reads from the primary database, to see your own writes at once. ' +
      'Other values are ignored.',
    schema: text,
    example: 'primary',
  },
  'Idempotency-Key': {
    description:
      'Your name for this create, to retry it safely (1 to 255 visible ASCII characters, no comma; make it ' +
      'unguessable: a UUID v4 per create). Sent again with the same fields, it answers the first 200 again ' +
      '(with `Idempotent-Replayed: true`) and creates nothing; with other fields, 422; while the first request ' +
      'is still running, 409. Whose keys it is among, and for how long: docs/reference/caching-and-conditions.md#idempotency-keys.',
    schema: text,
    example: '8e03978e-40d5-43e8-bc93-6894a57f9324',
  },
  ETag: {
    description:
      "This representation's ETag: strong for a bike (one state of it: send it in If-Match), weak for a " +
      'list. A compressed answer\'s strong tag ends in its coding (`-gzip"`, `-br"`) and stands for the same state.',
    schema: text,
  },
  'Cache-Control': {
    description: '`no-cache`: revalidate before using a stored copy; `no-store` on the change feed: keep none.',
    schema: text,
  },
  'X-Stale': {
    description:
      'Only while the primary cannot be reached and a replica answers: `as-of=<ISO time of the newest commit ' +
      'the replica has>; age=<seconds since>`, or `unknown`. The answer may miss later writes.',
    schema: text,
  },
  'Idempotent-Replayed': {
    description: '`true` on an answer given again for an Idempotency-Key seen before (nothing was created).',
    schema: { type: 'string', enum: ['true'] },
  },
  'RateLimit-Policy': {
    description: 'The limit: `"<name>";q=<requests>;w=<seconds>` (`tokens` or `writes`, per client).',
    schema: text,
    keptOnErrors: true,
    always: true,
  },
  RateLimit: {
    description: 'What is left of it: `"<name>";r=<requests left>;t=<seconds until the window ends>`.',
    schema: text,
    keptOnErrors: true,
    always: true,
  },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' }, always: true },
  Allow: { description: 'The methods the path serves.', schema: text, always: true },
  'X-Invalid-Field': {
    description:
      'The first field that failed, in the order of its schema: its dotted path in the body as sent ' +
      '(`priceRange.minPrice.amount`), `query.` and the name of the query parameter (`query.q`), or the request header ' +
      '(`idempotency-key`). Absent when the body fails as a whole: malformed JSON, not an object, a media ' +
      'type or charset that cannot be read, or a value the database refuses.',
    schema: text,
    example: 'priceRange.minPrice.amount',
  },
  'WWW-Authenticate': {
    description:
      'The challenge (RFC 6750): on a 401, `Bearer realm="bike-catalog"` (no token was sent); on a 403, why the ' +
      'token was refused, `error="invalid_token"` (expired, revoked, not signed by a key trusted here, malformed) ' +
      'or `error="insufficient_scope"` with the `scope` needed, each with an `error_description`.',
    schema: { type: 'string', pattern: CHALLENGE_PATTERN },
    example: `${BEARER_CHALLENGE}, error="insufficient_scope", error_description="this operation needs the scope bikes:delete", scope="bikes:delete"`,
    always: true,
  },
  'Accept-Encoding': {
    description: 'The content codings a request body may be sent in.',
    schema: { type: 'string', const: ACCEPTED_CONTENT_CODINGS },
    always: true,
  },
  'Content-Security-Policy': {
    description: 'What the page may load and run: only its own files.',
    schema: text,
  },
  'Catalog-Cursor': {
    description:
      'The point of the change feed (GET /bikes/changes) this answer is consistent with: follow the feed with ' +
      'it as `since` and you miss and repeat nothing. Opaque.',
    schema: text,
  },
  Link: {
    description:
      'While another page follows, its address: `</bikes?...&cursor=...>; rel="next"` (RFC 8288). Absent on the last page.',
    schema: text,
  },
  'Last-Event-ID': {
    description:
      'On an event stream: the `id` of the last event you received, which your EventSource sends when it ' +
      'reconnects; the stream resumes after it (over `since`). A value that is not a cursor of this service: 400.',
    schema: text,
  },
  'X-Accel-Buffering': {
    description: '`no` on an event stream: a proxy in front (nginx) passes each event on as it comes.',
    schema: { type: 'string', enum: ['no'] },
  },
  'Write-Outcome': {
    description:
      '`unknown`: the database stopped answering while the write ran, so it may or may not have been ' +
      'applied. Read the bike (its path is in `Content-Location`) to know; a retry is safe with the same ' +
      'Idempotency-Key (POST) or with If-Match (PUT, PATCH, DELETE).',
    schema: { type: 'string', enum: ['unknown'] },
  },
  'Content-Location': {
    description: 'The bike the write was for: on a create, the id it was being made under.',
    schema: text,
    example: '/bikes/3f1c2a9e-8d4b-4c6f-9a1e-2b7d5e8f0c41',
  },
} as const satisfies Record<string, HeaderDeclaration>;

export type HeaderName = keyof typeof HEADERS;

/** Headers every answer carries, and every request may. */
export const EVERY_ANSWER: HeaderName[] = ['X-Request-Id'];

/** The error statuses' own headers, on any route that answers them. */
export const ERROR_HEADERS: Partial<Record<number, HeaderName[]>> = {
  400: ['X-Invalid-Field'],
  401: ['WWW-Authenticate'],
  403: ['WWW-Authenticate'],
  409: ['Retry-After'],
  415: ['Accept-Encoding'],
  429: ['Retry-After'],
  503: ['Retry-After'],
  504: ['Write-Outcome', 'Content-Location'],
};

/** The names of an object's own keys, typed as its keys. */
function keysOf<T extends object>(object: T): Extract<keyof T, string>[] {
  const keys: Extract<keyof T, string>[] = [];
  for (const key in object) keys.push(key);
  return keys;
}

/** The headers an error answer keeps from the answer it replaces. */
export const KEPT_ON_ERRORS: HeaderName[] = keysOf(HEADERS).filter((name) => 'keptOnErrors' in HEADERS[name]);

import Router, { type RouterContext, type RouterMiddleware } from '@koa/router';
import type Koa from 'koa';
import type * as yup from 'yup';
import type { Caller } from '../auth/caller';
import { KeysUnavailable } from '../auth/provider';
import type { Tokens } from '../auth/tokens';
import { holds, type WriteConditions } from '../bikes/repository';
import { check, describe } from '../bikes/yup';
import { isRejectedValue } from '../db/errors';
import { readBody } from './body';
import { HttpError } from './errors';
import type { CorsHeaders } from './cors';
import { BEARER_CHALLENGE, ERROR_HEADERS, EVERY_ANSWER, type HeaderName } from './headers';
import { invalidFieldHeader } from './invalid-field';
import { newRouter } from './path-matching';
import type { AbuseLimits, LimitKind } from './limits';
import type { JsonSchema } from './json-schema';

/** The error statuses a route can answer, besides 431 (node's HTTP parser, for any request). */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 410 | 412 | 413 | 415 | 422 | 429 | 503 | 504;

/**
 * One route, declared once (src/http/api-routes.ts): the router mounts it and the OpenAPI
 * document describes it from this.
 */
export interface RouteDeclaration<Input> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The path, `:name` for a parameter. A parameter `id` names a bike: not a UUID is 404. */
  path: string;
  summary: string;
  description?: string;
  /** A bearer token is needed: it is checked before anything else, the body included (401, 403). */
  token?: boolean;
  /**
   * What the handler gets: a yup object of `body` (a route that has one reads the request body,
   * docs/decisions.md#bodies), `query` (the query string's parameters) and `headers` (those the
   * route reads, by their lowercase names), checked before the handler runs. Whatever fails it
   * is answered with `invalid`.
   */
  input: yup.Schema<Input>;
  /**
   * The status for input the route cannot accept (a body or query that fails `input`, or a value
   * the database refuses): 400, or 404 where the specification makes every failure a 404 (PUT).
   * Unset: 404, as for a lookup of a value no bike can hold.
   */
  invalid?: 400 | 404;
  /** The bike at the path `id` must exist before the body is judged: a missing bike's bad body is 404. */
  bikeBeforeBody?: boolean;
  /** A write that honours If-Match and If-None-Match (412 when they do not hold; conditional.ts). */
  preconditions?: boolean;
  /** The 200 carries the ETag of the bike as written. */
  writesBike?: boolean;
  /** The abuse limit the route counts against (docs/decisions.md#abuse-limits; limits.ts): 429 over it. */
  limit?: LimitKind;
  /**
   * The request body, for the OpenAPI document: its schema's name there, what it is, an example,
   * and the media types to list (application/json unless said).
   */
  requestBody?: { name: string; description: string; example: unknown; required?: boolean; mediaTypes?: string[] };
  /**
   * Request headers the route reads besides those that follow from what it is (headersOf),
   * declared in headers.ts; their schemas come from `input` where it checks them.
   */
  requestHeaders?: HeaderName[];
  /** Headers of the 200 besides those that follow from what the route is (headersOf). */
  responseHeaders?: HeaderName[];
  /** Statuses the handler answers besides those the declaration implies, for the OpenAPI document. */
  alsoAnswers?: ErrorStatus[];
  /** The query parameters, for the OpenAPI document (their schemas come from `input`). */
  queryParameters?: Record<string, { description: string; example: string | number | boolean }>;
  /** The 200: what it is, its schema and an example. */
  ok: { description: string; schema: JsonSchema; example: unknown };
  /** What an error status means on this route, where the general meaning says too little. */
  meanings?: Partial<Record<ErrorStatus, string>>;
  /** False for a route that never reads the database (no 503). */
  database?: false;
  /**
   * The route also answers a stream of Server-Sent Events, to a client that accepts
   * `text/event-stream` (docs/decisions.md#live-updates): what the stream is, and an example of it,
   * for the OpenAPI document. Its answers vary on Accept; it reads Last-Event-ID; a client with
   * too many streams open is 429.
   */
  eventStream?: { description: string; example: string };
}

/**
 * What the endpoint found out about a request before its handler runs, each parsed once: the
 * path's bike id (a UUID, lowercased; '' on a route without one), and a write's conditions
 * (If-Match, If-None-Match), in states of the bike.
 */
interface RequestFacts {
  id: string;
  conditions: WriteConditions;
}

type Handler<Input> = (ctx: RouterContext, input: Input, facts: RequestFacts) => Promise<void> | void;

/** A handler for each declared route, taking that route's input. */
export type Handlers<Routes> = {
  [Name in keyof Routes]: Routes[Name] extends RouteDeclaration<infer Input> ? Handler<Input> : never;
};

/** The route's input has a body: then the request body is read. */
function hasBody(route: RouteDeclaration<unknown>): boolean {
  return describe(route.input).fields?.body !== undefined;
}

/**
 * The error statuses of a route, from its declaration: 401 and 403 with a token; 413 and the
 * status for bad input with a body; that status with query parameters; 404 with a path
 * parameter (an id that is not a UUID, a handle no bike has); 412 with preconditions; 429 with a
 * limit or an event stream; 503 where the database is needed, and 504 where it writes (an
 * outcome unknown).
 */
function errorStatusesOf(route: RouteDeclaration<unknown>): ErrorStatus[] {
  const statuses = new Set<ErrorStatus>();
  const invalid = route.invalid ?? 404;
  if (route.token) [401, 403].forEach((s) => statuses.add(s as ErrorStatus));
  if (hasBody(route)) [413, 415, invalid].forEach((s) => statuses.add(s as ErrorStatus));
  if (route.queryParameters) statuses.add(invalid);
  if (route.path.includes('/:')) statuses.add(404);
  if (route.preconditions) statuses.add(412);
  for (const status of route.alsoAnswers ?? []) statuses.add(status);
  if (route.limit || route.eventStream) statuses.add(429);
  if (route.database !== false) statuses.add(503);
  if (route.database !== false && route.method !== 'get') statuses.add(504);
  return [...statuses].sort();
}

/**
 * The headers a route reads and answers with (docs/decisions.md#headers): those that follow from
 * what it is (a token, a body, a read, a write with preconditions, a limit, its error statuses)
 * and its own. CORS, the OpenAPI document and the tests all take them from here.
 */
export function headersOf(route: RouteDeclaration<unknown>) {
  const read = route.method === 'get';
  const limited = route.limit === 'tokens' || route.limit === 'writes';
  const limits: HeaderName[] = limited ? ['RateLimit-Policy', 'RateLimit'] : [];
  const request: HeaderName[] = [
    ...EVERY_ANSWER,
    ...(route.token ? (['Authorization'] as const) : []),
    ...(hasBody(route) ? (['Content-Type'] as const) : []),
    ...(read ? (['If-None-Match', 'X-Read-From'] as const) : []),
    ...(route.preconditions ? (['If-Match', 'If-None-Match'] as const) : []),
    ...(route.eventStream ? (['Last-Event-ID'] as const) : []),
    ...(route.requestHeaders ?? []),
  ];
  const ok: HeaderName[] = [
    ...EVERY_ANSWER,
    ...(read ? (['ETag', 'Cache-Control', 'X-Stale'] as const) : []),
    ...(route.writesBike ? (['ETag'] as const) : []),
    ...(route.eventStream ? (['X-Accel-Buffering'] as const) : []),
    ...limits,
    ...(route.responseHeaders ?? []),
  ];
  const errors = new Map(
    errorStatusesOf(route).map((status) => [status, [...EVERY_ANSWER, ...limits, ...(ERROR_HEADERS[status] ?? [])]]),
  );
  return { request: [...new Set(request)], ok: [...new Set(ok)], errors };
}

/**
 * What a browser may send to any of the routes and read from any of their answers (cors.ts):
 * every header they read, and every one they answer with (405's Allow included: any path).
 */
export function corsHeadersOf(routes: Record<string, RouteDeclaration<unknown>>): CorsHeaders {
  const allowed = new Set<HeaderName>();
  const exposed = new Set<HeaderName>(['Allow']);
  for (const route of Object.values(routes)) {
    const { request, ok, errors } = headersOf(route);
    request.forEach((name) => allowed.add(name));
    [ok, ...errors.values()].flat().forEach((name) => exposed.add(name));
  }
  return { allowed: [...allowed], exposed: [...exposed] };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A path that is not valid percent-encoding (/bikes/by-handle/%ZZ) names nothing: 404
 * (docs/decisions.md#ids-and-path-segments).
 */
export function isWellFormedPath(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The bearer token, the second word of the Authorization header
 * (docs/decisions.md#authorization-header): none is 401, one that fails verification 403, one
 * that cannot be judged (the identity provider's keys cannot be had) 503. What the token says of
 * who sent the request is attached to it (callerOf), as the specification attaches its payload.
 */
async function authenticate(ctx: Koa.Context, tokens: Tokens): Promise<void> {
  const token = ctx.get('Authorization').split(' ')[1];
  if (!token) throw new HttpError(401, { 'WWW-Authenticate': BEARER_CHALLENGE });
  try {
    ctx.state.user = await tokens.verify(token);
  } catch (err) {
    if (err instanceof KeysUnavailable) throw new HttpError(503, {}, { cause: err });
    throw new HttpError(403);
  }
}

/** Who sent a request of a route with a token (docs/decisions.md#who-a-caller-is). */
export function callerOf(ctx: Koa.Context): Caller {
  return ctx.state.user as Caller;
}

export interface RouteChecks {
  tokens: Tokens;
  /** The bike with this id as it is now on the primary: its state, null when there is none. */
  currentState: (id: string) => Promise<string | null>;
  /** What the request's If-Match and If-None-Match require, in states of the bike (conditional.ts). */
  conditions: (ctx: Koa.Context) => WriteConditions;
  limits: AbuseLimits;
}

/** A number as a query string writes it: decimal, no exponent, no leading zero, no sign but minus. */
const QUERY_NUMBER = /^-?(0|[1-9]\d{0,15})(\.\d{1,15})?$/;

/** What a query parameter's text means, for a parameter declared of each type: undefined, no meaning. */
const QUERY_VALUES: Partial<Record<string, (text: string) => unknown>> = {
  number: (text) => (QUERY_NUMBER.test(text) ? Number(text) : undefined),
  boolean: (text) => (text === 'true' ? true : text === 'false' ? false : undefined),
};

/**
 * The query as the route's input reads it (docs/decisions.md#query-parameters): the value of a
 * parameter its schema declares a number or a boolean read as one when it is written as one (a
 * page's size, a price, `true`), the rest as sent (a value that is not one then fails its
 * schema's check: 400).
 */
function queryReader(route: RouteDeclaration<unknown>) {
  const fields = describe(route.input).fields?.query?.fields ?? {};
  const typed = Object.entries(fields).flatMap(([name, { type }]) => {
    const meaning = QUERY_VALUES[type];
    return meaning ? [{ name, meaning }] : [];
  });
  if (typed.length === 0) return (query: Koa.Context['query']) => query;
  return (query: Koa.Context['query']) => {
    const read: Record<string, unknown> = { ...query };
    for (const { name, meaning } of typed) {
      const value = query[name];
      if (typeof value === 'string') read[name] = meaning(value) ?? value;
    }
    return read;
  };
}

/** The client asked to be told to go on before it sends the body (RFC 9110, 10.1.1). */
const expectsContinue = (ctx: Koa.Context) => /^100-continue$/i.test(ctx.get('Expect'));

/**
 * A route's handler behind its declaration, always in this order (docs/decisions.md#conditional-writes):
 * the token (401, 403), then the path (not valid percent-encoding, or an id that is not a UUID,
 * names no bike: 404), then the route's abuse limit (429), then the input (query and body: 400,
 * or PUT's 404), then the handler, whose write carries its conditions in its own statement and
 * looks at the bike only when it matched nothing (404, 412). Where the answer must come before the
 * body's (a bad body of a missing bike is 404; of one whose conditions fail, 412; a client waiting
 * for 100 Continue), the endpoint looks at the bike first: that costs a round trip only then.
 */
function endpoint<Input>(
  route: RouteDeclaration<Input>,
  handler: Handler<Input>,
  checks: RouteChecks,
): RouterMiddleware {
  const invalid = route.invalid ?? 404;
  const readsBody = hasBody(route);
  const queryOf = queryReader(route);
  return async (ctx) => {
    // Whichever the answer, an error included: Accept chose between the page and the stream.
    if (route.eventStream) ctx.vary('Accept');
    if (route.token) await authenticate(ctx, checks.tokens);
    if (!isWellFormedPath(ctx.path)) throw new HttpError(404);
    const rawId: string | undefined = ctx.params.id;
    if (rawId !== undefined && !UUID.test(rawId)) throw new HttpError(404);
    const id = rawId?.toLowerCase() ?? '';
    if (route.limit) await checks.limits.check(ctx, route.limit);
    const conditions = route.preconditions ? checks.conditions(ctx) : {};
    const conditional = conditions.ifMatch !== undefined || conditions.ifNoneMatch !== undefined;
    /** 404 for a missing bike where the route answers it, then 412 for conditions that fail. */
    const lookFirst = async (missingIs404: boolean) => {
      const state = await checks.currentState(id);
      if (state === null && missingIs404) throw new HttpError(404);
      if (!holds(conditions, state)) throw new HttpError(412);
    };
    // PUT makes a bike that is not there; the other writes answer 404 for it.
    if (readsBody && conditional && expectsContinue(ctx)) await lookFirst(route.method !== 'put');
    const body = readsBody ? await readBody(ctx, invalid) : undefined;
    const input = check(route.input, { body, query: queryOf(ctx.query), headers: ctx.headers });
    if (!input.valid) {
      if (route.bikeBeforeBody || conditional) await lookFirst(Boolean(route.bikeBeforeBody));
      // Only a 400 says which field: PUT answers every failure 404, as the specification says.
      throw new HttpError(invalid, invalid === 400 ? invalidFieldHeader(input.path) : {});
    }
    try {
      await handler(ctx, input.value, { id, conditions });
    } catch (err) {
      if (isRejectedValue(err)) throw new HttpError(invalid, {}, { cause: err });
      throw err;
    }
  };
}

/**
 * The router of the declared routes, each with its handler. A literal path is mounted before the
 * parameter beside it (API_ROUTES lists /bikes/all before /bikes/:id): GET /bikes/all is the
 * list; every other method there, and every spelling but that one (/bikes/ALL, /bikes/%61ll),
 * is the id route, whose "all" is no UUID (docs/decisions.md#path-matching).
 */
export function routerOf<Routes extends Record<string, RouteDeclaration<unknown>>>(
  routes: Routes,
  handlers: Handlers<Routes>,
  checks: RouteChecks,
): Router {
  const router = newRouter();
  for (const name in routes) {
    const route = routes[name];
    // A trailing slash is optional (docs/decisions.md#trailing-slash): the router matches /bikes/
    // to the path /bikes, not /bikes to /bikes/, so routes are mounted without it.
    router[route.method](route.path.replace(/(.)\/$/, '$1'), endpoint(route, handlers[name], checks));
  }
  return router;
}

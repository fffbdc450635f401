import Router, { type RouterContext, type RouterMiddleware } from '@koa/router';
import type Koa from 'koa';
import type * as yup from 'yup';
import type { Tokens } from '../auth/tokens';
import { holds, type Precondition } from '../bikes/repository';
import { check, describe } from '../bikes/yup';
import { isRejectedValue } from '../db/errors';
import { readBody } from './body';
import { HttpError } from './errors';
import { invalidFieldHeader } from './invalid-field';
import { newRouter } from './path-matching';
import type { AbuseLimits, LimitKind } from './limits';
import type { JsonSchema } from './json-schema';

/** The error statuses a route can answer, besides 431 (node's HTTP parser, for any request). */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 422 | 429 | 503;

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
   * docs/decisions.md rule 12), `query` (the query string's parameters) and `headers` (those the
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
  /** A write that honours If-Match and If-None-Match: `*` (412 when they do not hold; conditional.ts). */
  preconditions?: boolean;
  /** The 200 carries the ETag of the bike as written. */
  writesBike?: boolean;
  /** The abuse limit the route counts against (rule 28; limits.ts): 429 over it. */
  limit?: LimitKind;
  /**
   * The request body, for the OpenAPI document: its schema's name there, what it is, an example,
   * and the media types to list (application/json unless said).
   */
  requestBody?: { name: string; description: string; example: unknown; required?: boolean; mediaTypes?: string[] };
  /** The request headers the route reads, for the OpenAPI document (their schemas come from `input`). */
  headerParameters?: Record<string, { description: string; example: string }>;
  /** Statuses the handler answers besides those the declaration implies, for the OpenAPI document. */
  alsoAnswers?: ErrorStatus[];
  /** The query parameters, for the OpenAPI document (their schemas come from `input`). */
  queryParameters?: Record<string, { description: string; example: string }>;
  /** The 200: what it is, its schema and an example. */
  ok: { description: string; schema: JsonSchema; example: unknown };
  /** What an error status means on this route, where the general meaning says too little. */
  meanings?: Partial<Record<ErrorStatus, string>>;
  /** False for a route that never reads the database (no 503). */
  database?: false;
}

export type Handler<Input> = (ctx: RouterContext, input: Input) => Promise<void> | void;

/** A handler for each declared route, taking that route's input. */
export type Handlers<Routes> = {
  [Name in keyof Routes]: Routes[Name] extends RouteDeclaration<infer Input> ? Handler<Input> : never;
};

/** The route's input has a body: then the request body is read. */
export function hasBody(route: RouteDeclaration<unknown>): boolean {
  return describe(route.input).fields?.body !== undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path that is not valid percent-encoding (/bikes/by-handle/%ZZ) names nothing: 404 (rule 6). */
export function isWellFormedPath(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * What a 401 asks for: a bearer token (RFC 9110 15.5.2 and RFC 6750 3 make the challenge part of
 * every 401; docs/decisions.md#bearer-challenge). No error code: the request had no token.
 */
export const BEARER_CHALLENGE = 'Bearer realm="bike-catalog"';

/**
 * The bearer token, the second word of the Authorization header (rule 14): none is 401, one that
 * fails verification 403. Its payload is attached to the request, as the specification says.
 */
function authenticate(ctx: Koa.Context, tokens: Tokens): void {
  const token = ctx.get('Authorization').split(' ')[1];
  if (!token) throw new HttpError(401, { 'WWW-Authenticate': BEARER_CHALLENGE });
  try {
    ctx.state.user = tokens.verify(token);
  } catch {
    throw new HttpError(403);
  }
}

export interface RouteChecks {
  tokens: Tokens;
  /** The version of the bike with this id, null when there is none (on the primary). */
  bikeVersion: (id: string) => Promise<string | null>;
  /** What the request's If-Match and If-None-Match require of the bike it writes. */
  precondition: (ctx: Koa.Context) => Precondition;
  limits: AbuseLimits;
}

/**
 * A route's handler behind its declaration, always in this order (docs/decisions.md, rule 23):
 * the token (401, 403), then the path (not valid percent-encoding, or an id that is not a UUID,
 * names no bike: 404), then the route's abuse limit (429), then a write's precondition (a missing bike where the route answers 404,
 * then 412), then the input (query and body), then the handler. The write itself checks the
 * precondition again, in its own statement: what was true here may not be by then.
 */
function endpoint<Input>(
  route: RouteDeclaration<Input>,
  handler: Handler<Input>,
  checks: RouteChecks,
): RouterMiddleware {
  const invalid = route.invalid ?? 404;
  const readsBody = hasBody(route);
  return async (ctx) => {
    if (route.token) authenticate(ctx, checks.tokens);
    if (!isWellFormedPath(ctx.path)) throw new HttpError(404);
    const { id } = ctx.params;
    if (id !== undefined && !UUID.test(id)) throw new HttpError(404);
    if (route.limit) await checks.limits.check(ctx, route.limit);
    if (route.preconditions) {
      const when = checks.precondition(ctx);
      if (when.kind !== 'any') {
        const version = await checks.bikeVersion(id.toLowerCase());
        // PUT makes a bike that is not there; the other writes answer 404 for it.
        if (version === null && route.method !== 'put') throw new HttpError(404);
        if (!holds(when, version)) throw new HttpError(412);
      }
    }
    const body = readsBody ? await readBody(ctx, invalid) : undefined;
    const input = check(route.input, { body, query: ctx.query, headers: ctx.headers });
    if (!input.valid) {
      const missing = route.bikeBeforeBody && (await checks.bikeVersion(id.toLowerCase())) === null;
      const status = missing ? 404 : invalid;
      // Only a 400 says which field: PUT answers every failure 404, as the specification says.
      throw new HttpError(status, status === 400 ? invalidFieldHeader(input.path) : {});
    }
    try {
      await handler(ctx, input.value);
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
    // A trailing slash is optional (rule 16): the router matches /bikes/ to the path /bikes,
    // not /bikes to /bikes/, so routes are mounted without it.
    router[route.method](route.path.replace(/(.)\/$/, '$1'), endpoint(route, handlers[name], checks));
  }
  return router;
}

import type { RouterContext } from '@koa/router';
import type * as yup from 'yup';
import type { Scope } from '../auth/scopes';
import type { HeaderName } from './headers';
import type { JsonSchema } from './json-schema';
import type { LimitKind } from './limits';
import type { WriteConditions } from './preconditions';

/** The error statuses a route can answer, besides 431 (node's HTTP parser, for any request). */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 410 | 412 | 413 | 415 | 422 | 429 | 503 | 504;

/**
 * One route, declared once (the API's, in src/api/): the router mounts it and the OpenAPI
 * document describes it from this.
 */
export interface RouteDeclaration<Input> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** The path, `:name` for a parameter. A parameter `id` names a resource by a UUID: not a UUID is 404. */
  path: string;
  summary: string;
  description?: string;
  /**
   * A bearer token with this scope is needed (docs/reference/callers.md#scopes): it is checked before
   * anything else, the body included (401 without one; 403 for one refused, or without the scope).
   */
  scope?: Scope;
  /**
   * What the handler gets: a yup object of `body` (a route that has one reads the request body,
   * docs/reference/requests-and-answers.md#bodies), `query` (the query string's parameters) and `headers` (those the
   * route reads, by their lowercase names), checked before the handler runs. Whatever fails it
   * is answered with `invalid`.
   */
  input: yup.Schema<Input>;
  /**
   * The status for input the route cannot accept (a body or query that fails `input`, or a value
   * the database refuses): 400, or 404 where the specification makes every failure a 404 (PUT).
   * Unset: 404, as for a lookup of a value no resource can hold.
   */
  invalid?: 400 | 404;
  /** The resource at the path `id` must exist: a missing one is 404, before its preconditions and its input's fields. */
  mustExist?: boolean;
  /** A write that honours If-Match and If-None-Match (412 when they do not hold; conditional.ts). */
  preconditions?: boolean;
  /**
   * False for a read that answers with no ETag (the change feed, which no cache keeps): no 304, no
   * If-None-Match or If-Match. A read otherwise answers with its validators (conditional.ts).
   */
  validators?: false;
  /** The 200 carries the ETag of the resource as written. */
  writesResource?: boolean;
  /** The abuse limit the route counts against (docs/reference/callers.md#abuse-limits; limits.ts): 429 over it. */
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
  queryParameters?: Record<string, { description: string; example: string | number | boolean | string[] }>;
  /** The 200: what it is, its schema and an example. */
  ok: { description: string; schema: JsonSchema; example: unknown };
  /** What an error status means on this route, where the general meaning says too little. */
  meanings?: Partial<Record<ErrorStatus, string>>;
  /** False for a route that never reads the database (no 503). */
  database?: false;
  /**
   * The route also answers a stream of Server-Sent Events, to a client that accepts
   * `text/event-stream` (docs/reference/browse-and-sync.md#live-updates): what the stream is, and an example of it,
   * for the OpenAPI document. Its answers vary on Accept; it reads Last-Event-ID; a client with
   * too many streams open is 429.
   */
  eventStream?: { description: string; example: string };
}

/**
 * What the endpoint found out about a request before its handler runs, each parsed once: the
 * path's id (a UUID, lowercased; '' on a route without one), and a write's conditions
 * (If-Match, If-None-Match), in states of the resource.
 */
interface RequestFacts {
  id: string;
  conditions: WriteConditions;
}

/**
 * A route: its declaration and its handler, in one object (as fastify/demo's routes are). The
 * handler gets the input as checked and typed, the request's facts, and `deps`, the service's
 * parts it works with (the same object for every request).
 */
export interface Route<Input, Deps> extends RouteDeclaration<Input> {
  handle(ctx: RouterContext, input: Input, request: RequestFacts, deps: Deps): Promise<void> | void;
}

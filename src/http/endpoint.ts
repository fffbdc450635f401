import type { RouterContext, RouterMiddleware } from '@koa/router';
import { Readable } from 'node:stream';
import type Koa from 'koa';
import type { Caller } from '../auth/caller';
import { KeysUnavailable } from '../auth/provider';
import { TokenRefused } from '../auth/refusal';
import type { Scope } from '../auth/scopes';
import type { Tokens } from '../auth/tokens';
import { isRejectedValue, isRevokedKey } from '../db/errors';
import { authRefusals } from '../metrics';
import { readBody } from './body';
import { ifMatchHolds, type EntityTags } from './conditional';
import { HttpError } from './errors';
import { BEARER_CHALLENGE, refusalChallenge } from './headers';
import { invalidFieldHeader } from './invalid-field';
import type { AbuseLimits } from './limits';
import { isWellFormedPath } from './path-matching';
import { holds, type WriteConditions } from './preconditions';
import type { ErrorStatus, Route, RouteDeclaration } from './route-declaration';
import { check, describe } from './schema';

/** The route's input has a body: then the request body is read. */
export function hasBody(route: RouteDeclaration<unknown>): boolean {
  return describe(route.input).fields?.body !== undefined;
}

/** The route's status for input it cannot accept. */
const invalidOf = (route: RouteDeclaration<unknown>) => route.invalid ?? 404;

/** The route checks input of the client's (a body, query parameters, headers). */
const hasInput = (route: RouteDeclaration<unknown>) => Object.keys(describe(route.input).fields ?? {}).length > 0;

/**
 * The status for a query parameter the route does not know, on every route
 * (docs/reference/http.md#query-parameters): 400, or the route's `invalid` where it sets one (PUT's 404).
 */
const unknownParameterStatus = (route: RouteDeclaration<unknown>) => route.invalid ?? 400;

/** A read that answers with an ETag: it answers If-None-Match (304) and If-Match (412). */
export const hasValidators = (route: RouteDeclaration<unknown>) => route.method === 'get' && route.validators !== false;

/** One of an operation's checks: what it looks at, and what it answers on a route when it fails (none: not made there). */
interface Check {
  check: string;
  statuses(route: RouteDeclaration<unknown>): ErrorStatus[];
}

/**
 * The order in which an operation answers (docs/reference/requests-and-answers.md#the-order-of-a-writes-answers): the
 * first check that fails gives the answer, whatever the request's `Expect`. `endpoint` makes them
 * in this order; a route's error statuses, and so the OpenAPI document's, are theirs; the docs
 * list them in this order (a test holds both to it).
 * @internal test/api/answer-order.test.ts checks the service and the docs by it.
 */
export const ANSWER_ORDER: readonly Check[] = [
  { check: 'the token', statuses: (route) => (route.scope ? [401, 403, 503] : []) },
  { check: 'the path', statuses: (route) => (route.path.includes('/:') ? [404] : []) },
  { check: 'the abuse limit', statuses: (route) => (route.limit ? [429] : []) },
  { check: "the body's size", statuses: (route) => (hasBody(route) ? [413] : []) },
  { check: "the body's coding", statuses: (route) => (hasBody(route) ? [415] : []) },
  { check: "the body's syntax", statuses: (route) => (hasBody(route) ? [invalidOf(route)] : []) },
  { check: 'the resource', statuses: (route) => (route.mustExist ? [404] : []) },
  {
    // A read's If-Match is judged by the tag of its answer, once the handler made it.
    check: 'the preconditions',
    statuses: (route) => (route.preconditions || hasValidators(route) ? [412] : []),
  },
  {
    check: 'the input',
    statuses: (route) => [...(hasInput(route) ? [invalidOf(route)] : []), unknownParameterStatus(route)],
  },
  {
    // A write carries the resource and the preconditions in its own statement: 404 and 412 when
    // it matched nothing. A database not answering is 503; a write it stopped answering during, 504.
    check: 'the handler',
    statuses: (route) => [
      ...(route.alsoAnswers ?? []),
      // A token's API key revoked since it was issued: its write's own statement refuses it.
      ...(route.scope ? ([403] as const) : []),
      ...(route.eventStream ? ([429] as const) : []),
      ...(route.database === false ? [] : ([503] as const)),
      ...(route.database === false || route.method === 'get' ? [] : ([504] as const)),
    ],
  },
];

/**
 * The statuses of the checks made before the abuse limit is counted, and of it and those after
 * (ANSWER_ORDER): only an answer of the latter can say what the limit left.
 */
export function statusesAroundTheLimit(route: RouteDeclaration<unknown>) {
  const at = ANSWER_ORDER.findIndex((step) => step.check === 'the abuse limit');
  const of = (steps: readonly Check[]) => new Set<number>(steps.flatMap((step) => step.statuses(route)));
  return { before: of(ANSWER_ORDER.slice(0, at)), after: of(ANSWER_ORDER.slice(at)) };
}

/** The error statuses of a route: those of every check it makes (ANSWER_ORDER). */
export function errorStatusesOf(route: RouteDeclaration<unknown>): ErrorStatus[] {
  return [...new Set(ANSWER_ORDER.flatMap((step) => step.statuses(route)))].sort();
}

/**
 * A token refused (docs/reference/callers.md#refusals): 403, saying why as RFC 6750 says (`invalid_token`
 * and a description), the same in its plain-text reason, and counted by reason.
 */
export function tokenRefusal(refusal: TokenRefused): HttpError {
  authRefusals.inc({ reason: refusal.reason });
  return new HttpError(
    403,
    { 'WWW-Authenticate': refusalChallenge('invalid_token', refusal.message) },
    { cause: refusal, reason: refusal.message },
  );
}

/** A token without the scope an operation needs: 403 `insufficient_scope`, naming it. */
function scopeRefusal(scope: Scope): HttpError {
  authRefusals.inc({ reason: 'insufficient-scope' });
  const description = `this operation needs the scope ${scope}`;
  return new HttpError(
    403,
    { 'WWW-Authenticate': refusalChallenge('insufficient_scope', description, scope) },
    { reason: description },
  );
}

/**
 * POST /api/user where issuance is closed, to a request without an API key: 403 with the bare
 * challenge (it sent no credentials: RFC 6750 3 gives no error code), saying why in its reason.
 */
export function issuanceClosed(description: string): HttpError {
  authRefusals.inc({ reason: 'token-endpoint-closed' });
  return new HttpError(403, { 'WWW-Authenticate': BEARER_CHALLENGE }, { reason: description });
}

/** No token: 401 with the bare challenge (RFC 6750 3: no error code when the request had none). */
function noToken(): HttpError {
  authRefusals.inc({ reason: 'no-token' });
  return new HttpError(401, { 'WWW-Authenticate': BEARER_CHALLENGE });
}

/**
 * The bearer token, the second word of the Authorization header
 * (docs/reference/callers.md#authorization-header): none is 401, one that fails verification 403, one
 * that cannot be judged (the identity provider's keys cannot be had) 503, one without the
 * operation's scope 403. What the token says of who sent the request is attached to it
 * (callerOf), as the specification attaches its payload.
 */
async function authenticate(ctx: Koa.Context, tokens: Tokens, scope: Scope): Promise<void> {
  const token = ctx.get('Authorization').split(' ')[1];
  if (!token) throw noToken();
  let caller: Caller;
  try {
    caller = await tokens.verify(token);
  } catch (err) {
    if (err instanceof KeysUnavailable) throw new HttpError(503, {}, { cause: err });
    throw tokenRefusal(err instanceof TokenRefused ? err : new TokenRefused('malformed', { cause: err }));
  }
  if (!caller.scopes.includes(scope)) throw scopeRefusal(scope);
  ctx.state.user = caller;
}

/** Who sent a request of a route with a token (docs/reference/callers.md#who-a-caller-is). */
export function callerOf(ctx: Koa.Context): Caller {
  return ctx.state.user as Caller;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The path's id, lowercased ('' on a route without one); a path that is not valid
 * percent-encoding, or an id that is not a UUID, names nothing: 404
 * (docs/reference/reads-and-writes.md#ids-and-path-segments).
 */
function idOf(ctx: RouterContext): string {
  if (!isWellFormedPath(ctx.path)) throw new HttpError(404);
  const id: string | undefined = ctx.params.id;
  if (id !== undefined && !UUID.test(id)) throw new HttpError(404);
  return id?.toLowerCase() ?? '';
}

/** A query parameter's name as X-Invalid-Field may carry it: a plain name, never other bytes of the client's. */
const PLAIN_NAME = /^[A-Za-z0-9_.[\]-]{1,64}$/;

/**
 * The query parameters a route knows, those of its input's schema: any other is refused
 * (docs/reference/http.md#query-parameters), as a misspelt one would otherwise change the answer
 * without a word (`Since=` for `since` would start the feed from the oldest change).
 */
function unknownParameterOf(route: RouteDeclaration<unknown>) {
  const known = new Set(Object.keys(describe(route.input).fields?.query?.fields ?? {}));
  return (query: Koa.Context['query']): string | undefined => Object.keys(query).find((name) => !known.has(name));
}

/** A number as a query string writes it: decimal, no exponent, no leading zero, no sign but minus. */
const QUERY_NUMBER = /^-?(0|[1-9]\d{0,15})(\.\d{1,15})?$/;

/**
 * What a query parameter's text means, for a parameter declared of each type: undefined, no
 * meaning. A parameter declared a list (an array) may be repeated: one value is a list of one.
 */
const QUERY_VALUES: Partial<Record<string, (text: string) => unknown>> = {
  number: (text) => (QUERY_NUMBER.test(text) ? Number(text) : undefined),
  boolean: (text) => (text === 'true' ? true : text === 'false' ? false : undefined),
  array: (text) => [text],
};

/**
 * The query as the route's input reads it (docs/reference/http.md#query-parameters): the value of a
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

/** What every endpoint checks with: the same for every route. */
export interface EndpointChecks {
  tokens: Tokens;
  limits: AbuseLimits;
  /** What a request's If-Match and If-None-Match require, in states of the resource (conditional.ts). */
  tags: EntityTags;
  /** The resource with this id as the writes see it now: its state, null when there is none. */
  stateOf: (id: string) => Promise<string | null>;
}

/** The conditions of a route that takes none: shared, never written. */
const NO_CONDITIONS: WriteConditions = Object.freeze({});

/**
 * The resource and the preconditions, by a look at the resource: 404 for a missing one where the
 * route needs it (`mustExist`), then 412 for conditions that do not hold.
 */
async function lookAt(checks: EndpointChecks, id: string, conditions: WriteConditions, mustExist: boolean) {
  const state = await checks.stateOf(id);
  if (state === null && mustExist) throw new HttpError(404);
  if (!holds(conditions, state)) throw new HttpError(412);
}

/**
 * A route's handler behind its checks, made in ANSWER_ORDER's order. The body's size, coding and
 * syntax are readBody's, in that order; it sends `100 Continue` to a client that waits for it only
 * once the body is about to be read, so `Expect` changes when the body comes, never the answer.
 * The resource and the preconditions are looked at only when the input fails: otherwise the write
 * carries them in its own statement (404 or 412 when it matched nothing), and the happy path is
 * one round trip.
 */
export function endpoint<Input, Deps>(route: Route<Input, Deps>, deps: Deps, checks: EndpointChecks): RouterMiddleware {
  const invalid = invalidOf(route);
  const readsBody = hasBody(route);
  const queryOf = queryReader(route);
  const unknownParameter = unknownParameterOf(route);
  const unknownStatus = unknownParameterStatus(route);
  const validators = hasValidators(route);
  return async (ctx) => {
    // Whichever the answer, an error included: Accept chose between the page and the stream.
    if (route.eventStream) ctx.vary('Accept');
    if (route.scope) await authenticate(ctx, checks.tokens, route.scope);
    const id = idOf(ctx);
    if (route.limit) await checks.limits.check(ctx, route.limit);
    const body = readsBody ? await readBody(ctx, invalid) : undefined;
    const conditions = route.preconditions ? checks.tags.conditionsOf(ctx.req.headers) : NO_CONDITIONS;
    const unknown = unknownParameter(ctx.query);
    const input =
      unknown === undefined
        ? check(route.input, { body, query: queryOf(ctx.query), headers: ctx.headers })
        : { valid: false as const, path: PLAIN_NAME.test(unknown) ? `query.${unknown}` : '' };
    if (!input.valid) {
      const conditional = conditions.ifMatch !== undefined || conditions.ifNoneMatch !== undefined;
      if (route.mustExist || conditional) await lookAt(checks, id, conditions, route.mustExist === true);
      const status = unknown === undefined ? invalid : unknownStatus;
      // Only a 400 says which field: PUT answers every failure 404, as the specification says.
      throw new HttpError(status, status === 400 ? invalidFieldHeader(input.path) : {});
    }
    try {
      await route.handle(ctx, input.value, { id, conditions }, deps);
    } catch (err) {
      if (isRejectedValue(err)) throw new HttpError(invalid, {}, { cause: err });
      if (isRevokedKey(err)) throw tokenRefusal(new TokenRefused('revoked', { cause: err }));
      throw err;
    }
    // RFC 9110 13.1.1: a read whose If-Match does not hold for the tag of its answer is not made.
    if (validators && ctx.status === 200 && !ifMatchHolds(ctx, ctx.response.get('ETag') || undefined)) {
      if (ctx.body instanceof Readable) ctx.body.destroy();
      throw new HttpError(412);
    }
  };
}

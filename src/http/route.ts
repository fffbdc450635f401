import type Router from '@koa/router';
import type { CorsHeaders } from './cors';
import {
  endpoint,
  errorStatusesOf,
  hasBody,
  hasValidators,
  statusesAroundTheLimit,
  type EndpointChecks,
} from './endpoint';
import { ERROR_HEADERS, EVERY_ANSWER, HEADERS, type HeaderName } from './headers';
import { LISTENER_ANSWERS } from './listener';
import { newRouter } from './path-matching';
import type { Route, RouteDeclaration } from './route-declaration';

/** Whether every answer of a status carries a header: one sent `always` (headers.ts), but on the listener's answers. */
export const alwaysSent = (status: number, name: HeaderName) =>
  'always' in HEADERS[name] && !Object.hasOwn(LISTENER_ANSWERS, status);

/**
 * The headers a route reads and answers with (docs/reference/http.md#headers): those that follow from
 * what it is (a token, a body, a read, a write with preconditions, a limit, its error statuses)
 * and its own. CORS, the OpenAPI document and the tests all take them from here. A limit's
 * headers are on the answers of the checks from the limit on (ANSWER_ORDER): a 401 comes before
 * the limit is counted, and cannot say what it left. `required(status, name)`: every answer of
 * that status carries the header.
 */
export function headersOf(route: RouteDeclaration<unknown>) {
  const read = route.method === 'get';
  const limited = route.limit === 'tokens' || route.limit === 'writes';
  const limits: HeaderName[] = limited ? ['RateLimit-Policy', 'RateLimit'] : [];
  const request: HeaderName[] = [
    ...EVERY_ANSWER,
    ...(route.scope ? (['Authorization'] as const) : []),
    ...(hasBody(route) ? (['Content-Type', 'Content-Encoding'] as const) : []),
    ...(read ? (['X-Read-From'] as const) : []),
    ...(hasValidators(route) ? (['If-None-Match', 'If-Match'] as const) : []),
    ...(route.preconditions ? (['If-Match', 'If-None-Match'] as const) : []),
    ...(route.eventStream ? (['Last-Event-ID'] as const) : []),
    ...(route.requestHeaders ?? []),
  ];
  const ok: HeaderName[] = [
    ...EVERY_ANSWER,
    ...(read ? (['Cache-Control', 'X-Stale'] as const) : []),
    ...(hasValidators(route) ? (['ETag'] as const) : []),
    ...(route.writesResource ? (['ETag'] as const) : []),
    ...(route.eventStream ? (['X-Accel-Buffering'] as const) : []),
    ...limits,
    ...(route.responseHeaders ?? []),
  ];
  const { before, after } = statusesAroundTheLimit(route);
  const errors = new Map(
    errorStatusesOf(route).map((status) => [
      status,
      [...EVERY_ANSWER, ...(after.has(status) ? limits : []), ...(ERROR_HEADERS[status] ?? [])],
    ]),
  );
  const required = (status: number, name: HeaderName) =>
    alwaysSent(status, name) && !(limits.includes(name) && before.has(status));
  return { request: [...new Set(request)], ok: [...new Set(ok)], errors, required };
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

/**
 * The router of the routes, each behind its endpoint (endpoint.ts), its handler given `deps`. A
 * path is matched before its method, a literal path before the parameter beside it, as OpenAPI
 * matches (docs/reference/http.md#path-matching): /bikes/all is the list's path, so a PUT there is 405
 * (method-not-allowed.ts), never the id route's; every other spelling (/bikes/ALL, /bikes/%61ll)
 * is the id route, whose "all" is no UUID (404).
 */
export function routerOf<Deps>(
  routes: Record<string, Route<unknown, Deps>>,
  deps: Deps,
  checks: EndpointChecks,
): Router {
  const router = newRouter();
  // A trailing slash is optional (docs/reference/http.md#trailing-slash): the router matches /bikes/
  // to the path /bikes, not /bikes to /bikes/, so routes are mounted without it.
  const withoutSlash = (path: string) => path.replace(/(.)\/$/, '$1');
  const literal = new Set(
    Object.values(routes)
      .filter((route) => !route.path.includes('/:'))
      .map((route) => withoutSlash(route.path)),
  );
  for (const route of Object.values(routes)) {
    const handler = endpoint(route, deps, checks);
    const templated = route.path.includes('/:');
    router[route.method](withoutSlash(route.path), (ctx, next) =>
      templated && literal.has(withoutSlash(ctx.path)) ? next() : handler(ctx, next),
    );
  }
  return router;
}

/**
 * Which statuses the specification and docs/decisions.md allow for each route, written down once so
 * the fuzz test can judge any request, however odd.
 *
 * | Route                         | Method     | Allowed                          | Why                                                                   |
 * |-------------------------------|------------|----------------------------------|-----------------------------------------------------------------------|
 * | /bikes/all                    | GET, HEAD  | 200                              | spec 1                                                                |
 * | /bikes, /bikes/               | GET, HEAD  | 200, 400                         | docs/reference/browse-and-sync.md#paged-listing (an unknown parameter, a bad value or cursor: 400) |
 * | /bikes/changes                | GET, HEAD  | 200, 400, 410                    | docs/reference/browse-and-sync.md#the-change-feed (a bad since: 400; one past the horizon: 410) |
 * | /bikes/search/by-title        | GET, HEAD  | 200, 400                         | spec 4; docs/reference/reads-and-writes.md#search (repeated `query`, U+0000: 400)                   |
 * | /bikes/by-handle/:handle      | GET, HEAD  | 200, 404                         | spec 3                                                                |
 * | /bikes/:id                    | GET, HEAD  | 200, 404                         | spec 2; docs/reference/reads-and-writes.md#ids-and-path-segments (not a UUID: 404)                                 |
 * | /bikes, /bikes/               | POST       | 200, 400, 401, 403, 413, 415     | spec 5 and Authentication; docs/reference/requests-and-answers.md#bodies (over 1 MB: 413); docs/reference/requests-and-answers.md#content-codings (415) |
 * | /bikes/:id                    | PUT        | 200, 401, 403, 404, 413, 415     | spec 6 (every failure 404); docs/reference/reads-and-writes.md#replace-put, docs/reference/bike.md#strings-postgresql-cannot-hold, docs/reference/requests-and-answers.md#bodies; docs/reference/requests-and-answers.md#content-codings (415) |
 * | /bikes/:id                    | PATCH      | 200, 400, 401, 403, 404, 413, 415 | spec 7; docs/reference/reads-and-writes.md#partial-update-patch, docs/reference/bike.md#strings-postgresql-cannot-hold, docs/reference/requests-and-answers.md#bodies; docs/reference/requests-and-answers.md#content-codings (415)                   |
 * | /bikes/:id                    | DELETE     | 200, 401, 403, 404               | spec 8; docs/reference/reads-and-writes.md#delete                                                  |
 * | /api/user                     | POST       | 200, 400, 413, 415               | spec 9; docs/reference/requests-and-answers.md#bodies, docs/reference/callers.md#tokens; docs/reference/requests-and-answers.md#content-codings (415)                       |
 * | /healthz /readyz /openapi.json /docs /docs/swagger-initializer.js | GET, HEAD | 200 | operations routes (the database is up during the fuzz run)   |
 * | /docs/:asset                  | GET, HEAD  | 200, 404                         | a Swagger UI file, or none                                            |
 * | /bikes/all with another method, or spelled otherwise (/bikes/ALL, /bikes/%61ll) | any | as /bikes/:id | docs/reference/http.md#path-matching: the literal path first, then the id route |
 * | a known path, a method no route of it serves | any | 405 (OPTIONS: 204)          | docs/reference/requests-and-answers.md#errors                                                          |
 * | any path                      | any        | 404                              | unknown path; a path that is not valid percent-encoding (docs/reference/reads-and-writes.md#ids-and-path-segments), after the token on a protected route |
 *
 * And, whatever the route:
 * - On a protected route (POST /bikes, PUT/PATCH/DELETE /bikes/:id) a request with no token gets
 *   exactly 401 and one with a token that fails verification exactly 403: the token is checked
 *   first (spec: order of checks; docs/reference/requests-and-answers.md#bodies).
 * - Requests node's HTTP parser refuses before the app sees them (a method that is not a token,
 *   bad header bytes, both Content-Length and Transfer-Encoding, a request line and headers over
 *   256 KB, an Expect it does not know) are answered by node itself, without the X-Request-Id
 *   the app puts on every response: 400, 431 or 417.
 * - Never a 5xx: the database is up.
 */

export const NODE_STATUSES = new Set([400, 417, 431]);

type Table = Partial<Record<'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', number[]>>;

interface Route {
  pattern: RegExp;
  methods: Table;
  /** Methods that need a token. */
  protected?: string[];
}

const READ = (statuses: number[]): Table => ({ GET: statuses });

const ROUTES: Route[] = [
  { pattern: /^\/bikes\/all$/, methods: READ([200]) },
  { pattern: /^\/bikes\/changes$/, methods: READ([200, 400, 410]) },
  { pattern: /^\/bikes\/search\/by-title$/, methods: READ([200, 400]) },
  { pattern: /^\/bikes\/by-handle\/[^/]+$/, methods: READ([200, 404]) },
  {
    pattern: /^\/bikes\/[^/]+$/,
    methods: {
      GET: [200, 404],
      PUT: [200, 401, 403, 404, 413, 415],
      PATCH: [200, 400, 401, 403, 404, 413, 415],
      DELETE: [200, 401, 403, 404],
    },
    protected: ['PUT', 'PATCH', 'DELETE'],
  },
  {
    pattern: /^\/bikes$/,
    methods: { GET: [200, 400], POST: [200, 400, 401, 403, 413, 415] },
    protected: ['POST'],
  },
  { pattern: /^\/api\/user$/, methods: { POST: [200, 400, 413, 415] } },
  { pattern: /^\/(healthz|readyz|openapi\.json|docs|docs\/swagger-initializer\.js)$/, methods: READ([200]) },
  { pattern: /^\/docs\/[^/]+$/, methods: READ([200, 404]) },
];

export interface Expectation {
  allowed: Set<number>;
  /** When the rules above pin the answer down to one status. */
  exact?: number;
  /** The route that will answer, when one matches and serves the method. */
  route?: Route;
  /** The path as the router sees it (no trailing slash, no query; case kept: paths match as written). */
  path: string;
}

/** The path of a request target as Koa's router matches it. */
function routedPath(target: string): string {
  let path = target.replace(/^https?:\/\/[^/]*/i, '');
  const query = path.indexOf('?');
  if (query >= 0) path = path.slice(0, query);
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return path;
}

function validPercentEncoding(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

export function expectationFor(method: string, target: string, auth: 'valid' | 'missing' | 'invalid'): Expectation {
  const path = routedPath(target);
  const allowed = new Set<number>([404]);
  const asMethod = (method === 'HEAD' ? 'GET' : method) as keyof Table;
  const matching = ROUTES.filter((route) => route.pattern.test(path));
  // The path picks its route first, a literal one before one with a parameter (/bikes/all before
  // /bikes/:id), and then the method (docs/reference/http.md#path-matching).
  const literal = matching.find((route) => !route.pattern.source.includes('[^/]+'));
  const candidates = literal ? [literal] : matching;
  const serving = candidates.find((route) => route.methods[asMethod]);
  // On a protected route the token comes first, before the path is looked at.
  if (serving?.protected?.includes(asMethod)) {
    if (auth === 'missing') return { allowed: new Set([401]), exact: 401, route: serving, path };
    if (auth === 'invalid') return { allowed: new Set([403]), exact: 403, route: serving, path };
  }
  if (!validPercentEncoding(path)) return { allowed, exact: 404, path };
  // 405 when the path's route does not serve the method.
  if (serving) serving.methods[asMethod]?.forEach((s) => allowed.add(s));
  else if (candidates.length > 0) allowed.add(method === 'OPTIONS' ? 204 : 405);
  // A parameter the route does not know is 400 on every route (docs/reference/http.md#query-parameters).
  if (serving && target.includes('?')) allowed.add(400);
  return { allowed, route: serving, path };
}

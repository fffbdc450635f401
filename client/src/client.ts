import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { type CallOptions, createBike, deleteBike, getBike, updateBike } from './bikes.ts';
import { gzipBodies } from './compress.ts';
import { BikeStates, type Context, type EventSourceConstructor } from './context.ts';
import { CatalogError, refusal } from './errors.ts';
import { facets } from './facets.ts';
import { follow, type FollowOptions } from './follow.ts';
import { pages } from './pages.ts';
import { persist } from './retry.ts';
import type { paths } from './schema.ts';
import { tokenFunction, Tokens, type TokenSource } from './tokens.ts';
import type { Bike, BikePatch, CatalogEvent, FacetName, Facets, Filters, NewBike, Sort } from './types.ts';

export interface CatalogClientOptions {
  /** The service's address: `https://catalog.example.com`. */
  baseUrl: string;
  /**
   * Where write tokens come from: a token, or a function that gives one (where the service gives
   * none to anyone: a token your operator issued, or your identity provider's). Without it, the
   * client asks POST /api/user, and again before the token expires.
   */
  token?: TokenSource;
  /**
   * An API key your operator issued (`bk_live_...`, docs/reference/callers.md#api-keys): the client trades
   * it for a token at POST /api/user, and again before each token expires. Not with `token`.
   */
  apiKey?: string;
  /** The username POST /api/user writes into the tokens it gives (the scope of your Idempotency-Keys). */
  username?: string;
  /** Send write bodies gzip-compressed. */
  compress?: boolean;
  /** Answers (and lost connections) a call takes before it gives up with a ServerError: 10. */
  attempts?: number;
  /** The longest wait for one answer, in milliseconds, before it counts as a lost connection: 60,000. */
  timeoutMs?: number;
  /** The fetch to send with: the platform's by default. */
  fetch?: typeof fetch;
  /**
   * The EventSource `follow` streams the changes with: the platform's where it has one (browsers).
   * `null`, or none: `follow` reads pages of changes instead.
   */
  EventSource?: EventSourceConstructor | null;
}

export interface CatalogClient {
  /** The bike; the client remembers its state (ETag) for `update`. */
  get(id: string, options?: CallOptions): Promise<Bike>;
  /** Creates the bike once, whatever the retries take (one Idempotency-Key for them all). */
  create(bike: NewBike, options?: CallOptions & { idempotencyKey?: string }): Promise<Bike>;
  /** Applies the changes to the bike as last read (If-Match), or throws ConflictError with the bike as it is now. */
  update(bike: string | Bike, changes: BikePatch, options?: CallOptions): Promise<Bike>;
  /** Deletes the bike; one this client read that changed since is kept (ConflictError). */
  delete(id: string, options?: CallOptions): Promise<void>;
  /** The bikes that pass the filters, in the order `sort` names, a page at a time. */
  pages(
    filters?: Filters,
    sort?: Sort,
    options?: CallOptions & { limit?: number },
  ): AsyncGenerator<Bike[], void, undefined>;
  /** For the bikes that pass the filters: the total, each facet's values with counts, the price ranges. */
  facets(filters?: Filters, options?: CallOptions & { facets?: FacetName[] }): Promise<Facets>;
  /** The whole catalog, then each change to it, once and in order, until `signal` aborts. */
  follow(onChange: (event: CatalogEvent) => unknown, options?: FollowOptions): Promise<void>;
  /**
   * The typed openapi-fetch client, for any other call (a replace, a search): its writes are
   * signed with the client's token; no other rule is applied, and answers come as the service gives them.
   */
  api: Client<paths>;
}

/** A client of the bike catalog service at `baseUrl`, with the rules of docs/clients.md built in. */
export function createCatalogClient(options: CatalogClientOptions): CatalogClient {
  const { baseUrl, username, attempts = 10, timeoutMs = 60_000 } = options;
  const api = createClient<paths>({ baseUrl, fetch: options.fetch });
  if (options.compress) api.use(gzipBodies);
  const base = baseUrl.replace(/\/+$/, '');
  const withheld = (bounded: AbortSignal) => corsRefused(`${base}/healthz`, options.fetch ?? fetch, bounded);
  const persistence = (what: string, signal?: AbortSignal) => ({ what, attempts, timeoutMs, signal, withheld });
  const { apiKey } = options;
  if (apiKey !== undefined && options.token !== undefined)
    throw new TypeError('give the client a token or an apiKey, not both');
  const issued = async () => {
    const { answer } = await persist(
      (bounded) =>
        api.POST('/api/user', {
          body: username === undefined || apiKey !== undefined ? undefined : { username },
          // An API key is traded for a token of its own (docs/reference/callers.md#api-keys).
          ...(apiKey !== undefined && { headers: { Authorization: `Bearer ${apiKey}` } }),
          signal: bounded,
        }),
      persistence('POST /api/user'),
    );
    if (answer.data) return answer.data.token;
    throw refusal(
      apiKey === undefined
        ? 'POST /api/user (where the service gives no tokens, give the client a `token` or an `apiKey`)'
        : 'POST /api/user (trading the API key)',
      answer.response,
    );
  };
  const tokens = new Tokens(options.token === undefined ? issued : tokenFunction(options.token));
  api.use(signWrites(tokens));
  const globalEventSource = (globalThis as { EventSource?: EventSourceConstructor }).EventSource;
  const ctx: Context = {
    api,
    baseUrl: base,
    tokens,
    states: new BikeStates(),
    persistence,
    EventSource: options.EventSource === undefined ? globalEventSource : (options.EventSource ?? undefined),
  };
  return {
    get: (id, callOptions) => getBike(ctx, id, callOptions),
    create: (bike, callOptions) => createBike(ctx, bike, callOptions),
    update: (bike, changes, callOptions) => updateBike(ctx, bike, changes, callOptions),
    delete: (id, callOptions) => deleteBike(ctx, id, callOptions),
    pages: (filters, sort, callOptions) => pages(ctx, filters, sort, callOptions),
    facets: (filters, callOptions) => facets(ctx, filters, callOptions),
    follow: (onChange, followOptions) => follow(ctx, onChange, followOptions),
    api,
  };
}

/** Signs every write with the client's token (one that comes with its own Authorization is left as it is). */
function signWrites(tokens: Tokens): Middleware {
  return {
    async onRequest({ request, schemaPath }) {
      const read = request.method === 'GET' || request.method === 'HEAD';
      if (read || schemaPath === '/api/user' || request.headers.has('Authorization')) return undefined;
      const authorization = await tokens.authorization().catch((err: unknown) => {
        // Not a lost connection to try again (retry.ts): what the token's source said.
        if (err instanceof CatalogError) throw err;
        throw new CatalogError(`no token: ${err instanceof Error ? err.message : String(err)}`, undefined, {
          cause: err,
        });
      });
      request.headers.set('Authorization', authorization);
      return request;
    },
  };
}

/**
 * Whether the browser withholds the service's answers from this page (CORS): a request the page
 * may read fails, while one it may not (`no-cors`: an opaque answer) comes back, so the service is
 * there. Outside a browser there is no such thing: false.
 */
async function corsRefused(url: string, send: typeof fetch, signal: AbortSignal): Promise<boolean> {
  if (typeof (globalThis as { document?: unknown }).document === 'undefined') return false;
  // Not from a cache, which would answer for a service that is gone (not every RequestInit type knows `cache`).
  const fresh: object = { cache: 'no-store' };
  const answered = (init: RequestInit) =>
    send(url, { ...fresh, ...init, credentials: 'omit', signal }).then(
      () => true,
      () => false,
    );
  return !(await answered({ mode: 'cors' })) && (await answered({ mode: 'no-cors' }));
}

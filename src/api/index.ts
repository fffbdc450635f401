import type Router from '@koa/router';
import type { ApiKeyLookup } from '../auth/api-keys';
import type { Tokens } from '../auth/tokens';
import type { BikeRepository } from '../bikes/repository';
import { changeFeed } from '../feed/following';
import type { LiveFeed } from '../feed/live';
import { entityTags } from '../http/conditional';
import type { Cursors } from '../http/cursors';
import { eventStreams } from '../http/event-stream';
import type { AbuseLimits } from '../http/limits';
import { routerOf } from '../http/route';
import { createBike, deleteBike, getBike, getBikeByHandle, replaceBike, updateBike } from './bikes';
import { browseBikes } from './browse';
import { bikeChanges } from './changes';
import { bikeFacets } from './facets';
import { listBikes, searchBikesByTitle } from './lists';
import type { Api } from './operation';
import { pageCursors } from './page-cursors';
import { readerOf } from './reads';
import { issueToken } from './tokens';

/**
 * The API's operations, each declared beside its handler in the file of its resource. The order
 * is the OpenAPI document's, and the router's: a literal path (/bikes/all, /bikes/changes) before
 * the parameter beside it (/bikes/:id).
 */
export const API_ROUTES = {
  browseBikes,
  bikeFacets,
  listBikes,
  bikeChanges,
  getBike,
  replaceBike,
  updateBike,
  deleteBike,
  getBikeByHandle,
  searchBikesByTitle,
  createBike,
  issueToken,
};

/** What the API is made of: the service's parts it uses. */
export interface ApiDeps {
  /** Reads may come from a replica. */
  bikes: BikeRepository;
  /** Reads from the primary, for a client that must read its own writes, and the writes. */
  bikesOnPrimary: BikeRepository;
  /** This catalog's identity as it is now (catalog-identity.ts), part of every ETag and cursor. */
  catalogIdentity: () => string;
  /** Seals and opens the cursors the service gives out (cursors.ts). */
  cursors: Cursors;
  tokens: Tokens;
  /** The API keys a tool trades for a token (POST /api/user; docs/reference/callers.md#api-keys). */
  keys: ApiKeyLookup;
  /** The abuse limits (docs/reference/callers.md#abuse-limits). */
  limits: AbuseLimits;
  /** The changes as they commit, for event streams (docs/reference/browse-and-sync.md#live-updates). */
  live: LiveFeed;
  /** MAX_EVENT_STREAMS: event streams this instance keeps open at once. */
  maxEventStreams: number;
  /** How often an event stream gets a comment (HEARTBEAT_MS). */
  heartbeatMs: number;
}

/** The router of the API's operations. */
export function apiRouter(deps: ApiDeps): Router {
  const tags = entityTags(deps.catalogIdentity);
  const api: Api = {
    reader: readerOf(deps.bikes, deps.bikesOnPrimary),
    onPrimary: deps.bikesOnPrimary,
    tags,
    feed: changeFeed(deps.cursors, deps.catalogIdentity, deps.live),
    pages: pageCursors(deps.cursors),
    streams: eventStreams(deps.limits, { maxStreams: deps.maxEventStreams, heartbeatMs: deps.heartbeatMs }),
    tokens: deps.tokens,
    keys: deps.keys,
  };
  return routerOf(API_ROUTES, api, {
    tokens: deps.tokens,
    limits: deps.limits,
    tags,
    // Looked at on the primary, as the writes are.
    stateOf: async (id) => (await deps.bikesOnPrimary.current(id))?.state ?? null,
  });
}

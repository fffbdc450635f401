import { EventSource } from 'undici';
import {
  type Bike,
  type CatalogClientOptions,
  type CatalogEvent,
  type Change,
  createCatalogClient,
  type FollowOptions,
} from '../../client/src/index.ts';
import { waitFor } from '../support/wait';

/**
 * How a follower reads the feed: pages of GET /bikes/changes (Node.js, which has no EventSource),
 * or an event stream, through undici's EventSource, as the client does in a browser.
 */
export const TRANSPORTS = {
  pages: { EventSource: null },
  events: { EventSource },
} satisfies Record<string, Partial<CatalogClientOptions>>;
export type Transport = keyof typeof TRANSPORTS;

export interface Follower {
  /** The catalog as the events rebuilt it. */
  catalog: Map<string, Bike>;
  /** The lists it was given, each with the changes it got after it. */
  lists: { cursor: string; changes: Change[] }[];
  /** Until its catalog holds `bike` as it is. */
  reached(bike: Bike): Promise<void>;
  /** Stops it, and waits until it has stopped. */
  stop(): Promise<void>;
}

/** A client's `follow`, from the service at `baseUrl`, applying each event to a catalog of its own. */
export function startFollower(
  baseUrl: string,
  transport: Transport,
  options: FollowOptions = {},
  onEvent?: (event: CatalogEvent) => unknown,
  clientOptions: Partial<CatalogClientOptions> = {},
): Follower {
  const catalog = new Map<string, Bike>();
  const lists: Follower['lists'] = [];
  const controller = new AbortController();
  const client = createCatalogClient({ baseUrl, ...TRANSPORTS[transport], ...clientOptions });
  const following = client.follow(
    async (event) => {
      await onEvent?.(event);
      if (event.type === 'list') {
        catalog.clear();
        for (const bike of event.bikes) catalog.set(bike.id, bike);
        lists.push({ cursor: event.cursor, changes: [] });
      } else {
        if (event.type === 'upsert') catalog.set(event.id, event.bike);
        else catalog.delete(event.id);
        lists[lists.length - 1]?.changes.push(event);
      }
    },
    { pollMs: 50, ...options, signal: controller.signal },
  );
  let failed: unknown;
  following.catch((err) => (failed = err));
  return {
    catalog,
    lists,
    async reached(bike) {
      const as = JSON.stringify(bike);
      await waitFor(`the follower (${transport}) to reach ${bike.id}`, () => {
        if (failed) throw failed;
        return JSON.stringify(catalog.get(bike.id)) === as || undefined;
      });
    },
    async stop() {
      controller.abort();
      await following;
    },
  };
}

/** Every change of the feed after `cursor`, read page by page until it is caught up. */
export async function changesAfter(baseUrl: string, cursor: string): Promise<Change[]> {
  const changes: Change[] = [];
  for (;;) {
    const res = await fetch(`${baseUrl}/bikes/changes?since=${encodeURIComponent(cursor)}&limit=1000`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as Change[];
    if (page.length === 0) return changes;
    changes.push(...page);
    cursor = page[page.length - 1].cursor;
  }
}

/** /bikes/all, as a catalog. */
export async function catalogAt(baseUrl: string): Promise<Map<string, Bike>> {
  const bikes = (await (await fetch(`${baseUrl}/bikes/all`)).json()) as Bike[];
  return new Map(bikes.map((bike) => [bike.id, bike]));
}

import type { Client } from 'openapi-fetch';
import type { Persistence } from './retry.ts';
import type { paths } from './schema.ts';
import type { Tokens } from './tokens.ts';
import type { Bike } from './types.ts';

/** An EventSource as the client uses one: the browser's, or one a Node.js program gives (undici's). */
export interface EventSourceLike {
  readonly readyState: number;
  close(): void;
  addEventListener(type: 'message', listener: (event: { data: string }) => void): void;
  addEventListener(type: 'error', listener: () => void): void;
}
export type EventSourceConstructor = new (url: string) => EventSourceLike;

/** What every operation of a client shares. */
export interface Context {
  api: Client<paths>;
  baseUrl: string;
  tokens: Tokens;
  states: BikeStates;
  /** How a request persists (retry.ts): its attempts and timeout, for a call of `what`. */
  persistence(what: string, signal?: AbortSignal): Persistence;
  EventSource: EventSourceConstructor | undefined;
}

/**
 * The state of each bike as this client last read or wrote it: its ETag (for If-Match), and its
 * JSON, to tell whether a bike a caller hands back is that state. The most recent 10,000.
 */
export class BikeStates {
  private readonly states = new Map<string, { etag: string; json: string }>();

  remember(bike: Bike, response: Response): void {
    const etag = response.headers.get('ETag');
    this.states.delete(bike.id);
    if (etag === null) return;
    this.states.set(bike.id, { etag, json: canonicalJson(bike) });
    if (this.states.size > 10_000) this.states.delete(this.states.keys().next().value as string);
  }

  forget(id: string): void {
    this.states.delete(id);
  }

  /** The ETag of the bike `id` as last read or written; of `bike` only if that is the state last read. */
  etagOf(id: string, bike?: Bike): string | undefined {
    const state = this.states.get(id);
    return state && (bike === undefined || state.json === canonicalJson(bike)) ? state.etag : undefined;
  }
}

/** JSON with every object's keys sorted: equal for equal values, whatever order their keys were set in. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

import type Koa from 'koa';
import type { ApiKeyLookup } from '../auth/api-keys';
import type { Tokens } from '../auth/tokens';
import type { BikeRepository } from '../bikes/repository';
import type { ChangeFeed } from '../feed/following';
import type { EntityTags } from '../http/conditional';
import { HttpError } from '../http/errors';
import type { EventStreams } from '../http/event-stream';
import type { Route } from '../http/route-declaration';
import type { PageCursors } from './page-cursors';

/** What the operations' handlers work with: made once, by apiRouter (index.ts). */
export interface Api {
  /** Where a read goes: a replica, unless the client asks for the primary (reads.ts). */
  reader(ctx: Koa.Context): BikeRepository;
  /** The writes, and the reads that must see them. */
  onPrimary: BikeRepository;
  tags: EntityTags;
  feed: ChangeFeed;
  pages: PageCursors;
  streams: EventStreams;
  tokens: Tokens;
  /** The API keys a tool trades for a token (POST /api/user). */
  keys: ApiKeyLookup;
}

/**
 * An operation of the API: its declaration, which the router mounts and the OpenAPI document
 * describes, and its handler, in one object. Its input's type comes from its schema.
 */
export const operation = <Input>(route: Route<Input, Api>): Route<Input, Api> => route;

export function notFound(): never {
  throw new HttpError(404);
}

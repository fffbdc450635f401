/**
 * The bike catalog service's client. Its calls are openapi-fetch's, typed by schema.ts, which
 * openapi-typescript generates from the service's OpenAPI document; what it adds are the rules
 * of docs/clients.md, each a function.
 */
export { createCatalogClient, type CatalogClient, type CatalogClientOptions } from './client.ts';
export type { CallOptions } from './bikes.ts';
export type { EventSourceConstructor, EventSourceLike } from './context.ts';
export {
  BlockedError,
  CatalogError,
  ConflictError,
  InsufficientScopeError,
  InvalidTokenError,
  IssuanceClosedError,
  NotFoundError,
  RequestError,
  ServerError,
  TokenMissingError,
} from './errors.ts';
export type { FollowOptions, FollowStatus } from './follow.ts';
export type { components, operations, paths } from './schema.ts';
export type { TokenSource } from './tokens.ts';
export type {
  Bike,
  BikePatch,
  CatalogEvent,
  Change,
  FacetName,
  Facets,
  Filters,
  Money,
  NewBike,
  PriceRange,
  Sort,
} from './types.ts';
export { verifyWebhook, type WebhookEvent, WebhookVerificationError } from './webhooks.ts';

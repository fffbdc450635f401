import type { Bike } from './types.ts';

/** Every error the client throws for an answer of the service, or for the lack of one. */
export class CatalogError extends Error {
  override name = 'CatalogError';
  constructor(
    message: string,
    /** The answer's status; undefined when no answer came (the connection failed). */
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A 4xx: the request was refused, and nothing was written. */
export class RequestError extends CatalogError {
  override name = 'RequestError';
  constructor(
    message: string,
    status: number,
    /** The field the service refused (`X-Invalid-Field`: `priceRange.minPrice.amount`), when it named one. */
    readonly invalidField?: string,
  ) {
    super(message, status);
  }
}

/** A 404: no such bike. */
export class NotFoundError extends RequestError {
  override name = 'NotFoundError';
}

/**
 * A write refused because the bike changed since it was read (412), or found changed before it
 * was sent: nothing was written. `current` is the bike as it is now; the client remembers its
 * state, so `update(current.id, changes)` again applies the changes to it.
 */
export class ConflictError extends CatalogError {
  override name = 'ConflictError';
  constructor(readonly current: Bike) {
    super(`bike ${current.id} changed since it was read: nothing was written`, 412);
  }
}

/**
 * The service did not settle a request within the client's attempts: it answered 5xx (or 429,
 * 409), or did not answer. `written` says what became of a write: `nothing` (every answer said
 * so, 503), or `unknown` (an answer said `Write-Outcome: unknown`, or a connection was lost
 * after the request went). A create's `idempotencyKey` learns its outcome later: `create(bike,
 * { idempotencyKey })` within 24 hours answers the bike it made, or makes it.
 */
export class ServerError extends CatalogError {
  override name = 'ServerError';
  constructor(
    message: string,
    status: number | undefined,
    readonly written: 'nothing' | 'unknown',
    readonly idempotencyKey?: string,
    options?: { cause?: unknown },
  ) {
    super(message, status, options);
  }
}

/**
 * A request stopped on this side, which asking again cannot change: the client refused to send it
 * (a token that an `Authorization` header cannot carry), or the browser withheld the service's
 * answer from this page (CORS: the service does not allow the page's origin). Nothing was written.
 */
export class BlockedError extends CatalogError {
  override name = 'BlockedError';
  readonly written = 'nothing';
}

/** The error an answer that settles a request as refused stands for: a 404, or another 4xx. */
export function refusal(what: string, response: Response): RequestError {
  const message = `${what}: ${response.status} ${response.statusText}`;
  const field = response.headers.get('X-Invalid-Field') ?? undefined;
  if (response.status === 404) return new NotFoundError(message, 404);
  return new RequestError(field === undefined ? message : `${message} (${field})`, response.status, field);
}

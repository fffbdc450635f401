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
  const refused = authRefusal(message, response);
  if (refused) return refused;
  return new RequestError(field === undefined ? message : `${message} (${field})`, response.status, field);
}

/** What the service's WWW-Authenticate says (RFC 6750): its parameters by name. */
function challengeOf(response: Response): Record<string, string> {
  const header = response.headers.get('WWW-Authenticate') ?? '';
  return Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map(([, name, value]) => [name, value]));
}

/** A 401: the write carried no token (docs/reference/callers.md#refusals). */
export class TokenMissingError extends RequestError {
  override name = 'TokenMissingError';
}

/**
 * A 403 `invalid_token`: the token (or the API key traded for it) was refused: expired, revoked, not
 * signed by a key the service trusts, or malformed. `description` says which, as the service put it.
 */
export class InvalidTokenError extends RequestError {
  override name = 'InvalidTokenError';
  constructor(
    message: string,
    readonly description: string,
  ) {
    super(message, 403);
  }
}

/** A 403 `insufficient_scope`: the token may not do this; `scope` is the one it needs (`bikes:delete`). */
export class InsufficientScopeError extends RequestError {
  override name = 'InsufficientScopeError';
  constructor(
    message: string,
    readonly scope: string,
  ) {
    super(message, 403);
  }
}

/** A 403 of POST /api/user without a key: the operator closed token issuance; give the client a `token` or an `apiKey`. */
export class IssuanceClosedError extends RequestError {
  override name = 'IssuanceClosedError';
}

/** The refusal a 401 or 403 stands for, read from its challenge; undefined for other statuses. */
function authRefusal(message: string, response: Response): RequestError | undefined {
  if (response.status === 401) return new TokenMissingError(message, 401);
  if (response.status !== 403) return undefined;
  const { error, error_description: description = '', scope = '' } = challengeOf(response);
  if (error === 'invalid_token') return new InvalidTokenError(`${message} (${description})`, description);
  if (error === 'insufficient_scope') return new InsufficientScopeError(`${message} (needs ${scope})`, scope);
  return new IssuanceClosedError(message, 403);
}

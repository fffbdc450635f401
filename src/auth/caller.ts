import { createHash } from 'node:crypto';
import type { Scope } from './scopes';

/**
 * Who sent a request, as its token says (docs/reference/callers.md#who-a-caller-is): what authentication
 * attaches to the request (`ctx.state.user`), one shape whatever kind of token it was.
 */
export type Caller =
  /** A token of POST /api/user: `subject` is the username the caller claimed (null: none), proven by nobody. */
  (
    | { proven: false; subject: string | null }
    /**
     * A token the operator issued (`npm run token`: `issuer` is OPERATOR_ISSUER, `subject` its
     * username) or the identity provider signed (`issuer` its `iss`, `subject` its `sub`).
     */
    | { proven: true; subject: string; issuer: string }
    /** A token traded for an API key (`issuer` KEY_ISSUER, `subject` the key's label, `keyId` its id). */
    | { proven: true; subject: string; issuer: typeof KEY_ISSUER; keyId: string }
  ) & {
    /** What it may do (docs/reference/callers.md#scopes): every scope in the open mode. */
    scopes: readonly Scope[];
  };

/** The `iss` of the tokens `npm run token` signs; POST /api/user never sets one. */
export const OPERATOR_ISSUER = 'urn:bike-catalog:operator';

/** The `iss` of the tokens POST /api/user gives for an API key (docs/reference/callers.md#api-keys). */
export const KEY_ISSUER = 'urn:bike-catalog:key';

/**
 * One name per caller, never the same for two kinds of caller: the scope of its Idempotency-Keys
 * (docs/reference/caching-and-conditions.md#idempotency-keys). A claimed name, every anonymous token together, and each
 * issuer's subjects are apart; hashed, as a name may be any string.
 */
export function scopeOf(caller: Caller): string {
  const who = caller.proven
    ? `proven\n${caller.issuer}\n${caller.subject}`
    : caller.subject === null
      ? 'anonymous'
      : `user\n${caller.subject}`;
  return createHash('sha256').update(who).digest('base64url');
}

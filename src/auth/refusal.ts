/**
 * Why a token is refused, as RFC 6750 (3.1) tells a client: each reason its own `error` code and
 * `error_description` in the 403's WWW-Authenticate, its own plain-text reason, and its own count
 * in /metrics (docs/reference/callers.md#refusals).
 */
const REFUSALS = {
  expired: 'the token has expired',
  revoked: 'the API key of this token was revoked or has expired',
  foreign: 'the token is not signed by a key this service trusts',
  malformed: 'the token is malformed or lacks a claim this service requires',
  'issuance-closed': 'tokens of POST /api/user are refused while token issuance is closed',
  'unknown-key': 'the API key is not known, was revoked or has expired',
} as const;

export type RefusalReason = keyof typeof REFUSALS;

/** A token (or an API key) refused, for a reason a client is told. */
export class TokenRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    options?: ErrorOptions,
  ) {
    super(REFUSALS[reason], options);
  }
}

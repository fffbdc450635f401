import { BlockedError } from './errors.ts';

/**
 * Where write tokens come from: a token, or a function that gives one (your identity provider, a
 * token your operator issued, your own call to POST /api/user). Without one, the client asks the
 * service's POST /api/user.
 */
export type TokenSource = string | (() => string | Promise<string>);

/**
 * The token writes are signed with: asked for when first needed, and again before it expires, as
 * its `exp` and `iat` claims say (read, not verified: the service verifies). A token whose `exp`
 * cannot be read is asked for each time: its source knows when it ends. A token the service
 * refuses is renewed once (`renew`, by persist).
 */
export class Tokens {
  private token: Promise<string> | undefined;
  private renewAt = 0;

  constructor(private readonly source: () => Promise<string>) {}

  async authorization(): Promise<string> {
    if (this.token === undefined || Date.now() >= this.renewAt) {
      const pending = this.source();
      // Requests meanwhile wait for this one rather than each asking for a token.
      this.token = pending;
      this.renewAt = Infinity;
      pending.then(
        (token) => {
          if (this.token === pending) this.renewAt = renewalTime(token);
        },
        () => {
          if (this.token === pending) this.token = undefined;
        },
      );
    }
    const token = (await this.token).trim();
    if (!B64TOKEN.test(token)) {
      this.token = undefined;
      // Never the token itself in the message: it may be a working one with a stray character.
      throw new BlockedError(
        'the token is not one an Authorization header carries (RFC 6750: letters, digits and -._~+/, then any =): nothing was sent',
      );
    }
    return `Bearer ${token}`;
  }

  /** Forgets the token, so the next request gets another. */
  renew(): void {
    this.token = undefined;
  }
}

/**
 * A bearer token as RFC 6750 writes it (a JWT is one). Anything else, a space or a newline inside
 * above all, would not reach the service as sent: fetch refuses it, printing it, or the service
 * reads another token from the header.
 */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * When a token that came now should be renewed (Date.now()'s milliseconds): a quarter of its life
 * before its `exp`, a minute at most. Where our clock says that time has passed already (a clock
 * ahead of the issuer's), that long after it came, so that a token is not asked for on every
 * request. Now, when the token does not say.
 */
function renewalTime(token: string): number {
  const { exp, iat } = claimsOf(token);
  if (typeof exp !== 'number') return 0;
  const life = typeof iat === 'number' ? exp - iat : 0;
  const margin = Math.min(60, life / 4);
  const byClock = (exp - margin) * 1000;
  return byClock > Date.now() ? byClock : Date.now() + (life - margin) * 1000;
}

/** A JWT's claims, unverified; {} for a token that is not one. */
function claimsOf(token: string): { exp?: unknown; iat?: unknown } {
  const payload = token.split('.')[1];
  try {
    const claims: unknown = JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/')));
    return typeof claims === 'object' && claims !== null ? claims : {};
  } catch {
    return {};
  }
}

/** A token source as the function Tokens asks. */
export function tokenFunction(source: TokenSource): () => Promise<string> {
  return typeof source === 'string' ? async () => source : async () => source();
}

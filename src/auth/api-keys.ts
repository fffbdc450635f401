import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys (docs/reference/callers.md#api-keys): 256 random bits behind a prefix a secret scanner (and a
 * person) recognises, shown once, kept only as their SHA-256. A key this long needs no slow hash:
 * no one can search its space, whatever they know of its hash.
 */
const KEY_PREFIX = 'bk_live_';

/** A new key: the prefix and 32 random bytes, base64url (43 characters). */
export const newApiKey = () => `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;

/** What the store keeps of a key, and looks it up by. */
export const hashOfKey = (key: string) => createHash('sha256').update(key).digest('hex');

/** A bearer value that is an API key, not a token: it has the prefix (a JWT begins with `eyJ`). */
export const isApiKey = (value: string) => value.startsWith(KEY_PREFIX);

const UNITS: Record<string, number> = { m: 60, h: 3_600, d: 86_400, w: 604_800, y: 31_536_000 };

/** `--expires 90d`: a duration in minutes, hours, days, weeks or years, as seconds. */
export function parseDuration(text: string): number {
  const match = /^(\d{1,6})([mhdwy])$/.exec(text.trim());
  if (!match || Number(match[1]) === 0) {
    throw new Error(`"${text}" is not a duration: a whole number and m, h, d, w or y (90d, 12w, 1y)`);
  }
  return Number(match[1]) * UNITS[match[2]];
}

/** What an API key grants, as the store finds it when a tool trades it for a token. */
export interface ApiKeyGrant {
  id: string;
  label: string;
  scopes: string[];
}

/** The store of API keys, as the token endpoint uses it (src/db/api-keys.ts). */
export interface ApiKeyLookup {
  /** The key with this hash, if it stands (not revoked, not expired), marked used now; undefined otherwise. */
  use(keyHash: string): Promise<ApiKeyGrant | undefined>;
}

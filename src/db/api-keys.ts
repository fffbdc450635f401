import { sql } from 'kysely';
import type { Query } from './pool';
import { kysely, param, prepare } from './sql';

/**
 * The API keys the operator issues (docs/reference/callers.md#api-keys), in the table `api_keys`: each kept
 * as the SHA-256 of the key alone, with its label, its scopes and its times. Revoking keeps the
 * row, so its label still names its writes in the change log; a label is never used twice.
 */

/** A key as `npm run keys -- list` shows it: never the key, nor its hash. */
export interface ApiKeyRecord {
  id: string;
  label: string;
  scopes: string[];
  createdAt: Date;
  /** null: it does not expire. */
  expiresAt: Date | null;
  /** When a token was last traded for it; null: never. */
  lastUsedAt: Date | null;
  /** null: it stands. */
  revokedAt: Date | null;
}

/** A key stands while it is not revoked nor past its expiry. */
const STANDS = sql<boolean>`revoked_at IS NULL AND (expires_at IS NULL OR expires_at > statement_timestamp())`;

const RECORD = ['id', 'label', 'scopes', 'created_at', 'expires_at', 'last_used_at', 'revoked_at'] as const;

const statements = {
  /** A tool trades its key for a token: the key that stands with this hash, marked used now. */
  use: prepare({ keyHash: param<string>() }, (p) =>
    kysely
      .updateTable('api_keys')
      .set({ last_used_at: sql`statement_timestamp()` })
      .where('key_hash', '=', p.keyHash)
      .where(STANDS)
      .returning(['id', 'label', 'scopes']),
  ),
  add: prepare(
    {
      id: param<string>(),
      label: param<string>(),
      keyHash: param<string>(),
      scopes: param<string[]>(),
      lifetimeSeconds: param<number | null>(),
    },
    (p) =>
      kysely
        .insertInto('api_keys')
        .values({
          id: p.id,
          label: p.label,
          key_hash: p.keyHash,
          scopes: sql`${p.scopes}::text[]`,
          expires_at: sql`statement_timestamp() + make_interval(secs => ${p.lifetimeSeconds}::double precision)`,
        })
        .onConflict((conflict) => conflict.column('label').doNothing())
        .returning(RECORD),
  ),
  list: prepare({}, () => kysely.selectFrom('api_keys').select(RECORD).orderBy('created_at').orderBy('label')),
  /** The key with this label, or this id: revoked now, unless it already was. */
  revoke: prepare({ which: param<string>() }, (p) =>
    kysely
      .updateTable('api_keys')
      .set({ revoked_at: sql`coalesce(revoked_at, statement_timestamp())` })
      .where((eb) => eb.or([eb('label', '=', p.which), eb(sql`id::text`, '=', p.which)]))
      .returning(RECORD),
  ),
};

type Row = {
  id: string;
  label: string;
  scopes: string[];
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
};

const recordOf = (row: Row): ApiKeyRecord => ({
  id: row.id,
  label: row.label,
  scopes: row.scopes,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

/** The store of API keys over `query` (the primary's). */
export function apiKeys(query: Query) {
  return {
    async use(keyHash: string) {
      const [row] = await statements.use.run(query, { keyHash });
      return row;
    },
    /** A new key's record; undefined when its label is taken (by a key revoked or not). */
    async add(key: { id: string; label: string; keyHash: string; scopes: string[]; lifetimeSeconds: number | null }) {
      const [row] = await statements.add.run(query, key);
      return row && recordOf(row as Row);
    },
    async list() {
      return (await statements.list.run(query, {})).map((row) => recordOf(row as Row));
    },
    /** The key revoked (or revoked before); undefined when no key has that label or id. */
    async revoke(which: string) {
      const [row] = await statements.revoke.run(query, { which });
      return row && recordOf(row as Row);
    },
  };
}

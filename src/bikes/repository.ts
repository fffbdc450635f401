import { sql } from 'kysely';
import { type Query, type ServicePool, writeOn } from '../db/pool';
import { poolReads, type Reads } from '../db/replica';
import { holds, type StateCondition, type WriteConditions } from '../http/preconditions';
import { containing, kysely, param, prepare } from '../db/sql';
import type { Bike, BikeFields, BikePatch } from './bike';
import type { ReadCache } from './read-cache';
import {
  type Seen,
  seenOf,
  type Unchanged,
  unchangedFor,
  versionAlone,
  versionOf,
  withListVersion,
} from './catalog-version';
import {
  BIKE_COLUMNS,
  bikeParams,
  fromModelFields,
  paramsAsColumns,
  patchColumns,
  patchParams,
  patchValues,
  setColumns,
  toModelFields,
  WRITTEN_COLUMNS,
} from './fields';

/**
 * The catalog's storage, in Bike objects. Every read and every write is one SQL statement,
 * compiled once (src/db/sql.ts) and checked against the tables prisma/schema.prisma defines; a
 * write carries its preconditions in its own statement, so the happy path is one round trip
 * (docs/reference/database.md#prisma-client).
 */

/** Rows per list or search batch: memory holds one batch at a time however large the catalog is. */
export const LIST_BATCH_SIZE = 250;

/** Below every insertion sequence, so the first batch starts at the beginning. */
const BEFORE_FIRST_SEQ = '-9223372036854775808';

/**
 * A state of a bike, `<version>.<xmin>`: its version (drawn from one sequence at every insert
 * and, by a trigger, every update) and the transaction that wrote the row (PostgreSQL's own
 * xmin, which no restore, copy or switched-off trigger can keep). Its strong ETag is made of it
 * (docs/reference/caching-and-conditions.md#conditional-get).
 */
const STATE = sql<string>`(bikes.version::text || '.' || bikes.xmin::text)`;

/** A bike's columns and its state: what every single-bike read and every write returns. */
const STORED_COLUMNS = [...BIKE_COLUMNS, STATE.as('state')] as const;

/**
 * Who writes, as the change log records it (docs/reference/callers.md#who-changed-what): a token's
 * subject (null: none) and, when someone vouches for it, the token's issuer. A Caller is one.
 */
export interface Writer {
  subject: string | null;
  issuer?: string;
  /** What the token may do (docs/reference/callers.md#scopes), recorded with the change. */
  scopes: readonly string[];
  /** The API key the token was traded for: the write stands only while the key does. */
  keyId?: string;
}

/**
 * The parameter of the writer: `{subject, issuer, scopes, key id}`, the text[] the change log's
 * triggers read (the scopes space-separated; the issuer and the key id null where there is none).
 */
const writerParams = () => ({ writer: param<(string | null)[]>() });

/** `writer`'s value: U+0000, which PostgreSQL text cannot hold, as U+FFFD. */
const writerValue = ({ subject, issuer, scopes, keyId }: Writer) => [
  subject === null ? null : subject.replaceAll('\u0000', '\uFFFD'),
  issuer ?? null,
  scopes.join(' '),
  keyId ?? null,
];

/**
 * A write's first step: the writer set for its transaction alone (is_local), where the change
 * log's triggers read it (the migration change_writers). The write draws its rows from this
 * CTE (INSERT ... SELECT ... FROM writer, UPDATE ... FROM writer, DELETE ... USING writer), so the
 * setting is made before any row changes, whatever plan runs it, in the same statement: one round
 * trip, and through a pooler in transaction mode too.
 */
const asWriter = ({ writer }: ReturnType<typeof writerParams>) =>
  kysely.with(
    (cte) => cte('writer').materialized(),
    // A token traded for an API key writes only while the key stands (docs/reference/callers.md#api-keys):
    // api_key_stands raises BCK01, and the statement changes nothing, once it is revoked or expired.
    () =>
      sql<{
        set: string;
      }>`(SELECT set_config('bike_catalog.writer', ${writer}::text[]::text, true) AS set WHERE (${writer}::text[])[4] IS NULL OR api_key_stands(${writer}::text[]))`,
  );

/** A whole bike inserted by its writer (INSERT ... SELECT ... FROM writer): a create's, and a PUT's that may create. */
const insertBike = (p: ReturnType<typeof bikeParams> & ReturnType<typeof writerParams>) =>
  asWriter(p)
    .insertInto('bikes')
    .columns(['id', ...WRITTEN_COLUMNS])
    .expression((eb) => eb.selectFrom('writer').select([p.id.as('id'), ...paramsAsColumns(p)]));

/** The parameters of a write's preconditions: the states it may find the bike in, and may not (null: any). */
const conditionParams = () => ({ ifMatch: param<string[] | null>(), ifNoneMatch: param<string[] | null>() });

/**
 * The bike's state is one If-Match allows and If-None-Match does not: `= ANY` of an empty list
 * holds for no state, `<> ALL` of one for every state.
 */
const meets = ({ ifMatch, ifNoneMatch }: ReturnType<typeof conditionParams>) =>
  sql<boolean>`(${ifMatch}::text[] IS NULL OR ${STATE} = ANY(${ifMatch}::text[]))
           AND (${ifNoneMatch}::text[] IS NULL OR ${STATE} <> ALL(${ifNoneMatch}::text[]))`;

/** The advisory lock space of idempotency keys: hashtextextended's seed, so other locks do not collide with it. */
const IDEMPOTENCY_LOCK_SEED = 2_024_112_303;
/** How long an Idempotency-Key is remembered (docs/reference/caching-and-conditions.md#idempotency-keys: at least 24 hours). */
const IDEMPOTENCY_KEY_LIFETIME = '24 hours';

/** @public bench/run.js requires them from dist/ (--explain). */
export const statements = {
  /** On the primary key. */
  byId: prepare({ id: param<string>() }, (p) =>
    kysely.selectFrom('bikes').select(STORED_COLUMNS).where('id', '=', p.id),
  ),
  /** On the hash index bikes_handle_idx (a b-tree cannot hold long handles): the oldest with that handle. */
  firstByHandle: prepare({ handle: param<string>() }, (p) =>
    kysely.selectFrom('bikes').select(STORED_COLUMNS).where('handle', '=', p.handle).orderBy('seq').limit(sql.lit(1)),
  ),
  /** Keyset pagination on bikes_seq_key: every batch is one index range scan. */
  batch: prepare({ after: param<string>(), limit: param<number>() }, (p) =>
    kysely
      .selectFrom('bikes')
      .select(BIKE_COLUMNS)
      .select('seq')
      .where('seq', '>', p.after)
      .orderBy('seq')
      .limit(p.limit),
  ),
  /** The pattern is a LIKE constant ('%term%'), which the planner can match to the trigram index. */
  titleBatch: prepare({ pattern: param<string>(), after: param<string>(), limit: param<number>() }, (p) =>
    kysely
      .selectFrom('bikes')
      .select(BIKE_COLUMNS)
      .select('seq')
      .where('title', 'like', p.pattern)
      .where('seq', '>', p.after)
      .orderBy('seq')
      .limit(p.limit),
  ),
  /** The catalog's version and the first batch of the list, in one statement: one snapshot. */
  listHead: prepare({ limit: param<number>() }, (p) =>
    withListVersion(kysely.selectFrom('bikes').select(BIKE_COLUMNS).select('seq').orderBy('seq').limit(p.limit)),
  ),
  /** The same for a search. */
  titleHead: prepare({ pattern: param<string>(), limit: param<number>() }, (p) =>
    withListVersion(
      kysely
        .selectFrom('bikes')
        .select(BIKE_COLUMNS)
        .select('seq')
        .where('title', 'like', p.pattern)
        .orderBy('seq')
        .limit(p.limit),
    ),
  ),
  insert: prepare({ ...bikeParams(), ...writerParams() }, (p) => insertBike(p).returning(STORED_COLUMNS)),
  /**
   * PUT without If-Match: one INSERT ... ON CONFLICT (id) DO UPDATE, so a replaced bike keeps its
   * place (seq); under If-None-Match tags, the update only from another state.
   */
  upsert: prepare({ ...bikeParams(), ifNoneMatch: param<string[] | null>(), ...writerParams() }, (p) =>
    insertBike(p)
      .onConflict((conflict) =>
        conflict
          .column('id')
          .doUpdateSet(setColumns(p))
          .where(sql<boolean>`(${p.ifNoneMatch}::text[] IS NULL OR ${STATE} <> ALL(${p.ifNoneMatch}::text[]))`),
      )
      .returning(STORED_COLUMNS),
  ),
  /** PUT with If-Match: only over a bike that is there, in a state the conditions allow. */
  replace: prepare({ ...bikeParams(), ...conditionParams(), ...writerParams() }, (p) =>
    asWriter(p)
      .updateTable('bikes')
      .from('writer')
      .set(setColumns(p))
      .where('id', '=', p.id)
      .where(meets(p))
      .returning(STORED_COLUMNS),
  ),
  /** PUT with If-None-Match: *: only where there is no bike (the primary key refuses the rest). */
  insertOnly: prepare({ ...bikeParams(), ...writerParams() }, (p) =>
    insertBike(p)
      .onConflict((conflict) => conflict.column('id').doNothing())
      .returning(STORED_COLUMNS),
  ),
  /**
   * PATCH: the columns the patch names (`patched`) set to its values, null included, and the rest
   * as they are, so concurrent patches of other fields are kept: each SET reads the row as the
   * update finds it. One statement for every set of fields.
   */
  patch: prepare({ id: param<string>(), ...patchParams(), ...conditionParams(), ...writerParams() }, (p) =>
    asWriter(p)
      .updateTable('bikes')
      .from('writer')
      .set(patchColumns(p))
      .where('id', '=', p.id)
      .where(meets(p))
      .returning(STORED_COLUMNS),
  ),
  delete: prepare({ id: param<string>(), ...conditionParams(), ...writerParams() }, (p) =>
    asWriter(p).deleteFrom('bikes').using('writer').where('id', '=', p.id).where(meets(p)).returning('bikes.id'),
  ),
  /**
   * A create under an Idempotency-Key, in one statement (docs/reference/caching-and-conditions.md#idempotency-keys):
   * the key's advisory lock, taken unless a request with this key is still running; the key
   * claimed, when new or past its lifetime, with the version drawn for the bike and the
   * transaction's id (the bike's xmin), so a replay answers with the ETag the create did; the
   * bike inserted only when the key was claimed. It returns the bike created, or nothing: then
   * the key was taken (`seenKey` tells by whom) or is being taken.
   */
  createOnce: prepare(
    {
      client: param<string>(),
      key: param<string>(),
      fingerprint: param<string>(),
      response: param<string>(),
      ...bikeParams(),
      ...writerParams(),
    },
    (p) =>
      asWriter(p)
        .with(
          (cte) => cte('lock').materialized(),
          () =>
            sql<{ free: boolean }>`(SELECT pg_try_advisory_xact_lock(
              hashtextextended(${p.key}, hashtextextended(${p.client}, ${sql.lit(IDEMPOTENCY_LOCK_SEED)}))) AS free)`,
        )
        .with(
          'claimed',
          () => sql<{ bike_version: string }>`(
            INSERT INTO idempotency_keys (client, key, fingerprint, bike_id, bike_version, bike_xmin, response)
            SELECT ${p.client}, ${p.key}, ${p.fingerprint}, ${p.id}::uuid, nextval('bikes_version_seq'),
                   pg_current_xact_id()::text::bigint % 4294967296, ${p.response}
              FROM lock WHERE free
            ON CONFLICT (client, key) DO UPDATE
               SET fingerprint = excluded.fingerprint, bike_id = excluded.bike_id,
                   bike_version = excluded.bike_version, bike_xmin = excluded.bike_xmin,
                   response = excluded.response, created_at = now()
             WHERE idempotency_keys.created_at < now() - ${sql.lit(IDEMPOTENCY_KEY_LIFETIME)}::interval
            RETURNING bike_version)`,
        )
        .with('created', (db) =>
          db
            .insertInto('bikes')
            .columns(['id', ...WRITTEN_COLUMNS, 'version'])
            .expression(
              db
                .selectFrom(['claimed', 'writer'])
                .select([p.id.as('id'), ...paramsAsColumns(p), 'claimed.bike_version']),
            )
            .returning(STORED_COLUMNS),
        )
        .selectFrom('created')
        .selectAll(),
  ),
  /** An Idempotency-Key seen before: what it was used with, and the answer it got. */
  seenKey: prepare({ client: param<string>(), key: param<string>() }, (p) =>
    kysely
      .selectFrom('idempotency_keys')
      .select(['fingerprint', 'response', sql<string>`bike_version::text || '.' || bike_xmin::text`.as('state')])
      .where('client', '=', p.client)
      .where('key', '=', p.key),
  ),
  /** Keys past their lifetime, a bounded number at a time (the service prunes every hour). */
  pruneKeys: prepare({ limit: param<number>() }, (p) =>
    kysely.deleteFrom('idempotency_keys').where(({ eb, selectFrom }) =>
      eb(
        sql`(client, key)`,
        'in',
        selectFrom('idempotency_keys')
          .select(sql`(client, key)`.as('k'))
          .where('created_at', '<', sql<Date>`now() - ${sql.lit(IDEMPOTENCY_KEY_LIFETIME)}::interval`)
          .limit(p.limit),
      ),
    ),
  ),
};

/** A row of a list's batch. */
type BatchRow = Awaited<ReturnType<typeof statements.batch.run>>[number];

/** A list read in one batch, as batches. */
async function* inOneBatch(rows: BatchRow[]): AsyncGenerator<Bike[]> {
  if (rows.length > 0) yield rows.map(fromModelFields);
}

/** A bike as stored, and its state (STATE): what its strong ETag names. */
export interface StoredBike {
  bike: Bike;
  state: string;
}

/** The answer of a write whose preconditions did not hold: nothing was written. */
export const PRECONDITION_FAILED = 'precondition failed';

/** A list of the states a condition allows (If-Match) or forbids (If-None-Match), for a statement; null when absent. */
const statesParam = (condition: StateCondition | undefined) => (condition ? condition.states : null);

type StoredRow = Parameters<typeof fromModelFields>[0] & { state: string };
const stored = (row: StoredRow): StoredBike => ({ bike: fromModelFields(row), state: row.state });
const first = ([row]: StoredRow[]): StoredBike | null => (row ? stored(row) : null);

export type BikeRepository = ReturnType<typeof createBikeRepository>;

/** What a create under an Idempotency-Key came to. */
export type CreateOnceOutcome =
  | { kind: 'created'; stored: StoredBike }
  | { kind: 'replay'; response: string; state: string }
  | { kind: 'mismatch' }
  | { kind: 'in-flight' };

/**
 * Writes go to `writes`, the primary's pool (writeOn: a lost connection under a write is an
 * unknown outcome, not a failure); reads to `reads`, which may be a replica, or else the primary.
 * With `cache`, reads by id and by handle, and a list's 304, come from it while it may answer
 * (its misses read the primary, which its poll watches); `evicts`: a cache this repository's
 * writes evict from, as they end, without reading through it (the primary's repository, which
 * `X-Read-From: primary` reads).
 */
export function createBikeRepository({
  writes,
  reads = poolReads(writes),
  cache,
  evicts = cache,
}: {
  writes: ServicePool;
  reads?: Reads;
  cache?: ReadCache<StoredBike>;
  evicts?: ReadCache<StoredBike>;
}) {
  const write: Query = writeOn(writes);
  const onPrimary = poolReads(writes).query;
  /** A write of the bike, its cached copies evicted once it has ended, whatever its outcome (read your writes). */
  const writing = async <T>(id: string, written: Promise<T>): Promise<T> => {
    try {
      return await written;
    } finally {
      evicts?.wrote(id);
    }
  };
  /** The bike as it is now on the primary: what tells a missing bike from a failed precondition. */
  const current = async (id: string) => first(await statements.byId.run(onPrimary, { id }));
  /**
   * Why a write of the bike matched no row: there is none (null), or, under conditions, they did
   * not hold. Without conditions only a missing bike matches nothing.
   */
  const missedBecause = async (id: string, when: WriteConditions) =>
    when.ifMatch || when.ifNoneMatch ? (await current(id)) && PRECONDITION_FAILED : null;

  return {
    current,

    /** One INSERT ... RETURNING. */
    create: async (writer: Writer, id: string, handle: string, fields: BikeFields): Promise<StoredBike> =>
      stored(
        (
          await writing(
            id,
            statements.insert.run(write, {
              ...toModelFields({ id, handle, ...fields }),
              writer: writerValue(writer),
            }),
          )
        )[0],
      ),

    /**
     * Creates the bike once for a client's Idempotency-Key (docs/reference/caching-and-conditions.md#idempotency-keys),
     * in one statement: a key seen before (within 24 hours) gives the answer it got (`replay`),
     * or `mismatch` when its fields differ; a key whose first request is still running gives
     * `in-flight`. A statement that does not commit leaves neither key nor bike.
     */
    async createOnce(
      writer: Writer,
      request: { client: string; key: string; fingerprint: string; response: string },
      create: { id: string; handle: string; fields: BikeFields },
    ): Promise<CreateOnceOutcome> {
      const [created] = await writing(
        create.id,
        statements.createOnce.run(write, {
          ...request,
          ...toModelFields({ id: create.id, handle: create.handle, ...create.fields }),
          writer: writerValue(writer),
        }),
      );
      if (created) return { kind: 'created', stored: stored(created) };
      // Not claimed: a key seen before, or one whose first request has not committed yet.
      const [seen] = await statements.seenKey.run(write, { client: request.client, key: request.key });
      if (!seen) return { kind: 'in-flight' };
      if (seen.fingerprint !== request.fingerprint) return { kind: 'mismatch' };
      return { kind: 'replay', response: seen.response, state: seen.state };
    },

    /** Deletes keys past their lifetime, at most `limit`; returns how many. */
    async pruneIdempotencyKeys(limit = 10_000): Promise<number> {
      return (await statements.pruneKeys.run(write, { limit })).length;
    },

    /** Where this repository's reads go: a replica while it qualifies, or the primary (for the change feed). */
    reads,

    /** Set while the reads come from a replica because the primary cannot be reached (Reads.stale). */
    stale: () => reads.stale?.(),

    async findById(id: string): Promise<StoredBike | null> {
      const fromCache = cache?.byId(id, async () => first(await statements.byId.run(onPrimary, { id })));
      return fromCache ? await fromCache : first(await statements.byId.run(reads.query, { id }));
    },

    async findFirstByHandle(handle: string): Promise<StoredBike | null> {
      // No stored string holds U+0000 (PostgreSQL text cannot), and as a parameter it is an error.
      if (handle.includes('\u0000')) return null;
      const fromCache = cache?.byHandle(handle, async () =>
        first(await statements.firstByHandle.run(onPrimary, { handle })),
      );
      return fromCache ? await fromCache : first(await statements.firstByHandle.run(reads.query, { handle }));
    },

    /**
     * Bikes oldest first, optionally only those whose title contains a term, all of one snapshot
     * of one database, with `version`, what the list's ETag is made of (undefined while a trigger
     * that keeps it is off), read in that snapshot. Given `current`, which says whether the client
     * has the list at a version, the version is read alone first, so a 304 reads no row (`current`
     * is then true). Otherwise the version and the first batch are one statement: a list that fits
     * in it (most searches) is one round trip. A longer one goes on in a snapshot (Reads.snapshot)
     * whose version is the first statement's, so it saw the same changes (docs/reference/caching-and-conditions.md#conditional-get);
     * or, when a write came between, starts again in it. The batches are read as they are iterated;
     * stopping ends the snapshot.
     */
    async list({
      titleContains = '',
      batchSize = LIST_BATCH_SIZE,
      current,
    }: { titleContains?: string; batchSize?: number; current?: (version: string[]) => boolean } = {}): Promise<
      Unchanged | { current: false; version: string[] | undefined; seen: Seen; batches: AsyncGenerator<Bike[]> }
    > {
      const unchanged = current && (cache?.unchanged(current) ?? (await unchangedFor(reads.query, current)));
      if (unchanged) return unchanged;
      const pattern = titleContains ? containing(titleContains) : undefined;
      const batchAfter = (query: Query, after: string) =>
        pattern === undefined
          ? statements.batch.run(query, { after, limit: batchSize })
          : statements.titleBatch.run(query, { pattern, after, limit: batchSize });
      const head =
        pattern === undefined
          ? await statements.listHead.run(reads.query, { limit: batchSize })
          : await statements.titleHead.run(reads.query, { pattern, limit: batchSize });
      const version = versionOf(head[0]);
      const first = head.filter((row): row is (typeof head)[number] & BatchRow => row.seq !== null);
      if (first.length < batchSize) {
        return { current: false, version, seen: seenOf(head[0]), batches: inOneBatch(first) };
      }
      const { begun, snapshot } = await reads.snapshot(async (query) => {
        const [state] = await versionAlone.run(query, {});
        const again = versionOf(state);
        // The same version: the same changes seen, so the head's rows and what it saw stand.
        return version !== undefined && again !== undefined && again.join('\n') === version.join('\n')
          ? { version, seen: seenOf(head[0]), rows: first }
          : { version: again, seen: seenOf(state), rows: await batchAfter(query, BEFORE_FIRST_SEQ) };
      });
      async function* batches(): AsyncGenerator<Bike[]> {
        try {
          let rows = begun.rows;
          for (;;) {
            if (rows.length > 0) yield rows.map(fromModelFields);
            if (rows.length < batchSize) return;
            // int8 comes back from pg as a string; it goes back as a parameter unchanged.
            rows = await batchAfter(snapshot.query, rows[rows.length - 1].seq);
          }
        } finally {
          await snapshot.close();
        }
      }
      return { current: false, version: begun.version, seen: begun.seen, batches: batches() };
    },

    /**
     * Stores the bike under `id`, replacing what was there but keeping its place (seq), or
     * creating it, in one statement whatever the conditions: without If-Match an upsert; with
     * it an UPDATE of a bike in an allowed state; with If-None-Match: * an INSERT the primary key
     * refuses when the bike is there. No other write comes between the check and the write.
     */
    async replace(
      writer: Writer,
      id: string,
      handle: string,
      fields: BikeFields,
      when: WriteConditions = {},
    ): Promise<StoredBike | typeof PRECONDITION_FAILED> {
      const bike = { ...toModelFields({ id, handle, ...fields }), writer: writerValue(writer) };
      const { ifMatch, ifNoneMatch } = when;
      let rows: StoredRow[];
      if (ifMatch && ifNoneMatch?.any) return PRECONDITION_FAILED; // a bike that both exists and does not
      if (ifMatch) {
        rows = await writing(
          id,
          statements.replace.run(write, {
            ...bike,
            ifMatch: ifMatch.any ? null : ifMatch.states,
            ifNoneMatch: statesParam(ifNoneMatch),
          }),
        );
      } else if (ifNoneMatch?.any) {
        rows = await writing(id, statements.insertOnly.run(write, bike));
      } else {
        rows = await writing(id, statements.upsert.run(write, { ...bike, ifNoneMatch: statesParam(ifNoneMatch) }));
      }
      return first(rows) ?? PRECONDITION_FAILED;
    },

    /**
     * Writes only the given fields (one UPDATE ... RETURNING, its conditions in its WHERE); null
     * when there is no such bike, whatever the conditions. A patch that matched nothing is told
     * apart by a look at the bike: the happy path costs one round trip.
     */
    async patch(
      writer: Writer,
      id: string,
      patch: BikePatch,
      when: WriteConditions = {},
    ): Promise<StoredBike | null | typeof PRECONDITION_FAILED> {
      const values = patchValues(patch);
      // An empty patch writes nothing: the bike as it is, if the conditions hold; so too one
      // that can hold for no bike there (If-None-Match: *).
      if (values.patched.length === 0 || when.ifNoneMatch?.any) {
        return judged(await current(id), when);
      }
      const rows = await writing(
        id,
        statements.patch.run(write, {
          id,
          ...values,
          writer: writerValue(writer),
          ifMatch: when.ifMatch?.any ? null : statesParam(when.ifMatch),
          ifNoneMatch: statesParam(when.ifNoneMatch),
        }),
      );
      return first(rows) ?? (await missedBecause(id, when));
    },

    /** False when there was no such bike (one DELETE ... RETURNING, its conditions in its WHERE). */
    async delete(
      writer: Writer,
      id: string,
      when: WriteConditions = {},
    ): Promise<boolean | typeof PRECONDITION_FAILED> {
      if (when.ifNoneMatch?.any) return (await judged(await current(id), when)) === null ? false : PRECONDITION_FAILED;
      const rows = await writing(
        id,
        statements.delete.run(write, {
          id,
          writer: writerValue(writer),
          ifMatch: when.ifMatch?.any ? null : statesParam(when.ifMatch),
          ifNoneMatch: statesParam(when.ifNoneMatch),
        }),
      );
      if (rows.length > 0) return true;
      return (await missedBecause(id, when)) === null ? false : PRECONDITION_FAILED;
    },
  };
}

/** A bike looked at (null: there is none) judged by the conditions: null when missing, the bike when they hold. */
function judged(found: StoredBike | null, when: WriteConditions): StoredBike | null | typeof PRECONDITION_FAILED {
  if (found === null) return null;
  return holds(when, found.state) ? found : PRECONDITION_FAILED;
}

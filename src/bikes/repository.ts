import { sql } from 'kysely';
import type { Pool } from 'pg';
import { Prisma } from '../generated/prisma/client.ts';
import type { PrismaClient } from '../db/prisma';
import { poolReads, type Query, type Reads } from '../db/replica';
import { kysely, param, prepare } from '../db/sql';
import type { Bike, BikeFields, BikePatch } from './bike';
import { BIKE_SELECT, type BikeModelFields, fromModelFields, toModelFields, toModelPatch } from './model';

/**
 * The catalog's storage, in Bike objects. Writes go through Prisma Client's model API; the hot
 * reads are SQL compiled once, checked against the table, on the same pool (docs/decisions.md,
 * Prisma Client).
 */

/** Rows per list or search batch: memory holds one batch at a time however large the catalog is. */
export const LIST_BATCH_SIZE = 250;

/** Below every insertion sequence, so the first batch starts at the beginning. */
const BEFORE_FIRST_SEQ = '-9223372036854775808';

/** A bike's columns, each as its Prisma model field: rows read here map to bikes as Prisma's do. */
const selectBikes = () =>
  kysely
    .selectFrom('bikes')
    .select([
      'id',
      'handle',
      'title',
      'product_type as productType',
      'created_at as createdAt',
      'description',
      'vendor',
      'available_for_sale as availableForSale',
      'total_inventory as totalInventory',
      'min_price_amount as minPriceAmount',
      'min_price_currency_code as minPriceCurrencyCode',
      'max_price_amount as maxPriceAmount',
      'max_price_currency_code as maxPriceCurrencyCode',
      'version',
    ]);

export const statements = {
  /** On the primary key. */
  byId: prepare([param<string>(1)], (id) => selectBikes().where('id', '=', id)),
  /** On the hash index bikes_handle_idx (a b-tree cannot hold long handles): the oldest with that handle. */
  firstByHandle: prepare([param<string>(1)], (handle) =>
    selectBikes().where('handle', '=', handle).orderBy('seq').limit(sql.lit(1)),
  ),
  /** Keyset pagination on bikes_seq_key: every batch is one index range scan. */
  batch: prepare([param<string>(1), param<number>(2)], (after, limit) =>
    selectBikes().select('seq').where('seq', '>', after).orderBy('seq').limit(limit),
  ),
  /** The pattern is a LIKE constant ('%term%'), which the planner can match to the trigram index. */
  titleBatch: prepare([param<string>(1), param<string>(2), param<number>(3)], (pattern, after, limit) =>
    selectBikes().select('seq').where('title', 'like', pattern).where('seq', '>', after).orderBy('seq').limit(limit),
  ),
  /** The sum of the version slots, which every committed change to bikes bumps: what the list ETags are made of. */
  catalogVersion: prepare([], () =>
    kysely.selectFrom('catalog_version_slots').select((eb) => eb.fn.sum<string>('version').as('version')),
  ),
};

/** `%`, `_` and `\` in a search term match themselves (backslash is LIKE's escape character). */
function escapeLike(term: string): string {
  return term.replace(/[\\%_]/g, '\\$&');
}

export type BikeRepository = ReturnType<typeof createBikeRepository>;

/** How long an Idempotency-Key is remembered (rule 24: at least 24 hours). */
const IDEMPOTENCY_KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;
/** The advisory lock space of idempotency keys: hashtextextended's seed, so other locks do not collide with it. */
const IDEMPOTENCY_LOCK_SEED = 2_024_112_303;

/** A bike as stored, and its version: the state it is in (see the migration bike_row_versions). */
export interface StoredBike {
  bike: Bike;
  version: string;
}

/**
 * What a conditional write requires of the bike it writes (HTTP's If-Match and If-None-Match,
 * src/http/conditional.ts), checked in the statement that writes: `any`, no requirement; `exists`;
 * `absent`; `version`, the bike in one of these states.
 */
export type Precondition =
  { kind: 'any' } | { kind: 'exists' } | { kind: 'absent' } | { kind: 'version'; versions: string[] };

const ANY: Precondition = { kind: 'any' };

/** The answer of a write whose precondition did not hold: nothing was written. */
export const PRECONDITION_FAILED = 'precondition failed';

/** Prisma's "no record found" for an update or a delete whose where matched no row. */
const isRecordNotFound = (err: unknown) => err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2025';
/** Prisma's unique-constraint violation: an insert of an id that is taken. */
const isTaken = (err: unknown) => err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002';

/** The model's fields of a bike, and its version: what every write returns. */
const STORED_SELECT = { ...BIKE_SELECT, version: true } as const;

const stored = (row: BikeModelFields & { version: bigint | string }): StoredBike => ({
  bike: fromModelFields(row),
  version: String(row.version),
});

/** One INSERT ... RETURNING the bike and its version, by Prisma Client or inside one of its transactions. */
async function insert(client: Pick<PrismaClient, 'bike'>, data: BikeModelFields): Promise<StoredBike> {
  return stored(await client.bike.create({ data, select: STORED_SELECT }));
}

/** Whether a bike in `version` (null: there is none) meets the precondition. */
export function holds(when: Precondition, version: string | null): boolean {
  switch (when.kind) {
    case 'any':
      return true;
    case 'exists':
      return version !== null;
    case 'absent':
      return version === null;
    case 'version':
      return version !== null && when.versions.includes(version);
  }
}

/** The versions a precondition allows, as Prisma's where filter (undefined: any). */
function versionFilter(when: Precondition): { in: bigint[] } | undefined {
  return when.kind === 'version' ? { in: when.versions.map((version) => BigInt(version)) } : undefined;
}

/**
 * Writes go through `prisma`, built on `writes`, the primary; reads to `reads`, which may be a
 * replica, or else the primary.
 */
export function createBikeRepository({
  prisma,
  writes,
  reads = poolReads(writes),
}: {
  prisma: PrismaClient;
  writes: Pool;
  reads?: Reads;
}) {
  const onPrimary: Query = (text, values) => writes.query(text, values);
  const first = ([row]: (BikeModelFields & { version: string })[]): StoredBike | null => (row ? stored(row) : null);
  /** Whether the bike is there now, on the primary: what tells a missing bike from a failed precondition. */
  const exists = async (id: string) => (await statements.byId.run(onPrimary, id)).length > 0;

  return {
    /** One INSERT ... RETURNING the bike's columns. */
    create: async (id: string, handle: string, fields: BikeFields): Promise<StoredBike> =>
      insert(prisma, toModelFields({ id, handle, ...fields })),

    /**
     * Creates the bike once for an Idempotency-Key (docs/decisions.md, rule 24), in one
     * transaction that holds the key's advisory lock and writes the bike and the key together:
     * a key seen before (within 24 hours) gives the answer it got (`replay`), or `mismatch` when
     * its fields differ; a key whose first request is still running gives `in-flight`. A
     * transaction that does not commit leaves neither, so its retry creates the bike.
     */
    async createOnce(
      key: string,
      fingerprint: string,
      create: { id: string; handle: string; fields: BikeFields },
    ): Promise<
      | { kind: 'created'; stored: StoredBike }
      | { kind: 'replay'; response: string; version: string }
      | { kind: 'mismatch' }
      | { kind: 'in-flight' }
    > {
      return prisma.$transaction(async (tx) => {
        const [{ locked }] = await tx.$queryRaw<{ locked: boolean }[]>`
          SELECT pg_try_advisory_xact_lock(hashtextextended(${key}, ${IDEMPOTENCY_LOCK_SEED})) AS locked`;
        if (!locked) return { kind: 'in-flight' as const };
        const seen = await tx.idempotencyKey.findUnique({ where: { key } });
        if (seen && seen.createdAt.getTime() > Date.now() - IDEMPOTENCY_KEY_LIFETIME_MS) {
          if (seen.fingerprint !== fingerprint) return { kind: 'mismatch' as const };
          return { kind: 'replay' as const, response: seen.response, version: String(seen.bikeVersion) };
        }
        if (seen) await tx.idempotencyKey.delete({ where: { key } });
        const created = await insert(tx, toModelFields({ id: create.id, handle: create.handle, ...create.fields }));
        await tx.idempotencyKey.create({
          data: {
            key,
            fingerprint,
            bikeId: created.bike.id,
            bikeVersion: BigInt(created.version),
            response: JSON.stringify(created.bike),
          },
        });
        return { kind: 'created' as const, stored: created };
      });
    },

    /** Deletes the keys older than their lifetime (the service does it every hour). */
    async pruneIdempotencyKeys(): Promise<number> {
      const { count } = await prisma.idempotencyKey.deleteMany({
        where: { createdAt: { lt: new Date(Date.now() - IDEMPOTENCY_KEY_LIFETIME_MS) } },
      });
      return count;
    },

    /** Set while the reads come from a replica because the primary cannot be reached (Reads.stale). */
    stale: () => reads.stale?.(),

    findById: async (id: string) => first(await statements.byId.run(reads.query, id)),

    async findFirstByHandle(handle: string): Promise<StoredBike | null> {
      // No stored string holds U+0000 (PostgreSQL text cannot), and as a parameter it is an error.
      if (handle.includes('\u0000')) return null;
      return first(await statements.firstByHandle.run(reads.query, handle));
    },

    /**
     * Bikes oldest first, optionally only those whose title contains a term: the catalog's
     * version, which every committed write changes, and the bikes in batches, all from one
     * snapshot of one database (Reads.snapshot), so the version stands for exactly these rows.
     * The version and the first two batches (all a response reads before its status) are read
     * at once, so a replica that cannot serve them leaves the list to the primary; the rest as
     * `batches` is iterated. `close` ends the snapshot
     * early (a 304 reads no rows); iterating to the end, or stopping, ends it too.
     */
    async list({ titleContains = '', batchSize = LIST_BATCH_SIZE } = {}) {
      const pattern = titleContains ? `%${escapeLike(titleContains)}%` : undefined;
      const batchAfter = (query: Query, after: string) =>
        pattern === undefined
          ? statements.batch.run(query, after, batchSize)
          : statements.titleBatch.run(query, pattern, after, batchSize);
      const { begun, snapshot } = await reads.snapshot(async (query) => {
        const [{ version }] = await statements.catalogVersion.run(query);
        const first = await batchAfter(query, BEFORE_FIRST_SEQ);
        const second = first.length < batchSize ? [] : await batchAfter(query, first[first.length - 1].seq);
        return { version: String(version), head: [first, second] };
      });
      async function* batches(): AsyncGenerator<Bike[]> {
        try {
          let rows = begun.head[0];
          for (const batch of begun.head) {
            rows = batch;
            if (rows.length > 0) yield rows.map(fromModelFields);
            if (rows.length < batchSize) return;
          }
          for (;;) {
            // int8 comes back from pg as a string; it goes back as a parameter unchanged.
            rows = await batchAfter(snapshot.query, rows[rows.length - 1].seq);
            if (rows.length > 0) yield rows.map(fromModelFields);
            if (rows.length < batchSize) return;
          }
        } finally {
          await snapshot.close();
        }
      }
      return { version: begun.version, batches: batches(), close: () => snapshot.close() };
    },

    /**
     * Stores the bike under `id`, replacing what was there but keeping its place (seq), or
     * creating it: Prisma runs this upsert as one INSERT ... ON CONFLICT (id) DO UPDATE, and sets
     * updatedAt (@updatedAt) either way. Under a precondition it is one UPDATE (the bike must be
     * there, in one of the versions) or one INSERT (it must not be): the check and the write are
     * one statement, so no other write comes between them, on this instance or another.
     */
    async replace(
      id: string,
      handle: string,
      fields: BikeFields,
      when: Precondition = ANY,
    ): Promise<StoredBike | typeof PRECONDITION_FAILED> {
      const data = toModelFields({ id, handle, ...fields });
      try {
        switch (when.kind) {
          case 'any':
            return stored(
              await prisma.bike.upsert({ where: { id }, create: data, update: data, select: STORED_SELECT }),
            );
          case 'absent':
            return await insert(prisma, data);
          default:
            return stored(
              await prisma.bike.update({ where: { id, version: versionFilter(when) }, data, select: STORED_SELECT }),
            );
        }
      } catch (err) {
        if (isRecordNotFound(err) || isTaken(err)) return PRECONDITION_FAILED;
        throw err;
      }
    },

    /**
     * Writes only the given fields (and updatedAt); null when there is no such bike. `update` is
     * one UPDATE ... RETURNING, its precondition in its WHERE; a missing bike is Prisma's P2025,
     * told apart from a failed precondition by a look at the bike afterwards (a missing bike is
     * 404 whatever the precondition). The common case costs one round trip.
     */
    async patch(
      id: string,
      patch: BikePatch,
      when: Precondition = ANY,
    ): Promise<StoredBike | null | typeof PRECONDITION_FAILED> {
      const data = toModelPatch(patch);
      if (Object.values(data).every((value) => value === undefined)) {
        // An empty patch writes nothing: the bike as it is, if the precondition holds.
        const current = first(await statements.byId.run(onPrimary, id));
        if (current === null) return null;
        return holds(when, current.version) ? current : PRECONDITION_FAILED;
      }
      if (when.kind === 'absent') return (await exists(id)) ? PRECONDITION_FAILED : null;
      try {
        return stored(
          await prisma.bike.update({ where: { id, version: versionFilter(when) }, data, select: STORED_SELECT }),
        );
      } catch (err) {
        if (!isRecordNotFound(err)) throw err;
        return when.kind === 'version' && (await exists(id)) ? PRECONDITION_FAILED : null;
      }
    },

    /** False when there was no such bike (one DELETE ... RETURNING, its precondition in its WHERE). */
    async delete(id: string, when: Precondition = ANY): Promise<boolean | typeof PRECONDITION_FAILED> {
      if (when.kind === 'absent') return (await exists(id)) ? PRECONDITION_FAILED : false;
      try {
        await prisma.bike.delete({ where: { id, version: versionFilter(when) }, select: { id: true } });
        return true;
      } catch (err) {
        if (!isRecordNotFound(err)) throw err;
        return when.kind === 'version' && (await exists(id)) ? PRECONDITION_FAILED : false;
      }
    },
  };
}

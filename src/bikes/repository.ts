import { sql } from 'kysely';
import type { Pool } from 'pg';
import { Prisma } from '../generated/prisma/client.ts';
import type { PrismaClient } from '../db/prisma';
import { poolReads, type Query, type Reads } from '../db/replica';
import { kysely, prepare, type Statement } from '../db/sql';
import type { Bike, BikeFields, BikePatch } from './bike';
import { BIKE_COLUMNS, type BikeRow, toBike } from './columns';
import { BIKE_SELECT, fromModelFields, toModelFields, toModelPatch } from './model';

/**
 * The catalog's storage, in Bike objects. Writes go through Prisma Client's model API; the hot
 * reads are SQL compiled once, checked against the table, on the same pool (docs/decisions.md,
 * Prisma Client).
 */

/** Rows per list or search batch: memory holds one batch at a time however large the catalog is. */
export const LIST_BATCH_SIZE = 250;

/** Below every insertion sequence, so the first batch starts at the beginning. */
const BEFORE_FIRST_SEQ = '-9223372036854775808';

/** Stand-ins for the values of a statement, compiled into its parameters ($1, $2, ...). */
const ID = '\0id';
const HANDLE = '\0handle';
const AFTER = '\0after';
const PATTERN = '\0pattern';
const LIMIT = -1;

const selectBikes = () => kysely.selectFrom('bikes').select(BIKE_COLUMNS);

export const statements = {
  /** On the primary key. */
  byId: prepare(selectBikes().where('id', '=', ID), ID),
  /** On the hash index bikes_handle_idx (a b-tree cannot hold long handles): the oldest with that handle. */
  firstByHandle: prepare(selectBikes().where('handle', '=', HANDLE).orderBy('seq').limit(sql.lit(1)), HANDLE),
  /** Keyset pagination on bikes_seq_key: every batch is one index range scan. */
  batch: prepare(selectBikes().select('seq').where('seq', '>', AFTER).orderBy('seq').limit(LIMIT), AFTER, LIMIT),
  /** The pattern is a LIKE constant ('%term%'), which the planner can match to the trigram index. */
  titleBatch: prepare(
    selectBikes().select('seq').where('title', 'like', PATTERN).where('seq', '>', AFTER).orderBy('seq').limit(LIMIT),
    PATTERN,
    AFTER,
    LIMIT,
  ),
  /** The sum of the version slots, which every committed change to bikes bumps: what the list ETags are made of. */
  catalogVersion: prepare(
    kysely.selectFrom('catalog_version_slots').select((eb) => eb.fn.sum<string>('version').as('version')),
  ),
};

/** `%`, `_` and `\` in a search term match themselves (backslash is LIKE's escape character). */
function escapeLike(term: string): string {
  return term.replace(/[\\%_]/g, '\\$&');
}

export type BikeRepository = ReturnType<typeof createBikeRepository>;

/** Prisma's "no record found" for an update or a delete whose where matched no row. */
const isRecordNotFound = (err: unknown) => err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2025';

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
  const run = async <Row>(statement: Statement<Row>, values: unknown[], query: Query = reads.query): Promise<Row[]> =>
    (await query<Row & object>(statement.text, values)).rows;
  const one = async (statement: Statement<BikeRow>, values: unknown[], query?: Query): Promise<Bike | null> => {
    const [row] = await run(statement, values, query);
    return row ? toBike(row) : null;
  };

  return {
    /** One INSERT ... RETURNING the bike's columns. */
    create: async (id: string, handle: string, fields: BikeFields): Promise<Bike> =>
      fromModelFields(
        await prisma.bike.create({ data: toModelFields({ id, handle, ...fields }), select: BIKE_SELECT }),
      ),

    findById: (id: string) => one(statements.byId, [id]),

    async findFirstByHandle(handle: string): Promise<Bike | null> {
      // No stored string holds U+0000 (PostgreSQL text cannot), and as a parameter it is an error.
      if (handle.includes('\u0000')) return null;
      return one(statements.firstByHandle, [handle]);
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
          ? run(statements.batch, [after, batchSize], query)
          : run(statements.titleBatch, [pattern, after, batchSize], query);
      const { begun, snapshot } = await reads.snapshot(async (query) => {
        const [{ version }] = await run(statements.catalogVersion, [], query);
        const first = await batchAfter(query, BEFORE_FIRST_SEQ);
        const second = first.length < batchSize ? [] : await batchAfter(query, first[first.length - 1].seq);
        return { version: String(version), head: [first, second] };
      });
      async function* batches(): AsyncGenerator<Bike[]> {
        try {
          let rows = begun.head[0];
          for (const batch of begun.head) {
            rows = batch;
            if (rows.length > 0) yield rows.map(toBike);
            if (rows.length < batchSize) return;
          }
          for (;;) {
            // int8 comes back from pg as a string; it goes back as a parameter unchanged.
            rows = await batchAfter(snapshot.query, rows[rows.length - 1].seq);
            if (rows.length > 0) yield rows.map(toBike);
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
     * creates it: Prisma runs this upsert as one INSERT ... ON CONFLICT (id) DO UPDATE, and sets
     * updatedAt (@updatedAt) either way.
     */
    async replace(id: string, handle: string, fields: BikeFields): Promise<Bike> {
      const data = toModelFields({ id, handle, ...fields });
      return fromModelFields(
        await prisma.bike.upsert({ where: { id }, create: data, update: data, select: BIKE_SELECT }),
      );
    },

    /**
     * Writes only the given fields (and updatedAt); null when there is no such bike. `update` is
     * one UPDATE ... RETURNING, and a missing bike is Prisma's P2025: the common case costs one
     * round trip, where updateMany and a read back would take a transaction of four.
     */
    async patch(id: string, patch: BikePatch): Promise<Bike | null> {
      const data = toModelPatch(patch);
      if (Object.values(data).every((value) => value === undefined)) return one(statements.byId, [id], onPrimary);
      try {
        return fromModelFields(await prisma.bike.update({ where: { id }, data, select: BIKE_SELECT }));
      } catch (err) {
        if (isRecordNotFound(err)) return null;
        throw err;
      }
    },

    /** False when there was no such bike (one DELETE ... RETURNING; a missing bike is P2025). */
    async delete(id: string): Promise<boolean> {
      try {
        await prisma.bike.delete({ where: { id }, select: { id: true } });
        return true;
      } catch (err) {
        if (isRecordNotFound(err)) return false;
        throw err;
      }
    },
  };
}

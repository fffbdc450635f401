import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { bike } from '../../src/bikes/bike';
import { FIELDS, fieldsOf } from '../../src/bikes/fields';
import { migrate, readMigrations } from '../../src/db/migrate';
import { createEmptyTestDatabase } from '../support/databases';

/**
 * The change log (bike_changes) is written by SQL of its own, which the compiler never sees: the
 * change_feed migration's backfill and its trigger functions, each with its lists of columns, and
 * whatever later migrations redefine or add. Each change that carries a bike must carry every
 * column of the field map (src/bikes/fields.ts), a value in each that cannot be null, or the feed
 * gives a bike without a field, or fails on it. Checked against the functions as the migrated database has them,
 * so a later migration's definition is the one checked.
 */

/** The columns of the map but the id (in the log: bike_id). */
const COLUMNS: string[] = Object.values(FIELDS)
  .map(({ column }) => column)
  .filter((column) => column !== 'id');

/** Those of fields that cannot be null: every change that is not a delete has a value in each. */
const NOT_NULL = fieldsOf(bike, FIELDS)
  .filter(({ nullable, column }) => !nullable && column !== 'id')
  .map(({ column }) => column);

const CHANGE_FEED = '20261127000000_change_feed';

describe("the change log's SQL, held to the field map", () => {
  let db: Client;
  let url: string;

  beforeAll(async () => {
    url = await createEmptyTestDatabase();
    // Bikes from before the log (its migration's backfill) and from its first triggers.
    await migrate(
      url,
      undefined,
      readMigrations().filter((migration) => migration.name < CHANGE_FEED),
    );
    db = new Client({ connectionString: url });
    await db.connect();
  });
  afterAll(() => db.end());

  /** The columns of bikes a client's bike fills now (the map's, as far as the table has them yet), and their types. */
  async function bikeColumns(): Promise<{ column_name: string; data_type: string }[]> {
    const { rows } = await db.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = 'bikes' AND column_name = ANY($1) ORDER BY ordinal_position`,
      [['id', ...COLUMNS]],
    );
    return rows;
  }

  let made = 0;
  /** A value for each column, of its type and unlike any other column's, so that a swapped column shows. */
  function valueOf(column: string, type: string, n = ++made): unknown {
    const i = COLUMNS.indexOf(column);
    if (column === 'id') return randomUUID();
    if (type === 'text') return `${column} ${n}`;
    if (type === 'double precision') return n * 100 + i + 0.25;
    if (type === 'boolean') return (n + i) % 2 === 0;
    throw new Error(`no test value for ${column}, a column of type ${type}`);
  }

  async function insertBike(): Promise<string> {
    const columns = await bikeColumns();
    const n = ++made;
    const values = columns.map(({ column_name, data_type }) => valueOf(column_name, data_type, n));
    await db.query(
      `INSERT INTO bikes (${columns.map(({ column_name }) => `"${column_name}"`).join(', ')})
       VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
      values,
    );
    return values[columns.findIndex(({ column_name }) => column_name === 'id')] as string;
  }

  /** Every written column of the bike set anew, by an UPDATE, or by an INSERT ... ON CONFLICT DO UPDATE. */
  async function rewriteBike(id: string, how: 'update' | 'upsert'): Promise<void> {
    const columns = (await bikeColumns()).filter(({ column_name }) => column_name !== 'id');
    const n = ++made;
    const values = columns.map(({ column_name, data_type }) => valueOf(column_name, data_type, n));
    const names = columns.map(({ column_name }) => `"${column_name}"`);
    const places = columns.map((_, i) => `$${i + 2}`);
    await db.query(
      how === 'update'
        ? `UPDATE bikes SET (${names.join(', ')}) = ROW(${places.join(', ')}) WHERE id = $1`
        : `INSERT INTO bikes (id, ${names.join(', ')}) VALUES ($1, ${places.join(', ')})
           ON CONFLICT (id) DO UPDATE SET (${names.join(', ')}) = ROW(${names.map((name) => `excluded.${name}`).join(', ')})`,
      [id, ...values],
    );
  }

  it('after every migration, every change that carries a bike carries every column of the map, and the latest holds the bike as it is', async () => {
    const before = [await insertBike(), await insertBike(), await insertBike(), await insertBike()];
    const untouched = before[3];
    const columnsThen = (await bikeColumns()).map(({ column_name }) => column_name);
    const versionOf = async (id: string) =>
      (await db.query<{ version: string }>('SELECT version FROM bikes WHERE id = $1', [id])).rows[0].version;
    const versionThen = await versionOf(untouched);
    await migrate(
      url,
      undefined,
      readMigrations().filter((migration) => migration.name === CHANGE_FEED),
    );
    const underFirstTriggers = [await insertBike(), await insertBike()];
    await rewriteBike(before[0], 'update');
    await migrate(url);

    // Through the triggers as the latest migration defines them: each kind of write.
    const inserted = await insertBike();
    await rewriteBike(before[1], 'update');
    await rewriteBike(underFirstTriggers[0], 'upsert');
    const movedTo = randomUUID();
    await db.query('UPDATE bikes SET id = $2 WHERE id = $1', [underFirstTriggers[1], movedTo]);
    await db.query('DELETE FROM bikes WHERE id = $1', [before[2]]);

    const list = COLUMNS.map((column) => `"${column}"`).join(', ');
    const { rows: incomplete } = await db.query(
      `SELECT change_id, kind, ${list} FROM bike_changes
        WHERE kind <> 'delete' AND (${NOT_NULL.map((column) => `"${column}" IS NULL`).join(' OR ')})`,
    );
    expect(incomplete).toEqual([]);

    const { rows: bikes } = await db.query<Record<string, unknown>>(`SELECT id, ${list} FROM bikes ORDER BY seq`);
    expect(bikes.map(({ id }) => id)).toEqual([
      before[0],
      before[1],
      untouched,
      underFirstTriggers[0],
      movedTo,
      inserted,
    ]);
    for (const { id, ...bike } of bikes) {
      const { rows } = await db.query<Record<string, unknown>>(
        `SELECT kind, ${list} FROM bike_changes WHERE bike_id = $1 ORDER BY txid DESC, change_id DESC LIMIT 1`,
        [id],
      );
      expect(rows).toEqual([{ kind: expect.stringMatching(/^(create|update)$/), ...bike }]);
    }
    for (const gone of [before[2], underFirstTriggers[1]]) {
      const { rows } = await db.query<{ kind: string }>(
        'SELECT kind FROM bike_changes WHERE bike_id = $1 ORDER BY txid DESC, change_id DESC LIMIT 1',
        [gone],
      );
      expect(rows).toEqual([{ kind: 'delete' }]);
    }

    // A bike's JSON at one version never changes (its ETag names the version): a migration that
    // adds a field to every bike gives each a new version, which the feed gives too.
    const added = COLUMNS.filter((column) => !columnsThen.includes(column));
    if (added.length > 0) expect(await versionOf(untouched)).not.toBe(versionThen);
  });

  it("names every column of the map in each of the trigger functions' inserts into the log that carries a bike", async () => {
    await migrate(url);
    // The functions the triggers on bikes run, as the latest migration to define each left them.
    const { rows } = await db.query<{ name: string; source: string }>(
      `SELECT DISTINCT p.proname AS name, p.prosrc AS source
         FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE t.tgrelid = 'bikes'::regclass AND NOT t.tgisinternal`,
    );
    const lists = rows.flatMap(({ name, source }) =>
      [...source.matchAll(/INSERT\s+INTO\s+"?bike_changes"?\s*\(([^)]*)\)/gi)].map((insert) => ({
        name,
        columns: insert[1].split(',').map((column) => column.trim().replace(/^"|"$/g, '')),
      })),
    );
    // A delete's change carries the bike's id alone; any other carries the bike.
    const carrying = lists.filter(({ columns }) => columns.some((column) => COLUMNS.includes(column)));
    expect(carrying.map(({ name }) => name).sort()).toEqual(['capture_bike_inserts', 'capture_bike_updates']);
    for (const { name, columns } of carrying) {
      expect({ name, missing: COLUMNS.filter((column) => !columns.includes(column)) }).toEqual({ name, missing: [] });
    }
  });
});

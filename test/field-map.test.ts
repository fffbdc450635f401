import { randomUUID } from 'node:crypto';
import { Client, type Pool } from 'pg';
import * as yup from 'yup';
import { fieldsOf, mappingOf } from '../src/bikes/fields';
import { connectPool } from '../src/db/pool';
import type { Query } from '../src/db/replica';
import { kysely, param, prepare } from '../src/db/sql';
import { fromDescription } from '../src/http/json-schema';
import { describe as describeSchema } from '../src/http/schema';
import { createEmptyTestDatabase } from './support/databases';
import { waitFor } from './support/wait';

/**
 * The field map's machinery (src/bikes/fields.ts) with an optional field, which today's bike does
 * not have: a definition of its own, made as bike.ts makes one (a required text, an optional
 * number nested as a price is, an optional text), its map, and a table of its own. Null is a value:
 * an optional field holds it, a patch sets it, a change carries it, and none of it reads as "not
 * given" or "deleted".
 */
const text = () => yup.string().strict().defined();
const definition = yup
  .object({
    id: text(),
    title: text(),
    frame: yup.object({ size: text(), weightKg: yup.number().strict().nullable().optional() }).defined(),
    note: text().nullable().optional(),
  })
  .defined();
const MAP = {
  id: { column: 'id', name: 'id' },
  title: { column: 'title', name: 'title' },
  'frame.size': { column: 'frame_size', name: 'frameSize' },
  'frame.weightKg': { column: 'weight_kg', name: 'weightKg' },
  note: { column: 'note', name: 'note' },
} as const;
const scratch = mappingOf(fieldsOf(definition, MAP));

describe('a field map with optional fields', () => {
  it('carries each field’s nullability as the definition says', () => {
    expect(scratch.fields.map(({ name, nullable }) => [name, nullable])).toEqual([
      ['id', false],
      ['title', false],
      ['frameSize', false],
      ['weightKg', true],
      ['note', true],
    ]);
  });

  it('refuses a map that names a field the definition does not have', () => {
    expect(() => fieldsOf(definition, { ...MAP, color: { column: 'color', name: 'color' } })).toThrow(
      'the field map names color, which the definition does not have',
    );
  });

  it('stores an optional field left out as null, and reads null back as the field’s value', () => {
    const row = scratch.toRow({ id: 'a', title: 'T', frame: { size: '54 cm' } });
    expect(row).toEqual({ id: 'a', title: 'T', frameSize: '54 cm', weightKg: null, note: null });
    expect(scratch.fromRow(row)).toEqual({ id: 'a', title: 'T', frame: { size: '54 cm', weightKg: null }, note: null });
  });

  it('tells a change by its kind: an update whose optional fields are null is an upsert, a delete holds nothing', () => {
    const row = { id: 'a', title: 'T', frameSize: '54 cm', weightKg: null, note: null };
    expect(scratch.fromChange('update', row)).toEqual({
      id: 'a',
      title: 'T',
      frame: { size: '54 cm', weightKg: null },
      note: null,
    });
    expect(scratch.fromChange('create', { ...row, weightKg: 9.5 })).toMatchObject({ frame: { weightKg: 9.5 } });
    expect(scratch.fromChange('delete', { id: 'a', title: null, frameSize: null, weightKg: null, note: null })).toBe(
      undefined,
    );
  });

  it('refuses, by name, a change that is not a delete and lacks a field that cannot be null (a log its migration did not fill)', () => {
    expect(() =>
      scratch.fromChange('update', { id: 'a', title: 'T', frameSize: null, weightKg: 1, note: 'n' }),
    ).toThrow('a update of a in the change log has no frame_size');
  });

  it('names in a patch each field it carries, a null one included, and none it leaves out', () => {
    expect(scratch.patchValues({ note: null })).toEqual({
      title: null,
      frameSize: null,
      weightKg: null,
      note: null,
      patched: ['note'],
    });
    expect(scratch.patchValues({ frame: { size: '56 cm', weightKg: null } }).patched).toEqual([
      'frame_size',
      'weight_kg',
    ]);
    expect(scratch.patchValues({ title: 'U', frame: { size: '56 cm' } }).patched).toEqual(['title', 'frame_size']);
    expect(scratch.patchValues({}).patched).toEqual([]);
  });

  it('describes an optional field in JSON Schema as one that may be null, and not required in a body', () => {
    const described = describeSchema(definition);
    expect(fromDescription(described)).toMatchObject({
      properties: { frame: { properties: { weightKg: { type: ['number', 'null'] } }, required: ['size'] } },
      required: ['id', 'title', 'frame'],
    });
    expect(fromDescription(described).properties).toMatchObject({ note: { type: ['string', 'null'] } });
  });
});

describe('the statements a field map with optional fields makes, on a table of its own', () => {
  let pool: Pool;
  let url: string;
  type Scratch = { id: string; title: string; frame_size: string; weight_kg: number | null; note: string | null };
  const db = kysely.withTables<{ scratch_bikes: Scratch }>();

  beforeAll(async () => {
    url = await createEmptyTestDatabase();
    pool = connectPool(url, () => undefined);
    await pool.query(
      `CREATE TABLE scratch_bikes (id uuid PRIMARY KEY, title text NOT NULL, frame_size text NOT NULL,
         weight_kg double precision, note text)`,
    );
  });
  afterAll(() => pool.end());

  const insert = prepare(scratch.params(), (p) =>
    db
      .insertInto('scratch_bikes')
      .values({ id: p.id, ...scratch.setColumns(p) } as never)
      .returningAll(),
  );
  const patchParams = { ...scratch.params(scratch.written), id: param<string>(), patched: param<string[]>() };
  const patch = prepare(patchParams, (p) =>
    db
      .updateTable('scratch_bikes')
      .set(scratch.patchColumns('scratch_bikes', p) as never)
      .where('id', '=', p.id)
      .returningAll(),
  );
  /** A client's or the pool's queries, as a statement runs them (unnamed: the name is no callback of pg's). */
  const run =
    (on: Pool | Client): Query =>
    (text, values) =>
      on.query(text, values);

  async function created(fields: object) {
    const id = randomUUID();
    await insert.run(run(pool), scratch.toRow({ id, ...fields }) as never);
    return id;
  }
  const patched = async (id: string, body: object, on = run(pool)) =>
    (await patch.run(on, { id, ...scratch.patchValues(body) } as never))[0];

  it('stores a create that leaves an optional field out as null', async () => {
    const id = await created({ title: 'T', frame: { size: '54 cm' } });
    const { rows } = await pool.query('SELECT * FROM scratch_bikes WHERE id = $1', [id]);
    expect(rows).toEqual([{ id, title: 'T', frame_size: '54 cm', weight_kg: null, note: null }]);
  });

  it('sets null where a patch says null, and keeps every field a patch leaves out', async () => {
    const id = await created({ title: 'T', frame: { size: '54 cm', weightKg: 9.5 }, note: 'n' });
    expect(await patched(id, { note: null })).toEqual({
      id,
      title: 'T',
      frame_size: '54 cm',
      weight_kg: 9.5,
      note: null,
    });
    expect(await patched(id, { frame: { size: '56 cm', weightKg: null } })).toEqual({
      id,
      title: 'T',
      frame_size: '56 cm',
      weight_kg: null,
      note: null,
    });
    expect(await patched(id, { note: 'again' })).toMatchObject({ frame_size: '56 cm', weight_kg: null, note: 'again' });
  });

  it('keeps a concurrent patch of another field: the second update sets its own field on the row the first left', async () => {
    const id = await created({ title: 'T', frame: { size: '54 cm', weightKg: 9.5 }, note: 'n' });
    const first = new Client({ connectionString: url });
    const second = new Client({ connectionString: url });
    await Promise.all([first.connect(), second.connect()]);
    try {
      await first.query('BEGIN');
      await patched(id, { note: null }, run(first));
      // Waits for the first's row lock, then sets its own column on the row the first committed.
      const waiting = patched(id, { frame: { size: '58 cm', weightKg: 11 } }, run(second));
      const { processID } = second;
      await waitFor('the second patch to wait for the row', async () => {
        const { rows } = await pool.query(
          "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
          [processID],
        );
        return rows.length > 0 || undefined;
      });
      await first.query('COMMIT');
      expect(await waiting).toEqual({ id, title: 'T', frame_size: '58 cm', weight_kg: 11, note: null });
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
  });
});

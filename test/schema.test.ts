import fs from 'node:fs';
import path from 'node:path';
import { get_dmmf } from '@prisma/prisma-schema-wasm';
import { Client } from 'pg';
import { bike } from '../src/bikes/bike';
import { FIELDS, fieldsOf } from '../src/bikes/fields';
import { createTestDatabase } from './support/databases';

/**
 * schema.prisma and the committed migration SQL must describe the same table. Prisma's own
 * schema parser reads schema.prisma; the migrated test database says what the SQL built.
 */

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: string;
  type: string;
  isRequired: boolean;
  isList: boolean;
  nativeType: [string, string[]] | null;
  default?: { name: string } | unknown;
}
interface DmmfIndex {
  model: string;
  type: 'id' | 'unique' | 'normal' | 'fulltext';
  algorithm?: string;
  dbName?: string | null;
  fields: { name: string; operatorClass?: string }[];
}
interface Dmmf {
  datamodel: {
    models: { name: string; dbName: string | null; fields: DmmfField[] }[];
    indexes: DmmfIndex[];
  };
}

const schemaText = fs.readFileSync(path.join(__dirname, '..', 'prisma', 'schema.prisma'), 'utf8');
const dmmf = JSON.parse(get_dmmf(JSON.stringify({ prismaSchema: schemaText }))) as Dmmf;

/**
 * The fields of a model of a type Prisma does not support (`Unsupported("tsvector")`), which its
 * DMMF leaves out: their names, columns and types, read from the schema's text.
 */
function unsupportedFields(model: string) {
  const body = new RegExp(`^model ${model} \\{([^}]*)\\}`, 'm').exec(schemaText)?.[1] ?? '';
  return [...body.matchAll(/^\s+(\w+)\s+Unsupported\("(\w+)"\)(\?)?(.*)$/gm)].map(([, name, type, optional, rest]) => ({
    name,
    column: /@map\("(\w+)"\)/.exec(rest)?.[1] ?? name,
    type,
    optional: optional === '?',
  }));
}

/** Where a field is declared in its model in schema.prisma: its line's place among the model's lines. */
function declaredAt(model: string, field: string): number {
  const body = new RegExp(`^model ${model} \\{([^}]*)\\}`, 'm').exec(schemaText)?.[1] ?? '';
  const at = body.split('\n').findIndex((line) => new RegExp(`^\\s+${field}\\s`).test(line));
  if (at < 0) throw new Error(`no field ${field} in model ${model}`);
  return at;
}

function postgresType(field: DmmfField): string {
  const native = field.nativeType?.[0];
  if (native === 'Uuid') return 'uuid';
  if (native === 'Timestamptz') return 'timestamp with time zone';
  const byPrismaType: Record<string, string> = {
    String: 'text',
    BigInt: 'bigint',
    Int: 'integer',
    Float: 'double precision',
    Boolean: 'boolean',
    DateTime: 'timestamp without time zone',
  };
  return byPrismaType[field.type];
}

describe('the database schema', () => {
  let db: Client;
  beforeAll(async () => {
    db = new Client({ connectionString: await createTestDatabase() });
    await db.connect();
  });
  afterAll(() => db.end());

  for (const model of dmmf.datamodel.models) {
    const table = model.dbName ?? model.name;
    const unsupported = unsupportedFields(model.name);
    const columnOf = (fieldName: string) => {
      const field = model.fields.find((f) => f.name === fieldName);
      return field?.dbName ?? unsupported.find((f) => f.name === fieldName)?.column ?? fieldName;
    };

    it(`has exactly the columns of model ${model.name} in table ${table}, with their types and nullability`, async () => {
      const { rows } = await db.query<{ column_name: string; data_type: string; is_nullable: string }>(
        `SELECT column_name, data_type, is_nullable FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`,
        [table],
      );
      const expected = model.fields
        .filter((field) => field.kind === 'scalar')
        .map((field) => ({
          name: field.name,
          column_name: field.dbName ?? field.name,
          data_type: field.isList ? 'ARRAY' : postgresType(field),
          // A list (text[]) has no nullability Prisma can say: its migration says it
          // (api_keys.scopes NOT NULL; bike_changes.changed_by_scopes null outside the API).
          is_nullable: field.isList ? 'a list' : field.isRequired ? 'NO' : 'YES',
        }))
        .concat(
          unsupported.map((field) => ({
            name: field.name,
            column_name: field.column,
            data_type: field.type,
            is_nullable: field.optional ? 'YES' : 'NO',
          })),
        )
        // In the model's order, an Unsupported field among the others (Prisma's own list has them
        // apart): a column a migration adds comes after every column there is, whatever its type.
        .sort((a, b) => declaredAt(model.name, a.name) - declaredAt(model.name, b.name))
        .map(({ name: _name, ...column }) => column);
      const lists = new Set(expected.filter((e) => e.is_nullable === 'a list').map((e) => e.column_name));
      expect(rows.map((row) => (lists.has(row.column_name) ? { ...row, is_nullable: 'a list' } : row))).toEqual(
        expected,
      );
    });

    it(`has exactly the indexes schema.prisma declares for ${model.name}`, async () => {
      const { rows } = await db.query<{ indexname: string; indexdef: string }>(
        `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1`,
        [table],
      );
      const expected = dmmf.datamodel.indexes
        .filter((index) => index.model === model.name)
        .map((index) => {
          const columns = index.fields.map((f) => columnOf(f.name));
          // Prisma's default constraint and index names.
          const suffix = { id: 'pkey', unique: 'key', normal: 'idx', fulltext: 'idx' }[index.type];
          const name =
            index.dbName ?? (index.type === 'id' ? `${table}_pkey` : `${table}_${columns.join('_')}_${suffix}`);
          const unique = index.type === 'id' || index.type === 'unique' ? 'UNIQUE ' : '';
          const method = (index.algorithm ?? 'BTree').toLowerCase();
          const parts = index.fields.map((f) => [columnOf(f.name), f.operatorClass].filter(Boolean).join(' '));
          return {
            indexname: name,
            indexdef: `CREATE ${unique}INDEX ${name} ON public.${table} USING ${method} (${parts.join(', ')})`,
          };
        });
      const byName = (a: { indexname: string }, b: { indexname: string }) => a.indexname.localeCompare(b.indexname);
      expect([...rows].sort(byName)).toEqual(expected.sort(byName));
    });
  }

  it('lets a column of bikes hold null exactly where its field of the bike may be null (the definition says)', async () => {
    const { rows } = await db.query<{ column_name: string; is_nullable: string }>(
      `SELECT column_name, is_nullable FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = 'bikes'`,
    );
    const nullableColumns = new Set(rows.filter((row) => row.is_nullable === 'YES').map((row) => row.column_name));
    const fields = fieldsOf(bike, FIELDS);
    expect(fields.map(({ name, column }) => [name, nullableColumns.has(column)])).toEqual(
      fields.map(({ name, nullable }) => [name, nullable]),
    );
  });

  it('has the extensions that schema.prisma declares', async () => {
    const declared = (/extensions\s*=\s*\[([^\]]*)\]/.exec(schemaText)?.[1] ?? '').split(',').map((e) => e.trim());
    expect(declared).toEqual(['pg_trgm', 'unaccent', 'fuzzystrmatch']);
    const { rows } = await db.query<{ extname: string }>(
      `SELECT extname FROM pg_extension WHERE extname <> 'plpgsql' ORDER BY extname`,
    );
    expect(rows.map((row) => row.extname)).toEqual([...declared].sort());
  });
});

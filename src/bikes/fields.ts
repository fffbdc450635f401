import { type RawBuilder, type Selectable, sql } from 'kysely';
import type * as yup from 'yup';
import { param } from '../db/sql';
import type { DB } from '../generated/kysely/database.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { describe } from '../http/schema';
import { type Bike, bike, type BikeFields, type BikePatch } from './bike';

/**
 * The bike's fields mapped to the table, once: each field of the definition (bike.ts), by its
 * path (yup's, as X-Invalid-Field names it), to the column of `bikes` that holds it (the change
 * log, `bike_changes`, has the same columns) and to its name in rows, Prisma's model field
 * (schema.prisma). Every list of the bike's fields in src/ is made from it below: the statements'
 * select lists, parameters, values and columns, and the mapping of rows to bikes and back. Whether
 * a field may be null is the definition's to say (`.nullable()`), and each entry carries it from
 * there (fieldsOf): null is a value like any other, never a sign that a field was not given.
 *
 * The compiler checks it against both sides: every field of the definition is here, each column
 * is one of `bikes` holding the field's type, each name is a field of Prisma's model, and every
 * column of `bikes` is some field's or one of the table's own (TableColumn). The change log's
 * triggers, SQL of their own, are held to it by test/feed/change-capture.test.ts. Adding a field:
 * docs/development.md#adding-a-field-to-the-bike.
 * @internal That test reads it.
 */
export const FIELDS = {
  id: { column: 'id', name: 'id' },
  handle: { column: 'handle', name: 'handle' },
  title: { column: 'title', name: 'title' },
  productType: { column: 'product_type', name: 'productType' },
  createdAt: { column: 'created_at', name: 'createdAt' },
  description: { column: 'description', name: 'description' },
  vendor: { column: 'vendor', name: 'vendor' },
  availableForSale: { column: 'available_for_sale', name: 'availableForSale' },
  totalInventory: { column: 'total_inventory', name: 'totalInventory' },
  'priceRange.minPrice.amount': { column: 'min_price_amount', name: 'minPriceAmount' },
  'priceRange.minPrice.currencyCode': { column: 'min_price_currency_code', name: 'minPriceCurrencyCode' },
  'priceRange.maxPrice.amount': { column: 'max_price_amount', name: 'maxPriceAmount' },
  'priceRange.maxPrice.currencyCode': { column: 'max_price_currency_code', name: 'maxPriceCurrencyCode' },
} as const satisfies FieldMap;

/**
 * The columns of `bikes` that hold no field of a bike: the insertion order, the version and
 * times triggers keep, and the generated keys GET /bikes orders and filters by.
 */
type TableColumn =
  | 'seq'
  | 'version'
  | 'inserted_at'
  | 'updated_at'
  | 'title_key'
  | 'vendor_key'
  | 'product_type_key'
  | 'min_price_currency_key';

// The types that check the map, and that type what is made of it.

type Columns = Selectable<DB['bikes']>;
type BikeColumn = Exclude<keyof Columns, TableColumn>;

/** The dotted paths of the leaves of T: `title`, `priceRange.minPrice.amount`, ... */
type LeafPath<T> = {
  [K in keyof T & string]: T[K] extends object ? `${K}.${LeafPath<T[K]>}` : K;
}[keyof T & string];

/** The type at a dotted path of T. */
type At<T, Path extends string> = Path extends `${infer K}.${infer Rest}`
  ? K extends keyof T
    ? At<T[K], Rest>
    : never
  : Path extends keyof T
    ? T[Path]
    : never;

/** The columns of `bikes` whose values are exactly of type T. */
type ColumnOfType<T> = {
  [C in BikeColumn]: [Columns[C]] extends [T] ? ([T] extends [Columns[C]] ? C : never) : never;
}[BikeColumn];

type FieldPath = LeafPath<Bike>;

type FieldMap = {
  readonly [Path in FieldPath]: {
    readonly column: ColumnOfType<At<Bike, Path>>;
    readonly name: Prisma.BikeScalarFieldEnum;
  };
};

/** An error, by name, for each column of `bikes` no field maps and that is not the table's own. */
type EveryColumnIn<Map extends FieldMap> = {
  [
    C in Exclude<BikeColumn, Map[FieldPath]['column']>
  ]: `column ${C} of bikes: map it to a field, or list it in TableColumn`;
};

/**
 * The map, checked to cover every column of `bikes` (`satisfies FieldMap` checks each entry, not
 * that: that needs the map's own type, this function's type parameter).
 */
function covering<const Map extends FieldMap>(map: Map & NoInfer<EveryColumnIn<Map>>): Map {
  return map;
}

// Written so that a mistake in the map is an error there, not at every use too.
type EntryOf<Path extends FieldPath> = Path extends keyof typeof FIELDS ? (typeof FIELDS)[Path] : never;
type ColumnOf<Path extends FieldPath> = EntryOf<Path>['column'] & BikeColumn;
type NameOf<Path extends FieldPath> = EntryOf<Path>['name'];

/** The fields a write sets: all but the id, which says which bike. */
type WrittenPath = Exclude<FieldPath, 'id'>;

/** A bike as rows hold it (and Prisma's model): each field by its name, of its column's type. */
export type BikeRow = { [Path in FieldPath as NameOf<Path>]: Columns[ColumnOf<Path>] };

/**
 * A patch as its statement takes it: the columns it sets (`patched`), and each written field by its
 * name, its value where it is set (null included) and null where it is not.
 */
type PatchRow = { [Path in WrittenPath as NameOf<Path>]: Columns[ColumnOf<Path>] | null } & { patched: BikeColumn[] };

/** What a whole bike's write is given: a create's or a replacement's fields, which may leave out an optional one. */
type BikeInput = Pick<Bike, 'id' | 'handle'> & BikeFields;

/** The parameters of a statement that takes these values, by the same names. */
type ParamsOf<Values> = { [Name in keyof Values]: RawBuilder<Values[Name]> };

/** Values for the written columns (an insert's, an update's SET), each of its column's type. */
type WrittenColumns = { [Path in WrittenPath as ColumnOf<Path>]: RawBuilder<Columns[ColumnOf<Path>]> };

/** `<table>.<column> as <name>` of each field of Path (no alias where they are the same): rows hold the fields by name. */
type Selection<Table extends string, Path extends FieldPath> = {
  [P in Path]: ColumnOf<P> extends NameOf<P> ? `${Table}.${ColumnOf<P>}` : `${Table}.${ColumnOf<P>} as ${NameOf<P>}`;
}[Path];

// The lists made of the map, in its order. Object.keys and Object.fromEntries type what they make
// with any string for a key: each cast below names the type the map gives it, entry for entry.

/** A field of a map, as the lists are made of it. */
interface Field {
  /** The path's keys: `['priceRange', 'minPrice', 'amount']`. */
  keys: string[];
  column: string;
  name: string;
  /** Whether its value may be null, as the definition says (`.nullable()`); its column then holds null. */
  nullable: boolean;
}

/**
 * The fields of `map` (a field map like FIELDS) in its order, each with its nullability read off
 * `definition`, the yup schema of the whole object (for the bike, `bike`).
 * @internal test/field-map.test.ts makes a map of a definition of its own, with an optional field.
 */
export function fieldsOf(
  definition: yup.Schema,
  map: Readonly<Record<string, { readonly column: string; readonly name: string }>>,
): Field[] {
  return Object.entries(map).map(([path, { column, name }]) => {
    const keys = path.split('.');
    let description: ReturnType<typeof describe> | undefined = describe(definition);
    let nullable = false;
    for (const key of keys) {
      description = description.fields?.[key];
      if (!description) throw new Error(`the field map names ${path}, which the definition does not have`);
      nullable ||= description.nullable;
    }
    return { keys, column, name, nullable };
  });
}

/** Whether the value at a field's path is given, and what it is: null where an object on the way is null. */
function valueAt(value: unknown, keys: string[]): { given: boolean; value: unknown } {
  for (const key of keys) {
    if (value === null) return { given: true, value: null };
    value = (value as Record<string, unknown> | undefined)?.[key];
  }
  return { given: value !== undefined, value: value ?? null };
}

/**
 * What a list of fields gives: the mapping of rows to objects and back, and the pieces of the
 * statements that read and write them. Untyped here: the bike's, below, are typed by its map.
 * @internal test/field-map.test.ts makes one of a definition of its own.
 */
export function mappingOf(fields: readonly Field[]) {
  const written = fields.filter((field) => field.name !== 'id');
  type Params = Record<string, RawBuilder<unknown>>;
  return {
    fields,
    written,

    /** The object a row holds, each field by its name; an optional field without a value is null. */
    fromRow(row: Record<string, unknown>): Record<string, unknown> {
      const object: Record<string, unknown> = {};
      for (const { keys, name } of fields) {
        let target = object;
        for (let i = 0; i < keys.length - 1; i++) target = (target[keys[i]] ??= {}) as Record<string, unknown>;
        target[keys[keys.length - 1]] = row[name];
      }
      return object;
    },

    /** An object's row, each field by its name: one it leaves out (an optional field, on create) is null. */
    toRow(object: object): Record<string, unknown> {
      return Object.fromEntries(fields.map(({ keys, name }) => [name, valueAt(object, keys).value]));
    },

    /**
     * The object a change of the log holds, told by the change's kind: none for a delete, which
     * holds only the id. A change that is not a delete holds every field that cannot be null: one
     * missing is a log its migration did not fill, an error, never a delete.
     */
    fromChange(kind: string, row: Record<string, unknown>): Record<string, unknown> | undefined {
      if (kind === 'delete') return undefined;
      const missing = fields.find(({ name, nullable }) => !nullable && row[name] === null);
      if (missing) throw new Error(`a ${kind} of ${String(row.id)} in the change log has no ${missing.column}`);
      return this.fromRow(row);
    },

    /**
     * A patch's values, by name, and the columns it sets (`patched`): each field the patch names,
     * with its value, null included; a field it leaves out is not set, its value null.
     */
    patchValues(patch: object): Record<string, unknown> & { patched: string[] } {
      const patched: string[] = [];
      const values: Record<string, unknown> = {};
      for (const { keys, column, name } of written) {
        const { given, value } = valueAt(patch, keys);
        if (given) patched.push(column);
        values[name] = value;
      }
      return { ...values, patched };
    },

    /** Parameters, by name, of every field's value (`of: written` for all but the id). */
    params: (of: readonly Field[] = fields): Params => Object.fromEntries(of.map(({ name }) => [name, param()])),

    /** The written columns, each set to its field's parameter. */
    setColumns: (p: Params): Params => Object.fromEntries(written.map(({ column, name }) => [column, p[name]])),

    /**
     * A patch's SET, one statement for every patch: each written column its field's parameter
     * where `patched` names the column, otherwise as the row is when the update finds it.
     */
    patchColumns: (table: string, p: Params & { patched: RawBuilder<string[]> }): Params =>
      Object.fromEntries(
        written.map(({ column, name }) => [
          column,
          sql`CASE WHEN ${sql.lit(column)} = ANY(${p.patched}::text[]) THEN ${p[name]} ELSE ${sql.ref(`${table}.${column}`)} END`,
        ]),
      ),
  };
}

/** The bike's fields: the map, each with its nullability as bike.ts says. */
const BIKE = mappingOf(fieldsOf(bike, covering(FIELDS)));
const WRITTEN = BIKE.written;

/** A bike's columns, each as its name: what a read of bikes selects. */
export const BIKE_COLUMNS = BIKE.fields.map((field) => selected('bikes', field)) as readonly Selection<
  'bikes',
  FieldPath
>[];

/** The written fields' columns of `table` (the change log's, under an alias), each as its name. */
export function writtenColumnsOf<Table extends string>(table: Table) {
  return WRITTEN.map((field) => selected(table, field)) as readonly Selection<Table, WrittenPath>[];
}

function selected(table: string, { column, name }: Field): string {
  return column === name ? `${table}.${column}` : `${table}.${column} as ${name}`;
}

/**
 * The bike a row holds: a row of a statement that selects BIKE_COLUMNS, or Prisma's model with
 * those fields.
 */
export function fromModelFields(row: BikeRow): Bike {
  // A Bike because the map has every field of one, each from a column of the field's own type.
  return BIKE.fromRow(row) as Bike;
}

/** The bike a change of the log holds, by its kind: none for a delete (mappingOf's fromChange). */
export function fromChange(kind: string, row: { [Name in keyof BikeRow]: BikeRow[Name] | null }): Bike | undefined {
  return BIKE.fromChange(kind, row) as Bike | undefined;
}

/**
 * A bike by its fields' names: the values of a whole bike's write, or of Prisma's createMany (the
 * seed); an optional field the fields leave out (a create's, a replacement's) is null.
 */
export function toModelFields(bike: BikeInput): BikeRow {
  return BIKE.toRow(bike) as BikeRow;
}

/** A bike as it is stored from the fields a create or a replacement gives: each optional field left out, null. */
export function asStored(bike: BikeInput): Bike {
  return fromModelFields(toModelFields(bike));
}

/** The values of the fields a patch carries, by name, and the columns it sets (null sets null; absent keeps). */
export function patchValues(patch: BikePatch): PatchRow {
  return BIKE.patchValues(patch) as PatchRow;
}

/** The parameters of a whole bike's values (toModelFields). */
export function bikeParams(): ParamsOf<BikeRow> {
  return BIKE.params() as ParamsOf<BikeRow>;
}

/** The parameters of a patch's values (patchValues). */
export function patchParams(): ParamsOf<PatchRow> {
  return { ...BIKE.params(WRITTEN), patched: param<BikeColumn[]>() } as ParamsOf<PatchRow>;
}

/** The written columns, each set to its field's parameter: an insert's values (but the id), a replacement's SET. */
export function setColumns(p: ParamsOf<Omit<BikeRow, 'id'>>): WrittenColumns {
  return BIKE.setColumns(p) as WrittenColumns;
}

/**
 * A patch's SET: each column the patch names set to its value, null included, and every other as
 * the update finds it, so concurrent patches of other fields are kept; one statement, compiled
 * once, for every set of fields (docs/reference/reads-and-writes.md#partial-update-patch).
 */
export function patchColumns(p: ParamsOf<PatchRow>): WrittenColumns {
  return BIKE.patchColumns('bikes', p) as WrittenColumns;
}

/** The written columns, in the order `paramsAsColumns` selects them: an INSERT ... SELECT's column list. */
export const WRITTEN_COLUMNS = WRITTEN.map(({ column }) => column) as readonly BikeColumn[];

/** Each written field's parameter as its column: the select list of an INSERT ... SELECT. */
export function paramsAsColumns(p: ParamsOf<Omit<BikeRow, 'id'>>) {
  return WRITTEN.map(({ column, name }) => {
    const value: RawBuilder<unknown> = (p as Record<string, RawBuilder<unknown>>)[name];
    return value.as(column);
  });
}

/**
 * The model's fields that make a bike, for Prisma Client's `select`.
 * @public bench/minimal/koa-prisma.js and bench/equivalent/koa-prisma.js require it from dist/.
 */
export const BIKE_SELECT = Object.fromEntries(BIKE.fields.map(({ name }) => [name, true]));

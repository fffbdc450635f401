import { type RawBuilder, type Selectable, sql } from 'kysely';
import { param } from '../db/sql';
import type { DB } from '../generated/kysely/database.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import type { Bike, BikePatch } from './bike';

/**
 * The bike's fields mapped to the table, once: each field of the definition (bike.ts), by its
 * path (yup's, as X-Invalid-Field names it), to the column of `bikes` that holds it (the change
 * log, `bike_changes`, has the same columns) and to its name in rows, Prisma's model field
 * (schema.prisma). Every list of the bike's fields in src/ is made from it below: the statements'
 * select lists, parameters, values and columns, and the mapping of rows to bikes and back.
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

/** A patch as its statement takes it: each written field by its name, or null to leave it as it is. */
type PatchRow = { [Path in WrittenPath as NameOf<Path>]: Columns[ColumnOf<Path>] | null };

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

interface Field<Name extends keyof BikeRow = keyof BikeRow> {
  /** The path's keys: `['priceRange', 'minPrice', 'amount']`. */
  keys: string[];
  column: BikeColumn;
  name: Name;
}

const FIELD_LIST: readonly Field[] = (Object.keys(covering(FIELDS)) as FieldPath[]).map((path) => ({
  keys: path.split('.'),
  ...FIELDS[path],
}));
const WRITTEN = FIELD_LIST.filter((field): field is Field<Exclude<keyof BikeRow, 'id'>> => field.name !== 'id');

/** A bike's columns, each as its name: what a read of bikes selects. */
export const BIKE_COLUMNS = FIELD_LIST.map((field) => selected('bikes', field)) as readonly Selection<
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
  const bike: Record<string, unknown> = {};
  for (const { keys, name } of FIELD_LIST) {
    let target = bike;
    for (let i = 0; i < keys.length - 1; i++) target = (target[keys[i]] ??= {}) as Record<string, unknown>;
    target[keys[keys.length - 1]] = row[name];
  }
  return bike as Bike;
}

/** Whether a row holds every field (a change log's row does for an upsert, not for a delete). */
export function isWhole<Row extends { [Name in keyof BikeRow]: BikeRow[Name] | null }>(row: Row): row is Row & BikeRow {
  return FIELD_LIST.every(({ name }) => row[name] !== null);
}

/** The value at a field's path; undefined where an object on the way is not there (a patch's). */
function valueAt(bike: object, keys: string[]): unknown {
  let value: unknown = bike;
  for (const key of keys) value = (value as Record<string, unknown> | undefined)?.[key];
  return value;
}

/** A bike by its fields' names: the values of a whole bike's write, or of Prisma's createMany (the seed). */
export function toModelFields(bike: Bike): BikeRow {
  return Object.fromEntries(FIELD_LIST.map(({ keys, name }) => [name, valueAt(bike, keys)])) as BikeRow;
}

/** The values of the fields a patch carries, by name; null for each it leaves as it is. */
export function patchValues(patch: BikePatch): PatchRow {
  return Object.fromEntries(WRITTEN.map(({ keys, name }) => [name, valueAt(patch, keys) ?? null])) as PatchRow;
}

/** The parameters of a whole bike's values (toModelFields). */
export function bikeParams(): ParamsOf<BikeRow> {
  return Object.fromEntries(FIELD_LIST.map(({ name }) => [name, param()])) as ParamsOf<BikeRow>;
}

/** The parameters of a patch's values (patchValues). */
export function patchParams(): ParamsOf<PatchRow> {
  return Object.fromEntries(WRITTEN.map(({ name }) => [name, param()])) as ParamsOf<PatchRow>;
}

/** The written columns, each set to its field's parameter: an insert's values (but the id), a replacement's SET. */
export function setColumns(p: ParamsOf<Omit<BikeRow, 'id'>>): WrittenColumns {
  return Object.fromEntries(WRITTEN.map(({ column, name }) => [column, p[name]])) as WrittenColumns;
}

/**
 * A patch's SET: each written column its field's parameter, or, where that is null, as it is. No
 * field of a bike can be null, so a null always means "not in the patch".
 */
export function patchColumns(p: ParamsOf<PatchRow>): WrittenColumns {
  return Object.fromEntries(
    WRITTEN.map(({ column, name }) => [column, sql`coalesce(${p[name]}, ${sql.ref(`bikes.${column}`)})`]),
  ) as WrittenColumns;
}

/** The written columns, in the order `paramsAsColumns` selects them: an INSERT ... SELECT's column list. */
export const WRITTEN_COLUMNS: readonly BikeColumn[] = WRITTEN.map(({ column }) => column);

/** Each written field's parameter as its column: the select list of an INSERT ... SELECT. */
export function paramsAsColumns(p: ParamsOf<Omit<BikeRow, 'id'>>) {
  return WRITTEN.map(({ column, name }) => {
    const value: RawBuilder<unknown> = p[name];
    return value.as(column);
  });
}

/**
 * The model's fields that make a bike, for Prisma Client's `select`.
 * @public bench/minimal/koa-prisma.js and bench/equivalent/koa-prisma.js require it from dist/.
 */
export const BIKE_SELECT = Object.fromEntries(FIELD_LIST.map(({ name }) => [name, true]));

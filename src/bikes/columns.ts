import type { Selectable } from 'kysely';
import type { DB } from '../generated/kysely/database.ts';
import { type Bike, bike } from './bike';
import { describe } from './yup';

/**
 * Where each field of a bike is stored, by one rule (docs/decisions.md, Database): productType ->
 * product_type, priceRange.minPrice.amount -> min_price_amount. The rule is written twice, for
 * the values and as the type BikeColumn, so the compiler checks each column against the table.
 */

type Snake<S extends string> = S extends `${infer C}${infer Rest}`
  ? `${C extends Lowercase<C> ? C : `_${Lowercase<C>}`}${Snake<Rest>}`
  : S;
type Embedded<T, Path extends string> = {
  [K in keyof T & string]: T[K] extends object ? Embedded<T[K], `${Path}${K}_`> : Snake<`${Path}${K}`>;
}[keyof T & string];
export type BikeColumn = {
  [K in keyof Bike & string]: Bike[K] extends object ? Embedded<Bike[K], ''> : Snake<K>;
}[keyof Bike & string];

/** A row of the bikes table, as far as a bike goes. */
export type BikeRow = Pick<Selectable<DB['bikes']>, BikeColumn>;

type Fields = ReturnType<typeof describe>['fields'];

function columnOf(path: string[]): BikeColumn {
  const name = path.length === 1 ? path[0] : path.slice(1).join('_');
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) as BikeColumn;
}

/** Every leaf of a bike (['priceRange', 'minPrice', 'amount']), in the order of the bike's fields. */
function leaves(fields: Fields, path: string[] = []): string[][] {
  return Object.entries(fields ?? {}).flatMap(([key, field]) =>
    field.fields ? leaves(field.fields, [...path, key]) : [[...path, key]],
  );
}

const LEAVES = leaves(describe(bike).fields).map((path) => ({ path, column: columnOf(path) }));

/** The columns of a bike, for a SELECT list. */
export const BIKE_COLUMNS = LEAVES.map((leaf) => leaf.column);

/**
 * The bike stored in a row, its fields in the schema's order. Compiled once into one object
 * literal, so it runs like a hand-written mapping: a generic loop over the leaves made the
 * mapping and serialization of /bikes/all 1.5 times slower per row.
 */
export const toBike = new Function('row', `return ${literal(describe(bike).fields)};`) as (row: BikeRow) => Bike;

function literal(fields: Fields, path: string[] = []): string {
  const entries = Object.entries(fields ?? {}).map(([key, field]) => {
    const at = [...path, key];
    const value = field.fields ? literal(field.fields, at) : `row[${JSON.stringify(columnOf(at))}]`;
    return `${JSON.stringify(key)}: ${value}`;
  });
  return `{ ${entries.join(', ')} }`;
}

/** The columns to write for the fields present in `values` (a bike, or part of one), each written whole. */
export function toColumns(values: Partial<Record<keyof Bike, unknown>>): Partial<BikeRow> {
  const row: Record<string, unknown> = {};
  for (const { path, column } of LEAVES) {
    if (values[path[0] as keyof Bike] === undefined) continue;
    let value: unknown = values;
    for (const key of path) value = (value as Record<string, unknown>)[key];
    row[column] = value;
  }
  return row as Partial<BikeRow>;
}

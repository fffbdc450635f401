import {
  type Compilable,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type RawBuilder,
  sql,
} from 'kysely';
import type { DB } from '../generated/kysely/database.ts';
import type { Query } from './replica';

/**
 * Kysely as a compiler, typed by the tables prisma/schema.prisma defines (a query naming a
 * column that does not exist, or comparing it with a value of another type, does not compile).
 * Statements are compiled once and run on the pg pool: building and compiling a query per call
 * cost 11-14 µs, a tenth of a read's whole time (docs/decisions.md#prisma-client).
 */
export const kysely = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

let markers = 0;

/**
 * A parameter of a statement, whose value of type T is given when it runs, under the name it has
 * in `prepare`'s parameters. Until then it stands in the query as a marker of its own, which
 * `prepare` turns into its place ($1, $2, ...).
 */
export function param<T>(): RawBuilder<T> {
  return sql.raw<T>(`$param${markers++}$`);
}

/** The values a statement's parameters take, by name. */
type ValuesOf<Params> = { [Name in keyof Params]: Params[Name] extends RawBuilder<infer T> ? T : never };

/** A statement compiled once: a way to run it with typed values for typed rows. */
export interface Statement<Params, Row> {
  run(query: Query, values: ValuesOf<Params>): Promise<Row[]>;
}

/**
 * Compiles the query `build` makes of `params` once. Every value of the query must be one of
 * them, so each one's type, checked against its column by the builder, is the type `run` takes,
 * and no stand-in value can reach the database.
 */
export function prepare<Params extends Record<string, RawBuilder<unknown>>, Row>(
  params: Params,
  build: (params: Params) => Compilable<Row>,
): Statement<Params, Row> {
  const { sql: compiled, parameters } = build(params).compile();
  if (parameters.length > 0) throw new Error(`a statement's values must be its parameters: ${compiled}`);
  const names: Extract<keyof Params, string>[] = [];
  let text = compiled;
  for (const name in params) {
    const marker = params[name].compile(kysely).sql;
    if (!text.includes(marker)) throw new Error(`parameter ${name} is not used: ${compiled}`);
    names.push(name);
    text = text.replaceAll(marker, `$${names.length}`);
  }
  if (/\$param\d+\$/.test(text)) throw new Error(`a statement uses a parameter it does not list: ${compiled}`);
  return {
    run: async (query, values) =>
      (
        await query<Row & object>(
          text,
          names.map((name) => values[name]),
        )
      ).rows,
  };
}

/**
 * The LIKE pattern of the strings that contain `term` as it is: its `%`, `_` and `\` match
 * themselves (backslash is LIKE's escape character).
 */
export function containing(term: string): string {
  return `%${term.replace(/[\\%_]/g, '\\$&')}%`;
}

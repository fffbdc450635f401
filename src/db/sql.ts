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
 * The hot reads are compiled once and run on the pg pool: building and compiling a query per
 * call cost 11-14 µs, a tenth of a read's whole time (docs/decisions.md, Prisma Client).
 */
export const kysely = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** The statement's `position`-th parameter ($1, $2, ...), a value of type T given when it runs. */
export function param<T>(position: number): RawBuilder<T> {
  return sql.raw<T>(`$${position}`);
}

/** The values a statement's parameters take, in their order. */
type ValuesOf<Params> = { [P in keyof Params]: Params[P] extends RawBuilder<infer T> ? T : never };

/** A statement compiled once: its text, and a way to run it with typed values for typed rows. */
export interface Statement<Params extends RawBuilder<unknown>[], Row> {
  readonly text: string;
  run(query: Query, ...values: ValuesOf<Params>): Promise<Row[]>;
}

/**
 * Compiles the query `build` makes of `params` ($1, $2, ... in that order). Every value of the
 * query must be one of them, so each one's type, checked against its column by the builder, is
 * the type `run` takes.
 */
export function prepare<Params extends RawBuilder<unknown>[], Row>(
  params: [...Params],
  build: (...params: Params) => Compilable<Row>,
): Statement<Params, Row> {
  const { sql: text, parameters } = build(...params).compile();
  const positions = params.map((p) => p.compile(kysely).sql);
  if (parameters.length > 0 || positions.some((position, i) => position !== `$${i + 1}`)) {
    throw new Error(`a statement's values must be its parameters $1, $2, ... in order: ${text}`);
  }
  return {
    text,
    run: async (query, ...values) => (await query<Row & object>(text, values)).rows,
  };
}

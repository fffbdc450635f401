import {
  type Compilable,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
} from 'kysely';
import type { DB } from '../generated/kysely/database.ts';

/**
 * Kysely as a compiler only, typed by the table that prisma/schema.prisma defines: a query
 * naming a column or table that does not exist does not compile. It never connects; the
 * statements it writes run on the pg pool (Prisma's own query path costs more per query than a
 * whole request of a plain node:http + pg server).
 */
export const kysely = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** A statement's text, compiled once, whose parameters are given in the order of its placeholders. */
export interface Statement<Row> {
  text: string;
  /** Carries the row type only. */
  readonly row?: Row;
}

/**
 * Compiles a query built with `placeholders` for its values, and checks that each became one
 * parameter, in order: the statement then runs with real values in their place.
 */
export function prepare<Row>(query: Compilable<Row>, ...placeholders: unknown[]): Statement<Row> {
  const { sql: text, parameters } = query.compile();
  if (parameters.length !== placeholders.length || parameters.some((value, i) => value !== placeholders[i])) {
    throw new Error(`the parameters of this statement are not its placeholders: ${text}`);
  }
  return { text };
}

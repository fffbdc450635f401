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
 * Kysely as a compiler only, typed by the table prisma/schema.prisma defines (a query naming a
 * column that does not exist does not compile); what it writes runs on the pg pool.
 */
export const kysely = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/** A statement's text, compiled once; `row` only carries the type of its rows. */
export interface Statement<Row> {
  text: string;
  readonly row?: Row;
}

/** Compiles a query built with `placeholders` for its values, checking each became one parameter, in order. */
export function prepare<Row>(query: Compilable<Row>, ...placeholders: unknown[]): Statement<Row> {
  const { sql: text, parameters } = query.compile();
  if (parameters.length !== placeholders.length || parameters.some((value, i) => value !== placeholders[i])) {
    throw new Error(`the parameters of this statement are not its placeholders: ${text}`);
  }
  return { text };
}

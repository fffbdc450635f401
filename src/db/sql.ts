import { createHash } from 'node:crypto';
import {
  type Compilable,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type RawBuilder,
  type SelectQueryBuilder,
  sql,
} from 'kysely';
import type { DB } from '../generated/kysely/database.ts';
import type { Query } from './replica';

/**
 * Kysely as a compiler, typed by the tables prisma/schema.prisma defines (a query naming a
 * column that does not exist, or comparing it with a value of another type, does not compile).
 * Statements are compiled once and run on the pg pool: building and compiling a query per call
 * cost 11-14 µs, a tenth of a read's whole time (docs/reference/database.md#prisma-client).
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

/** SQL's NULL, written into a statement: a value of its own would be a parameter, which `prepare` refuses. */
export const NULL = sql.lit(null);

/** A parameter for a bigint column, given as the text of its number (as pg reads a bigint). */
export const bigint = <T extends string | null>(value: RawBuilder<T>) => sql<T>`${value}::bigint`;

/** The values a statement's parameters take, by name. */
type ValuesOf<Params> = { [Name in keyof Params]: Params[Name] extends RawBuilder<infer T> ? T : never };

/** A statement compiled once: a way to run it with typed values for typed rows. */
export interface Statement<Params, Row> {
  run(query: Query, values: ValuesOf<Params>): Promise<Row[]>;
}

/**
 * How many statements the process prepares by name at most: each connection that prepares them
 * (src/db/pool.ts) keeps every one it has run, parsed and often planned, a page's about 0.2 MB of
 * the server's memory. The statements a module compiles when it loads come first; pages' shapes,
 * compiled when first asked for, take what is left, and those past it run unnamed, as before
 * (docs/reference/database.md#prepared-statements).
 */
const MAX_NAMED_STATEMENTS = 48;
const names = new Set<string>();

/**
 * A LIKE whose pattern is a parameter: its plan depends on the pattern (the trigram index serves
 * a selective one), which a plan made once, for any pattern, cannot see.
 */
const PATTERN_PARAMETER = /\blike \$\d/i;

/**
 * The name a statement is prepared under, from its text (the same text, the same name, whoever
 * compiles it); none for a statement whose plan must see its values, or past the budget.
 */
function nameOf(text: string, named: boolean): string | undefined {
  if (!named || PATTERN_PARAMETER.test(text)) return undefined;
  const name = `bikes_${createHash('sha1').update(text).digest('base64url').slice(0, 22)}`;
  if (names.has(name)) return name;
  if (names.size >= MAX_NAMED_STATEMENTS) return undefined;
  names.add(name);
  return name;
}

/**
 * Compiles the query `build` makes of `params` once. Every value of the query must be one of
 * them, so each one's type, checked against its column by the builder, is the type `run` takes,
 * and no stand-in value can reach the database.
 *
 * `named: false`: the statement always runs unnamed, and takes none of the budget the pages'
 * shapes share: for statements run a few times a second at most (the webhooks' leases and
 * positions) or once per process (a command), where a parse and a plan saved are not worth the
 * server's memory on every connection that ran them.
 */
export function prepare<Params extends Record<string, RawBuilder<unknown>>, Row>(
  params: Params,
  build: (params: Params) => Compilable<Row>,
  { named = true }: { named?: boolean } = {},
): Statement<Params, Row> {
  const { sql: compiled, parameters } = build(params).compile();
  if (parameters.length > 0) throw new Error(`a statement's values must be its parameters: ${compiled}`);
  const order: Extract<keyof Params, string>[] = [];
  let text = compiled;
  for (const param in params) {
    const marker = params[param].compile(kysely).sql;
    if (!text.includes(marker)) throw new Error(`parameter ${param} is not used: ${compiled}`);
    order.push(param);
    text = text.replaceAll(marker, `$${order.length}`);
  }
  if (/\$param\d+\$/.test(text)) throw new Error(`a statement uses a parameter it does not list: ${compiled}`);
  const name = nameOf(text, named);
  return {
    run: async (query, values) =>
      (
        await query<Row & object>(
          text,
          order.map((param) => values[param]),
          name,
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

/**
 * One statement, one snapshot, answering `head`'s row and then `rows`' rows in their order: the
 * head's columns come once, in a first row of their own (the rows' columns null in it), not joined
 * to every row (its columns null in theirs). Joined to each row, a list's version (the change
 * feed's snapshot and the triggers' state among its columns) took more bytes than a page's 25
 * bikes (docs/performance.md#a-page-and-a-list). Typed as the first row: the head's columns are
 * read from it alone.
 */
export function headThenRows<Head extends object, Row extends object, HeadDB, RowsDB, From extends keyof RowsDB>(
  head: SelectQueryBuilder<HeadDB, never, Head>,
  rows: SelectQueryBuilder<RowsDB, From, Row>,
) {
  return kysely
    .with('head', () => head)
    .with('rows', () => rows)
    .selectFrom('head')
    .leftJoin('rows', (join) => join.on(sql<boolean>`false`))
    .selectAll('head')
    .selectAll('rows')
    .unionAll(
      (eb) =>
        eb
          .selectFrom('rows')
          .leftJoin('head', (join) => join.on(sql<boolean>`false`))
          .selectAll('head')
          .selectAll('rows') as never,
    );
}

import type { Pool } from 'pg';
import { connectPool } from '../src/db/pool';
import type { Query } from '../src/db/replica';
import { kysely, param, prepare } from '../src/db/sql';
import { createTestDatabase } from './support/databases';

/**
 * A statement compiled once (src/db/sql.ts): each value is a typed parameter, checked against its
 * column when it compiles and the type `run` takes; a query with a value of its own is refused
 * when it is prepared, so no stand-in value can reach the database. The @ts-expect-error lines
 * are checked by `npm run typecheck`.
 */
describe('a statement compiled once', () => {
  let pool: Pool;
  const onPool: Query = (text, values) => pool.query(text, values);

  beforeAll(async () => {
    pool = connectPool(await createTestDatabase(), () => undefined);
  });
  afterAll(() => pool.end());

  const slotsFrom = prepare([param<number>(1), param<number>(2)], (from, limit) =>
    kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '>=', from).orderBy('slot').limit(limit),
  );

  it('has its parameters as $1, $2, ... and runs with the values given, in their order', async () => {
    expect(slotsFrom.text).toBe(
      'select "slot" from "catalog_version_slots" where "slot" >= $1 order by "slot" limit $2',
    );
    const rows: { slot: number }[] = await slotsFrom.run(onPool, 3, 2);
    expect(rows).toEqual([{ slot: 3 }, { slot: 4 }]);
  });

  it('does not compile with a value of another type or missing, a row of another type, or a parameter of another column type', () => {
    // Never called: each line is there to fail to compile (npm run typecheck).
    const misuses = () => [
      // @ts-expect-error -- a string where the parameter is a number
      slotsFrom.run(onPool, '3', 2),
      // @ts-expect-error -- one value missing
      slotsFrom.run(onPool, 3),
      // @ts-expect-error -- a row taken for another type than its query's
      slotsFrom.run(onPool, 3, 2).then((rows): { slot: string }[] => rows),
      prepare([param<string>(1)], (from) =>
        // @ts-expect-error -- a string parameter compared with an integer column
        kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '>=', from),
      ),
    ];
    expect(misuses).toBeInstanceOf(Function);
  });

  it('refuses a query with a value of its own', () => {
    expect(() =>
      prepare([], () => kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '=', 3)),
    ).toThrow(/must be its parameters/);
  });

  it('refuses parameters out of order', () => {
    expect(() =>
      prepare([param<number>(2), param<number>(1)], (from, limit) =>
        kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '>=', from).limit(limit),
      ),
    ).toThrow(/must be its parameters/);
  });
});

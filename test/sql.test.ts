import { Client, type Pool } from 'pg';
import { connectPool, queryOnClient } from '../src/db/pool';
import type { Query } from '../src/db/replica';
import { kysely, param, prepare } from '../src/db/sql';
import { createTestDatabase } from './support/databases';

/**
 * A statement compiled once (src/db/sql.ts): each value is a named, typed parameter, checked
 * against its column when it compiles and the type `run` takes; a query with a value of its own
 * is refused when it is prepared, so no stand-in value can reach the database. The
 * @ts-expect-error lines are checked by `npm run typecheck`.
 */
describe('a statement compiled once', () => {
  let pool: Pool;
  /** The texts the statements sent to PostgreSQL, the last one last. */
  const sent: string[] = [];
  const onPool: Query = (text, values) => {
    sent.push(text);
    return pool.query(text, values);
  };

  beforeAll(async () => {
    pool = connectPool(await createTestDatabase(), () => undefined);
  });
  afterAll(() => pool.end());

  const slotsFrom = prepare({ from: param<number>(), limit: param<number>() }, (p) =>
    kysely
      .selectFrom('catalog_version_slots')
      .select('slot')
      .where('slot', '>=', p.from)
      .orderBy('slot')
      .limit(p.limit),
  );

  it('has its parameters as $1, $2, ... in the order they are listed, and runs with the values given by name', async () => {
    const rows: { slot: number }[] = await slotsFrom.run(onPool, { limit: 2, from: 3 });
    expect(rows).toEqual([{ slot: 3 }, { slot: 4 }]);
    expect(sent.at(-1)).toBe('select "slot" from "catalog_version_slots" where "slot" >= $1 order by "slot" limit $2');
  });

  it('gives a parameter used twice one place', async () => {
    const between = prepare({ bound: param<number>() }, (p) =>
      kysely
        .selectFrom('catalog_version_slots')
        .select('slot')
        .where('slot', '>=', p.bound)
        .where('slot', '<=', p.bound),
    );
    expect(await between.run(onPool, { bound: 7 })).toEqual([{ slot: 7 }]);
    expect(sent.at(-1)).toBe('select "slot" from "catalog_version_slots" where "slot" >= $1 and "slot" <= $1');
  });

  it('does not compile with a value of another type or missing, a row of another type, or a parameter of another column type', () => {
    // Never called: each line is there to fail to compile (npm run typecheck).
    const misuses = () => [
      // @ts-expect-error -- a string where the parameter is a number
      slotsFrom.run(onPool, { from: '3', limit: 2 }),
      // @ts-expect-error -- one value missing
      slotsFrom.run(onPool, { from: 3 }),
      // @ts-expect-error -- a row taken for another type than its query's
      slotsFrom.run(onPool, { from: 3, limit: 2 }).then((rows): { slot: string }[] => rows),
      prepare({ from: param<string>() }, (p) =>
        // @ts-expect-error -- a string parameter compared with an integer column
        kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '>=', p.from),
      ),
    ];
    expect(misuses).toBeInstanceOf(Function);
  });

  it('runs a statement prepared before, whose rows have changed type since (a migration), again unnamed', async () => {
    const url = await createTestDatabase();
    const prepared = connectPool(url, () => undefined, { preparedStatements: 'on' });
    const admin = new Client({ connectionString: url });
    await admin.connect();
    const client = await prepared.connect();
    try {
      const query = queryOnClient(client);
      const versionOf = prepare({ slot: param<number>() }, (p) =>
        kysely.selectFrom('catalog_version_slots').select('version').where('slot', '=', p.slot),
      );
      expect(await versionOf.run(query, { slot: 1 })).toEqual([{ version: '0' }]);
      await admin.query('ALTER TABLE catalog_version_slots ALTER COLUMN version TYPE numeric');
      // PostgreSQL refuses the statement prepared on this connection (its result type changed).
      expect(await versionOf.run(query, { slot: 1 })).toEqual([{ version: '0' }]);
      expect(await versionOf.run(query, { slot: 2 })).toEqual([{ version: '0' }]);
    } finally {
      client.release();
      await admin.end();
      await prepared.end();
    }
  });

  it('refuses a query with a value of its own', () => {
    expect(() =>
      prepare({}, () => kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '=', 3)),
    ).toThrow(/must be its parameters/);
  });

  it('refuses a parameter it lists but does not use, and one it uses but does not list', () => {
    expect(() =>
      prepare({ from: param<number>(), unused: param<number>() }, (p) =>
        kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '>=', p.from),
      ),
    ).toThrow(/parameter unused is not used/);
    const stray = param<number>();
    expect(() =>
      prepare({}, () => kysely.selectFrom('catalog_version_slots').select('slot').where('slot', '>=', stray)),
    ).toThrow(/does not list/);
  });
});

import type { Pool } from 'pg';
import { isDatabaseUnavailable } from '../src/db/errors';
import { connectPool } from '../src/db/pool';
import { createTestDatabase } from './support/databases';

/**
 * The pool closes the connection of a query that runs past its limit (30 s in the service), so a
 * half-dead connection cannot hold a request forever. Shortened to 1 s here, against a query that
 * would run for an hour; a query well within the limit is left alone.
 */
describe('the database pool', () => {
  let databaseUrl: string;
  let pool: Pool;
  const cutOff: string[] = [];

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    pool = connectPool(databaseUrl, (err) => cutOff.push(err.message), { queryTimeoutMs: 1_000 });
  });
  afterAll(() => pool.end());

  it('when a query runs past the limit, fails it as "database unavailable" (a 503) and keeps serving', async () => {
    const error = await pool.query('SELECT pg_sleep(3600)').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(cutOff).toEqual([expect.stringMatching(/ran for over 1 s/)]);
    // Cancelled on the server before the error came back, not left to sleep on.
    const { rows: sleeping } = await pool.query(
      `SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(3600)'`,
    );
    expect(sleeping).toEqual([]);

    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows).toEqual([{ one: 1 }]);
  });

  it('leaves a query within the limit alone', async () => {
    // A limit far above the query's own length, which no busy machine stretches it past.
    const patientCutOff: string[] = [];
    const patient = connectPool(databaseUrl, (err) => patientCutOff.push(err.message), { queryTimeoutMs: 60_000 });
    try {
      const { rows } = await patient.query<{ done: string }>(`SELECT pg_sleep(1.5)::text AS done`);
      expect(rows).toEqual([{ done: '' }]);
      expect(patientCutOff).toEqual([]);
    } finally {
      await patient.end();
    }
  });
});

import type { Pool } from 'pg';
import { isDatabaseUnavailable } from '../src/db/errors';
import { connectPool } from '../src/db/pool';
import { createTestDatabase } from './support/databases';

/**
 * The pool closes the connection of a query that runs past its limit (30 s in the service), so a
 * half-dead connection cannot hold a request forever. Shortened to 1 s here.
 */
describe('the database pool', () => {
  let pool: Pool;
  const cutOff: string[] = [];

  beforeAll(async () => {
    pool = connectPool(await createTestDatabase(), (err) => cutOff.push(err.message), { queryTimeoutMs: 1_000 });
  });
  afterAll(() => pool.end());

  it('when a query runs past the limit, fails it as "database unavailable" (a 503) and keeps serving', async () => {
    const started = Date.now();
    const error = await pool.query('SELECT pg_sleep(5)').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(cutOff).toEqual([expect.stringMatching(/ran for over 1 s/)]);
    // Cancelled on the server before the error came back, not left to sleep on.
    const { rows: sleeping } = await pool.query(
      `SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(5)'`,
    );
    expect(sleeping).toEqual([]);

    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows).toEqual([{ one: 1 }]);
  });

  it('leaves a query within the limit alone', async () => {
    const { rows } = await pool.query<{ done: string }>(`SELECT pg_sleep(0.3)::text AS done`);
    expect(rows).toEqual([{ done: '' }]);
  });
});

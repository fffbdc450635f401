import { randomUUID } from 'node:crypto';
import net from 'node:net';
import type { Pool } from 'pg';
import { isDatabaseUnavailable, isRejectedValue } from '../src/db/errors';
import { connectPool } from '../src/db/pool';
import { createTestDatabase } from './support/databases';

/**
 * What a failed query means comes from what PostgreSQL (or the socket) said: a value it refused is
 * the request's fault (400, or PUT's 404), a server it cannot reach is a 503.
 */
describe("the database's errors", () => {
  const pools: Pool[] = [];
  afterAll(() => Promise.all(pools.map((pool) => pool.end())));
  const pool = (url: string) => {
    const made = connectPool(url, () => undefined);
    pools.push(made);
    return made;
  };
  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (err: unknown) => err,
    );

  it('when PostgreSQL refuses a value (U+0000 in a string: 22021), reads as a rejected value, not as unavailable', async () => {
    const error = await failure(
      pool(await createTestDatabase()).query('UPDATE bikes SET title = $1 WHERE id = $2', ['a\u0000b', randomUUID()]),
    );
    expect(error).toBeInstanceOf(Error);
    expect(isRejectedValue(error)).toBe(true);
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it('when the database cannot be reached, reads as unavailable (a 503)', async () => {
    // A port that was just free: nothing listens there.
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));

    const error = await failure(pool(`postgres://nobody:secret@127.0.0.1:${port}/nothing`).query('SELECT 1'));
    // Made by node's net module, outside the test's realm: an Error, though not this realm's.
    expect(error).toMatchObject({ code: 'ECONNREFUSED' });
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(isRejectedValue(error)).toBe(false);
  });
});

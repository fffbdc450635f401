import { randomUUID } from 'node:crypto';
import net from 'node:net';
import type { Pool } from 'pg';
import { toModelFields } from '../src/bikes/fields';
import { isDatabaseUnavailable, isRejectedValue } from '../src/db/errors';
import { connectPool } from '../src/db/pool';
import { createPrismaClient } from '../src/db/prisma';
import { newBike } from './support/bikes';
import { createTestDatabase } from './support/databases';

/**
 * Prisma Client wraps the driver's errors (PostgreSQL's SQLSTATE ends up in
 * meta.driverAdapterError); the routes' statuses must still come from what PostgreSQL said.
 */
describe("Prisma Client's errors", () => {
  const pools: Pool[] = [];
  afterAll(() => Promise.all(pools.map((pool) => pool.end())));
  const pool = (url: string) => {
    const made = connectPool(url, () => undefined);
    pools.push(made);
    return made;
  };
  const bike = (title: string) => toModelFields({ id: randomUUID(), handle: 'a-bike', ...newBike({ title }) });

  it('when PostgreSQL refuses a value (U+0000 in a string: 22021), reads as a rejected value, not as unavailable', async () => {
    const prisma = createPrismaClient(pool(await createTestDatabase()));
    const error = await prisma.bike.create({ data: bike('a\u0000b') }).then(
      () => undefined,
      (err: unknown) => err,
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

    const prisma = createPrismaClient(pool(`postgres://nobody:secret@127.0.0.1:${port}/nothing`));
    const error = await prisma.bike.create({ data: bike('A bike') }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(error)).toBe(true);
    expect(isRejectedValue(error)).toBe(false);
  });
});

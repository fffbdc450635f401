import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { migrate, readMigrations } from '../src/db/migrate';
import { createEmptyTestDatabase } from './support/databases';

async function query<T extends object>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

interface MigrationRow {
  id: string;
  checksum: string;
  migration_name: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  applied_steps_count: number;
  logs: string | null;
}

const recorded = (url: string) =>
  query<MigrationRow>(url, 'SELECT * FROM "_prisma_migrations" ORDER BY migration_name');

describe('the migration runner', () => {
  const committed = readMigrations();

  it('reads the committed migrations in name order, each checksummed as Prisma does (SHA-256 of the file)', () => {
    expect(committed.length).toBeGreaterThan(0);
    expect(committed.map((m) => m.name)).toEqual([...committed.map((m) => m.name)].sort());
    for (const migration of committed) {
      const file = fs.readFileSync(path.join(__dirname, '..', 'prisma', 'migrations', migration.name, 'migration.sql'));
      expect(migration.checksum).toBe(createHash('sha256').update(file).digest('hex'));
    }
  });

  it('on an empty database, applies every migration and records it in _prisma_migrations the way Prisma does', async () => {
    const url = await createEmptyTestDatabase();
    expect(await migrate(url)).toEqual(committed.map((m) => m.name));

    const rows = await recorded(url);
    expect(rows.map((r) => r.migration_name)).toEqual(committed.map((m) => m.name));
    for (const [i, row] of rows.entries()) {
      expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row.checksum).toBe(committed[i].checksum);
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.rolled_back_at).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }
    const [{ count }] = await query<{ count: string }>(url, 'SELECT count(*) FROM bikes');
    expect(count).toBe('0');
  });

  it('applies nothing the second time', async () => {
    const url = await createEmptyTestDatabase();
    await migrate(url);
    expect(await migrate(url)).toEqual([]);
    expect(await recorded(url)).toHaveLength(committed.length);
  });

  it('when several instances start at once, applies each migration exactly once', async () => {
    const url = await createEmptyTestDatabase();
    const results = await Promise.all(Array.from({ length: 6 }, () => migrate(url)));
    expect(results.flat().sort()).toEqual(committed.map((m) => m.name).sort());
    expect(await recorded(url)).toHaveLength(committed.length);
  });

  describe('with a migration that fails', () => {
    let dir: string;
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
      fs.mkdirSync(path.join(dir, '001_good'));
      fs.writeFileSync(path.join(dir, '001_good', 'migration.sql'), 'CREATE TABLE good (id int);');
      fs.mkdirSync(path.join(dir, '002_bad'));
      fs.writeFileSync(
        path.join(dir, '002_bad', 'migration.sql'),
        'CREATE TABLE half (id int);\nSELECT no_such_function();',
      );
    });
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('stops with an error naming it, and leaves neither its changes nor a record of it', async () => {
      const url = await createEmptyTestDatabase();
      await expect(migrate(url, () => undefined, readMigrations(dir))).rejects.toThrow(/002_bad/);
      expect((await recorded(url)).map((r) => r.migration_name)).toEqual(['001_good']);
      const tables = await query<{ tablename: string }>(
        url,
        `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
      );
      expect(tables.map((t) => t.tablename)).toEqual(['_prisma_migrations', 'good']);
    });
  });

  describe("with a slow migration, and the database's own statement_timeout and lock_timeout far shorter", () => {
    let dir: string;
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
      fs.mkdirSync(path.join(dir, '001_slow'));
      fs.writeFileSync(
        path.join(dir, '001_slow', 'migration.sql'),
        'SELECT pg_sleep(0.5);\nCREATE TABLE slow (id int);',
      );
    });
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('neither cuts the migration short nor gives up waiting for another instance applying it', async () => {
      const url = await createEmptyTestDatabase();
      const database = new URL(url).pathname.slice(1);
      await query(url, `ALTER DATABASE ${database} SET statement_timeout = '50ms'`);
      await query(url, `ALTER DATABASE ${database} SET lock_timeout = '50ms'`);
      const results = await Promise.all(
        Array.from({ length: 3 }, () => migrate(url, () => undefined, readMigrations(dir))),
      );
      expect(results.flat()).toEqual(['001_slow']);
      expect((await recorded(url)).map((r) => r.migration_name)).toEqual(['001_slow']);
    });
  });

  it('refuses to go on when Prisma recorded a migration as started but never finished', async () => {
    const url = await createEmptyTestDatabase();
    await migrate(url);
    await query(
      url,
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name) VALUES ('00000000-0000-4000-8000-000000000000', 'x', '99999999_half_done')`,
    );
    await expect(migrate(url)).rejects.toThrow(/99999999_half_done failed/);
  });
});

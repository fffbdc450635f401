import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

/** Pids of the PostgreSQL server processes (postmaster and backends) working on this data directory. */
export function postgresPidsFor(dataDir: string): number[] {
  const clusterDir = path.join(dataDir, 'postgres');
  const postmasters = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes('postgres') && line.includes(`-D ${clusterDir} `))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
  if (postmasters.length === 0) return [];
  // Its children (checkpointer, backends, ...) have the postmaster as parent.
  const children = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
    .filter(([, ppid]) => postmasters.includes(ppid))
    .map(([pid]) => pid);
  return [...postmasters, ...children];
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The PostgreSQL log of an embedded server in `dataDir`. */
export function postgresLog(dataDir: string): string {
  return fs.readFileSync(path.join(dataDir, 'postgres.log'), 'utf8');
}

/** Inserts `count` bikes with one SQL statement (much faster than the API for large catalogs). */
export async function seedBikes(databaseUrl: string, count: number, titlePrefix = 'Seeded Bike'): Promise<void> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       SELECT gen_random_uuid(), lower(replace($2 || ' ' || n, ' ', '-')), $2 || ' ' || n, 'Hybrid', '2024-03-01T10:00:00Z',
         'A comfortable hybrid for the city, number ' || n, 'Sentra', n % 2 = 0, n, 499.99, 'USD', 649.5, 'USD'
       FROM generate_series(1, $1::int) AS n`,
      [count, titlePrefix],
    );
  } finally {
    await db.end();
  }
}

export async function countBikes(databaseUrl: string): Promise<number> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM bikes');
    return Number(rows[0].n);
  } finally {
    await db.end();
  }
}

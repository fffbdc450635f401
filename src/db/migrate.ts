import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { catalogIdentity } from './catalog-identity';
import { ROLE_SETTINGS } from './pool';

/**
 * Applies the committed Prisma migrations (prisma/migrations/<name>/migration.sql) the way
 * `prisma migrate deploy` does, recording them in Prisma's own `_prisma_migrations` table, so
 * that the Prisma CLI agrees with this runner wherever its schema engine is installed. (The CLI's
 * migrate commands need a binary that cannot be downloaded on every machine this runs on.)
 */

export const MIGRATIONS_DIR = path.join(__dirname, '..', '..', 'prisma', 'migrations');

/** The advisory lock key `prisma migrate` itself takes, so the CLI and this runner exclude each other. */
const PRISMA_MIGRATE_LOCK_KEY = 72707369;

// Prisma's own definition of its bookkeeping table.
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Runs `work` in a transaction that first takes Prisma's migration lock, transaction-level: the
 * lock lives and dies with the transaction, so it holds on the very server connection that does
 * the work, whether DATABASE_URL is PostgreSQL itself or a pooler in transaction mode (where a
 * session-level lock would stay behind on whichever server connection the pooler lent). Neither
 * a statement_timeout nor a lock_timeout the role may carry applies inside: a migration, or the
 * wait for another instance's, must not be cut short.
 */
async function underMigrationLock<T>(client: Client, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SET LOCAL lock_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    // On a broken connection the rollback fails too; the error worth reporting is the first.
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** What `_prisma_migrations` says now, refused when Prisma recorded a migration that never finished. */
async function appliedMigrations(client: Client): Promise<Map<string, AppliedRow>> {
  const { rows } = await client.query<AppliedRow>(
    'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"',
  );
  const failed = rows.find((row) => row.finished_at === null && row.rolled_back_at === null);
  if (failed) {
    throw new Error(
      `migration ${failed.migration_name} failed earlier and was not rolled back; ` +
        'fix the database by hand, then mark it with `prisma migrate resolve`',
    );
  }
  return new Map(
    rows
      .filter((row) => row.finished_at !== null && row.rolled_back_at === null)
      .map((row) => [row.migration_name, row]),
  );
}

/**
 * Applies the migrations not yet applied; returns their names. Safe to run from many processes at
 * once, through PgBouncer in transaction mode too: each migration is one transaction that takes
 * the lock, reads again what is applied (another instance may have applied it meanwhile), and
 * then applies it and records it, or leaves it. Creating `_prisma_migrations` is such a
 * transaction too.
 */
export async function migrate(
  databaseUrl: string,
  log: (message: string) => void = () => undefined,
  migrations: Migration[] = readMigrations(),
  ServerClient: typeof Client = Client,
): Promise<string[]> {
  const client = new ServerClient({ connectionString: databaseUrl });
  await client.connect();
  try {
    await underMigrationLock(client, () => client.query(CREATE_MIGRATIONS_TABLE));
    const newlyApplied: string[] = [];
    for (const migration of migrations) {
      const applied = await underMigrationLock(client, async () => {
        const done = (await appliedMigrations(client)).get(migration.name);
        if (done) {
          if (done.checksum !== migration.checksum) {
            log(`warning: migration ${migration.name} was edited after it was applied`);
          }
          return false;
        }
        // The whole migration and its record commit together, or not at all.
        const id = randomUUID();
        try {
          await client.query(
            'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())',
            [id, migration.checksum, migration.name],
          );
          await client.query(migration.sql);
          await client.query(
            'UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1',
            [id],
          );
        } catch (err) {
          throw new Error(`migration ${migration.name} failed: ${(err as Error).message}`, { cause: err });
        }
        return true;
      });
      if (applied) {
        log(`applied migration ${migration.name}`);
        newlyApplied.push(migration.name);
      }
    }
    return newlyApplied;
  } finally {
    await client.end();
  }
}

/** The committed migrations not yet recorded as applied (none when the database is ready). */
export async function pendingMigrations(
  client: Pick<Client, 'query'>,
  migrations = readMigrations(),
): Promise<string[]> {
  const { rows } = await client.query<{ migration_name: string }>(
    `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  const applied = new Set(rows.map((row) => row.migration_name));
  return migrations.map((m) => m.name).filter((name) => !applied.has(name));
}

/** The role a connection string logs in as. */
function roleOf(url: string): string {
  return decodeURIComponent(new URL(url).username);
}

/**
 * The service's role, as the tables' owner after every migration. When it is not the role that
 * migrates (the embedded database, the compose stacks), it may read and change the catalog's
 * tables and read which migrations are applied: nothing more. Whichever it is, PostgreSQL cuts
 * its statements off itself (ROLE_SETTINGS), in this database only; a migrator without the right
 * to set them (neither superuser nor CREATEROLE nor the role itself) leaves them to the operator.
 */
async function configureServiceRole(client: Client, role: string, log: (message: string) => void): Promise<void> {
  const name = client.escapeIdentifier(role);
  const { rows } = await client.query<{ me: string; db: string; version: number }>(
    `SELECT current_user AS me, current_database() AS db, current_setting('server_version_num')::int AS version`,
  );
  const [{ me, db, version }] = rows;
  if (role !== me) {
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${name}`);
    await client.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${name}`);
    await client.query(`REVOKE INSERT, UPDATE, DELETE ON "_prisma_migrations" FROM ${name}`);
  }
  const settings = Object.entries(ROLE_SETTINGS).filter(([, { since }]) => version >= since);
  try {
    await client.query('SAVEPOINT role_settings');
    for (const [setting, { value }] of settings) {
      await client.query(
        `ALTER ROLE ${name} IN DATABASE ${client.escapeIdentifier(db)} SET ${setting} = ${client.escapeLiteral(value)}`,
      );
    }
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err; // insufficient privilege
    await client.query('ROLLBACK TO SAVEPOINT role_settings');
    log(
      `warning: cannot set ${settings.map(([setting, { value }]) => `${setting} = '${value}'`).join(', ')} ` +
        `for role ${role}; set them with ALTER ROLE, so that PostgreSQL cuts off a statement before the service gives up on it`,
    );
  }
}

/**
 * What every start and every tool does first: the pending migrations, then, in one transaction
 * under the migrations' lock (instances starting at once would collide on the same catalog
 * rows), the service role's rights and settings and the catalog's identity (made anew on a
 * copy). Returns what was applied, and that identity.
 */
export async function prepareDatabase(
  server: { directUrl: string; url: string; ServerClient: typeof Client },
  log: (message: string) => void,
): Promise<{ applied: string[]; catalogId: string }> {
  const applied = await migrate(server.directUrl, log, readMigrations(), server.ServerClient);
  const client = new server.ServerClient({ connectionString: server.directUrl });
  await client.connect();
  try {
    const catalogId = await underMigrationLock(client, async () => {
      await configureServiceRole(client, roleOf(server.url), log);
      return catalogIdentity(client);
    });
    return { applied, catalogId };
  } finally {
    await client.end();
  }
}

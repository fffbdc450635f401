import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from 'pg';
import { GuardedClient } from '../pg-client';
import { ROLE_SETTINGS } from './pool';

/**
 * Applies the committed Prisma migrations (prisma/migrations/<name>/migration.sql) the way
 * `prisma migrate deploy` does, recording them in Prisma's own `_prisma_migrations` table, so
 * that the Prisma CLI agrees with this runner wherever its schema engine is installed. (The CLI's
 * migrate commands need a binary that cannot be downloaded on every machine this runs on.)
 */

const MIGRATIONS_DIR = path.join(__dirname, '..', '..', 'prisma', 'migrations');

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
 * @internal The tests migrate their databases with it; the service and the tools call prepareToServe or prepareDatabase.
 */
export async function migrate(
  databaseUrl: string,
  log: (message: string) => void = () => undefined,
  migrations: Migration[] = readMigrations(),
  ServerClient: typeof Client = GuardedClient,
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
 * What the service's role may do, table by table, when it is not the role that migrates
 * (docs/reference/running-the-service.md#the-services-role): read and write the catalog and its own bookkeeping of
 * requests, read the rest. It cannot change the schema, the triggers, the version counters
 * (kept by triggers that run with their owner's rights) or the catalog's identity. Sequences:
 * USAGE, for the defaults that draw from them, not the right to set them back.
 */
const SERVICE_ROLE_RIGHTS: Record<string, string> = {
  bikes: 'SELECT, INSERT, UPDATE, DELETE',
  idempotency_keys: 'SELECT, INSERT, UPDATE, DELETE',
  rate_limits: 'SELECT, INSERT, UPDATE, DELETE',
  webhook_subscriptions: 'SELECT, INSERT, UPDATE, DELETE',
  webhook_deliveries: 'SELECT, INSERT, UPDATE, DELETE',
  // Issued, used and revoked by the service's role (npm run keys, POST /api/user), never deleted.
  api_keys: 'SELECT, INSERT, UPDATE',
  catalog_version_slots: 'SELECT',
  catalog_identity: 'SELECT',
  bike_changes: 'SELECT',
  bike_changes_pruning: 'SELECT',
  bike_words: 'SELECT',
  _prisma_migrations: 'SELECT',
};

/** Functions the service's role may run: pruning the change log, as the log's owner. */
const SERVICE_ROLE_FUNCTIONS = ['prune_bike_changes(timestamptz, integer)'];

/**
 * The service's role, after every migration: when it is not the role that migrates (the
 * embedded database, the compose stacks), it gets exactly SERVICE_ROLE_RIGHTS. Whichever it is,
 * PostgreSQL cuts its statements off itself (ROLE_SETTINGS), in this database only; a migrator
 * without the right to set them (neither superuser nor CREATEROLE nor the role itself) leaves them
 * to the operator, and says so.
 */
async function configureServiceRole(client: Client, role: string, log: (message: string) => void): Promise<void> {
  const name = client.escapeIdentifier(role);
  const { rows } = await client.query<{ me: string; db: string; version: number }>(
    `SELECT current_user AS me, current_database() AS db, current_setting('server_version_num')::int AS version`,
  );
  const [{ me, db, version }] = rows;
  if (role !== me) {
    await client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${name}`);
    await client.query(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${name}`);
    for (const [table, rights] of Object.entries(SERVICE_ROLE_RIGHTS)) {
      await client.query(`GRANT ${rights} ON ${client.escapeIdentifier(table)} TO ${name}`);
    }
    await client.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ${name}`);
    for (const signature of SERVICE_ROLE_FUNCTIONS)
      await client.query(`GRANT EXECUTE ON FUNCTION ${signature} TO ${name}`);
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
        `for role ${role}; set them with ALTER ROLE, so that PostgreSQL cuts off a statement before the service ` +
        'gives up on it (until then more failed writes answer 504, outcome unknown, instead of 503)',
    );
  }
}

/**
/**
 * The triggers that keep the catalog's versions (and its change log) fire whoever writes: ENABLE
 * ALWAYS, as the migrations made them. One the tables' owner switched off, or on again with plain
 * ENABLE (which leaves it off for replication sessions), is put back by a role that may, and said
 * (docs/reference/caching-and-conditions.md#conditional-get): until then the lists answer without an ETag.
 */
async function triggersAlwaysOn(client: Client, log: (message: string) => void): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT tgname AS name FROM pg_trigger
      WHERE tgrelid = 'bikes'::regclass AND tgname LIKE 'bikes\\_%' AND tgenabled <> 'A'`,
  );
  for (const { name } of rows) {
    try {
      await client.query('SAVEPOINT trigger_on');
      await client.query(`ALTER TABLE bikes ENABLE ALWAYS TRIGGER ${client.escapeIdentifier(name)}`);
      log(`warning: trigger ${name} on bikes was not always on; it is again`);
    } catch (err) {
      if (!insufficientPrivilege(err)) throw err;
      await client.query('ROLLBACK TO SAVEPOINT trigger_on');
      log(`warning: trigger ${name} on bikes is not always on; run npm run db:migrate to put it back`);
    }
  }
}

/** How long the change log keeps the feed, and the history the feed's retention has passed (null: for ever). */
export interface Retention {
  changesRetentionDays: number;
  historyRetentionDays: number | null;
}

/**
 * The change log's retentions, CHANGES_RETENTION_DAYS and HISTORY_RETENTION_DAYS
 * (docs/reference/browse-and-sync.md#the-change-feed), kept where prune_bike_changes reads them, so that no
 * cut-off its caller gives prunes within them. Only a role that may write them sets them: the one
 * that migrates. A service role that may only read them keeps them as they are, and says so when
 * it asks for less.
 */
async function keepRetention(client: Client, retention: Retention, log: (message: string) => void): Promise<void> {
  const days = retention.changesRetentionDays;
  try {
    await client.query('SAVEPOINT retention');
    await client.query(
      `UPDATE bike_changes_pruning SET (retention_days, history_retention_days) = ($1, $2)
        WHERE (retention_days, history_retention_days) IS DISTINCT FROM ($1, $2)`,
      [days, retention.historyRetentionDays],
    );
  } catch (err) {
    if (!insufficientPrivilege(err)) throw err;
    await client.query('ROLLBACK TO SAVEPOINT retention');
    const { rows } = await client.query<{ kept: number }>('SELECT retention_days AS kept FROM bike_changes_pruning');
    if (rows[0].kept > days) {
      log(
        `warning: CHANGES_RETENTION_DAYS is ${days}, but the change log keeps ${rows[0].kept} days, as the role ` +
          `that migrates set it; run npm run db:migrate with CHANGES_RETENTION_DAYS=${days} to keep less`,
      );
    }
  }
}

/**
 * The role a query runs as owns the catalog's tables, or is a superuser, and so could change or
 * drop them (docs/reference/running-the-service.md#when-the-service-role-owns-the-catalog); its name either way.
 */
export async function roleMayChangeSchema(db: Pick<Client, 'query'>): Promise<{ role: string; may: boolean }> {
  const { rows } = await db.query<{ role: string; may: boolean }>(
    `SELECT current_user AS role, pg_has_role(current_user, relowner, 'USAGE') AS may
       FROM pg_class WHERE oid = 'public.bikes'::regclass`,
  );
  return rows[0];
}

/** 42501, insufficient_privilege, from PostgreSQL itself or beneath the error of the migration it refused. */
function insufficientPrivilege(err: unknown): boolean {
  for (let cause = err; cause instanceof Error; cause = cause.cause) {
    if ('code' in cause && cause.code === '42501') return true;
  }
  return false;
}

/** The URLs a start connects to, and the pg Client to connect with (src/postgres/database-server.ts). */
interface Server {
  directUrl: string;
  url: string;
  ServerClient: typeof Client;
}

/**
 * What every start and every tool does first: the pending migrations, then the service role's
 * rights and settings, the triggers on and the change log's retention, CHANGES_RETENTION_DAYS
 * (serviceRoleAndTriggers). Returns what was applied.
 */
export async function prepareDatabase(
  server: Server,
  retention: Retention,
  log: (message: string) => void,
): Promise<{ applied: string[] }> {
  const applied = await migrate(server.directUrl, log, readMigrations(), server.ServerClient);
  await serviceRoleAndTriggers(server, retention, log);
  return { applied };
}

/**
 * In one transaction under the migrations' lock (instances starting at once would collide on the
 * same grants), as the role that migrates: the service role's rights and settings
 * (configureServiceRole; as the service role itself, its settings only), the triggers on, and the
 * retention (keepRetention).
 */
async function serviceRoleAndTriggers(server: Server, retention: Retention, log: (message: string) => void) {
  const client = new server.ServerClient({ connectionString: server.directUrl });
  await client.connect();
  try {
    await underMigrationLock(client, async () => {
      await configureServiceRole(client, roleOf(server.url), log);
      await triggersAlwaysOn(client, log);
      await keepRetention(client, retention, log);
    });
  } finally {
    await client.end();
  }
}

/** The committed migrations not applied at the server's URL: all of them where nothing was ever migrated. */
async function pendingAt(server: Server): Promise<string[]> {
  const client = new server.ServerClient({ connectionString: server.url });
  await client.connect();
  try {
    return await pendingMigrations(client);
  } catch (err) {
    // 42P01: no _prisma_migrations table.
    if (err instanceof Error && 'code' in err && err.code === '42P01') return readMigrations().map((m) => m.name);
    throw err;
  } finally {
    await client.end();
  }
}

/**
 * What a start does before it serves (the service, and db:seed).
 * With a role of its own for migrations (DATABASE_DIRECT_URL, or the embedded database's
 * superuser), prepareDatabase, as `npm run db:migrate` does. With DATABASE_URL alone, whose role
 * may be one that cannot change the schema (the compose stacks' api), it first reads, as that
 * role, what is pending: nothing, and it migrates nothing and grants nothing; something, and it
 * migrates as that role, which must then own the schema, or the start fails with one line that
 * says what to run (docs/reference/running-the-service.md#starting-without-a-migrating-role). Either way the role
 * then sets its own settings (ROLE_SETTINGS, which a 5xx's meaning rests on).
 */
export async function prepareToServe(
  server: Server,
  retention: Retention,
  log: (message: string) => void,
): Promise<void> {
  if (server.directUrl !== server.url) {
    await prepareDatabase(server, retention, log);
    return;
  }
  const pending = await pendingAt(server);
  if (pending.length > 0) {
    try {
      await migrate(server.url, log, readMigrations(), server.ServerClient);
    } catch (err) {
      if (!insufficientPrivilege(err)) throw err;
      throw new Error(
        `${pending.length === 1 ? '1 migration is' : `${pending.length} migrations are`} pending ` +
          `(${pending.join(', ')}), and DATABASE_URL's role may not change the schema: apply them with ` +
          '`npm run db:migrate` (in the compose stacks, the `migrate` service) with DATABASE_DIRECT_URL set ' +
          'to a role that may',
        { cause: err },
      );
    }
  }
  await serviceRoleAndTriggers(server, retention, log);
}

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { migrate, readMigrations } from '../../src/db/migrate';
import { client, issueToken, newBike } from '../support/bikes';
import { createEmptyTestDatabase, createTestRole } from '../support/databases';
import { launchService, spawnService, type ServiceProcess } from '../support/process';
import { type LogPosition, pruneUntilPast } from '../support/pruning';
import { PATIENCE_MS } from '../support/wait';

/**
 * The role the service's queries run as (DATABASE_URL's), at start-up: with no role of its own
 * for migrations it migrates only what is pending, and says so when it may not; and it warns when
 * its queries could change the schema (docs/reference/running-the-service.md#starting-without-a-migrating-role,
 * docs/reference/running-the-service.md#when-the-service-role-owns-the-catalog).
 */

const ROOT = path.join(__dirname, '..', '..');
const jwtSecret = () => randomBytes(32).toString('base64url');

async function query<T extends object>(url: string, sql: string): Promise<T[]> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<T>(sql)).rows;
  } finally {
    await db.end();
  }
}

/** Who may do what to the catalog's tables, and which migrations are recorded: what a start must not change. */
const rightsAndMigrations = async (url: string) => ({
  acls: await query(
    url,
    `SELECT relname, relowner::regrole::text, relacl::text FROM pg_class
                           WHERE relnamespace = 'public'::regnamespace ORDER BY relname`,
  ),
  migrations: await query(url, 'SELECT id, migration_name, finished_at FROM "_prisma_migrations" ORDER BY id'),
});

/** `npm run db:migrate`'s entry point, with this environment. */
function migrateCli(env: Record<string, string>): Promise<unknown> {
  return promisify(execFile)(process.execPath, [path.join(ROOT, 'dist', 'cli', 'migrate.js')], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', ...env },
    timeout: PATIENCE_MS,
  });
}

const SCHEMA_WARNING = "the service's queries run as a role that owns the catalog's tables or is a superuser";

/** The service's JSON log lines at warn level, or above, that say its role may change the schema. */
const schemaWarnings = (service: ServiceProcess) =>
  service
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; role?: string })
    .filter((entry) => entry.level >= 40 && entry.msg.startsWith(SCHEMA_WARNING));

async function stopped(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM');
  expect((await service.exited).code).toBe(0);
}

describe('with DATABASE_URL alone, as a role that may not change the schema', () => {
  it('with nothing pending (migrated by `npm run db:migrate` with DATABASE_DIRECT_URL), starts without migrating or granting anything, serves, and does not warn', async () => {
    const direct = await createEmptyTestDatabase();
    const role = await createTestRole();
    await migrateCli({ DATABASE_URL: role.at(direct), DATABASE_DIRECT_URL: direct });
    const before = await rightsAndMigrations(direct);

    const service = await spawnService({ DATABASE_URL: role.at(direct), JWT_SECRET: jwtSecret() });
    try {
      expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(200);
      const api = client(service.baseUrl, await issueToken(service.baseUrl));
      const created = await api.create(newBike());
      expect(await (await api.request('GET', `/bikes/${created.id}`)).json()).toEqual(created);
      expect(schemaWarnings(service)).toEqual([]);
    } finally {
      await stopped(service);
    }
    expect(await rightsAndMigrations(direct)).toEqual(before);
  });

  it('keeps the change log’s retention as `npm run db:migrate` set it, and says so when its own CHANGES_RETENTION_DAYS is shorter', async () => {
    const direct = await createEmptyTestDatabase();
    const role = await createTestRole();
    await migrateCli({ DATABASE_URL: role.at(direct), DATABASE_DIRECT_URL: direct, CHANGES_RETENTION_DAYS: '7' });
    const retention = () => query(direct, 'SELECT retention_days FROM bike_changes_pruning');
    expect(await retention()).toEqual([{ retention_days: 7 }]);

    const service = await spawnService({
      DATABASE_URL: role.at(direct),
      JWT_SECRET: jwtSecret(),
      CHANGES_RETENTION_DAYS: '3',
    });
    try {
      expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(200);
      expect(service.output()).toContain(
        'warning: CHANGES_RETENTION_DAYS is 3, but the change log keeps 7 days, as the role that migrates set it; ' +
          'run npm run db:migrate with CHANGES_RETENTION_DAYS=3 to keep less',
      );
    } finally {
      await stopped(service);
    }
    expect(await retention()).toEqual([{ retention_days: 7 }]);
  });

  it('with a migration pending, exits 1 with one line naming it and what to run, and changes nothing', async () => {
    const direct = await createEmptyTestDatabase();
    const role = await createTestRole();
    const migrations = readMigrations();
    const last = migrations[migrations.length - 1].name;
    // A database one release behind, whose service role may read which migrations are applied.
    await migrate(direct, () => undefined, migrations.slice(0, -1));
    await query(direct, `GRANT SELECT ON "_prisma_migrations" TO ${role.name}`);
    const before = await rightsAndMigrations(direct);

    const service = await launchService({ DATABASE_URL: role.at(direct), JWT_SECRET: jwtSecret() });
    expect(await service.exited).toEqual({ code: 1, signal: null });
    expect(service.errors()).toBe(
      `bike catalog failed to start: 1 migration is pending (${last}), and DATABASE_URL's role may not change ` +
        'the schema: apply them with `npm run db:migrate` (in the compose stacks, the `migrate` service) with ' +
        'DATABASE_DIRECT_URL set to a role that may\n',
    );
    expect(await rightsAndMigrations(direct)).toEqual(before);
  });
});

describe('the warning that the service’s queries could change the schema', () => {
  it('when DATABASE_URL’s role owns the catalog’s tables (it migrated them at start), logs it once, naming the role and where to read why', async () => {
    const owner = await createTestRole();
    const own = owner.at(await createEmptyTestDatabase(owner.name));
    const service = await spawnService({ DATABASE_URL: own, JWT_SECRET: jwtSecret() });
    try {
      expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(200);
      expect(schemaWarnings(service)).toEqual([
        expect.objectContaining({
          level: 40,
          role: owner.name,
          msg:
            `${SCHEMA_WARNING}, so they can change or drop the schema; give DATABASE_URL a role of its own and ` +
            'DATABASE_DIRECT_URL the one that migrates (docs/reference/running-the-service.md#when-the-service-role-owns-the-catalog)',
        }),
      ]);
    } finally {
      await stopped(service);
    }
  });

  it('when DATABASE_URL’s role is one of its own and DATABASE_DIRECT_URL migrates, does not log it', async () => {
    const direct = await createEmptyTestDatabase();
    const role = await createTestRole();
    const service = await spawnService({
      DATABASE_URL: role.at(direct),
      DATABASE_DIRECT_URL: direct,
      JWT_SECRET: jwtSecret(),
    });
    try {
      expect((await fetch(`${service.baseUrl}/readyz`)).status).toBe(200);
      expect(schemaWarnings(service)).toEqual([]);
    } finally {
      await stopped(service);
    }
  });
});

describe("the service's role, migrated with a role of its own (docs/reference/running-the-service.md#the-services-role)", () => {
  let direct: string;
  let asService: Client;
  let serviceUrl: string;
  beforeAll(async () => {
    direct = await createEmptyTestDatabase();
    const role = await createTestRole();
    await migrateCli({ DATABASE_URL: role.at(direct), DATABASE_DIRECT_URL: direct });
    serviceUrl = role.at(direct);
    asService = new Client({ connectionString: serviceUrl });
    await asService.connect();
  });
  afterAll(() => asService.end());

  const refused = async (sql: string) => {
    const error = await asService.query(sql).then(
      () => undefined,
      (err: { code?: string }) => err.code,
    );
    // 42501: insufficient privilege.
    return { sql, error };
  };

  it('cannot change the version bookkeeping, the change log, the identity, the triggers or the schema', async () => {
    for (const sql of [
      'UPDATE catalog_version_slots SET version = 0',
      'DELETE FROM catalog_version_slots',
      'DELETE FROM bike_changes',
      "UPDATE bike_changes SET kind = 'delete'",
      "UPDATE bike_changes SET changed_by = 'someone else', changed_by_proven = true",
      'CREATE OR REPLACE FUNCTION bike_change_writer(OUT changed_by text, OUT changed_by_proven boolean, OUT changed_by_issuer text) LANGUAGE sql AS $$ SELECT NULL::text, true, NULL::text $$',
      "INSERT INTO bike_changes (txid, writer_txid, kind, bike_id) VALUES (1, 1, 'delete', gen_random_uuid())",
      'UPDATE bike_changes_pruning SET horizon_txid = 0',
      'UPDATE bike_changes_pruning SET retention_days = 1',
      "SELECT setval('bike_changes_change_id_seq', 1)",
      'UPDATE catalog_identity SET catalog_id = gen_random_uuid()',
      "SELECT setval('bikes_version_seq', 1)",
      'ALTER TABLE bikes DISABLE TRIGGER USER',
      'DROP TABLE bikes',
      'CREATE TABLE planted (id int)',
      'DELETE FROM "_prisma_migrations"',
      "INSERT INTO bike_words (word) VALUES ('planted')",
      'DELETE FROM bike_words',
    ]) {
      expect(await refused(sql)).toEqual({ sql, error: '42501' });
    }
  });

  it('writes bikes, and its writes still count in the bookkeeping it may only read', async () => {
    const sum = async () =>
      Number(
        (await asService.query<{ sum: string }>('SELECT sum(version) AS sum FROM catalog_version_slots')).rows[0].sum,
      );
    const before = await sum();
    await asService.query(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       VALUES (gen_random_uuid(), 'h', 't', 'p', 'c', 'd', 'v', true, 1, 1, 'EUR', 2, 'EUR')`,
    );
    expect(await sum()).toBeGreaterThan(before);
  });

  it("searches, and its writes add their words to the search's list it may only read (docs/reference/browse-and-sync.md#a-shoppers-search)", async () => {
    await asService.query(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       VALUES (gen_random_uuid(), 'h', 'Zweirad Élan', 'p', 'c', 'd', 'v', true, 1, 1, 'EUR', 2, 'EUR')`,
    );
    const { rows } = await asService.query<{ title: string }>(
      `SELECT title FROM bikes WHERE search_words @@ (bike_search_queries('zweirat elan'))[8]`,
    );
    expect(rows).toEqual([{ title: 'Zweirad Élan' }]);
  });

  it('logs its writes in the change log it may only read, and prunes the log only through the function made for it', async () => {
    const { rows } = await asService.query<{ id: string }>(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       VALUES (gen_random_uuid(), 'h2', 't', 'p', 'c', 'd', 'v', true, 1, 1, 'EUR', 2, 'EUR') RETURNING id`,
    );
    await asService.query('DELETE FROM bikes WHERE id = $1', [rows[0].id]);
    const logged = await asService.query(
      `SELECT kind, changed_by, changed_by_proven FROM bike_changes WHERE bike_id = $1 ORDER BY txid, change_id`,
      [rows[0].id],
    );
    // By SQL, so the writer is the role (docs/reference/callers.md#who-changed-what).
    const writer = { changed_by: `sql:${asService.user}`, changed_by_proven: true };
    expect(logged.rows).toEqual([
      { kind: 'create', ...writer },
      { kind: 'delete', ...writer },
    ]);
    const pruned = await asService.query(`SELECT * FROM prune_bike_changes(now() - interval '30 days', 100)`);
    expect(pruned.rows).toHaveLength(1);
  });

  it("cannot take the log's or the bookkeeping's place with temporary tables of its own: its writes are logged and counted in the schema's", async () => {
    const session = new Client({ connectionString: serviceUrl });
    await session.connect();
    try {
      for (const sql of [
        'CREATE TEMP TABLE bike_changes (LIKE public.bike_changes INCLUDING DEFAULTS)',
        'CREATE TEMP TABLE catalog_version_slots (LIKE public.catalog_version_slots INCLUDING DEFAULTS)',
        'INSERT INTO catalog_version_slots SELECT * FROM public.catalog_version_slots',
        'CREATE TEMP SEQUENCE bikes_version_seq',
      ]) {
        await session.query(sql);
      }
      const counted = async () =>
        (await session.query<{ sum: string }>('SELECT sum(version)::text AS sum FROM public.catalog_version_slots'))
          .rows[0].sum;
      const before = await counted();
      const { rows } = await session.query<{ id: string; version: string }>(
        `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
           total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
         VALUES (gen_random_uuid(), 'h3', 't', 'p', 'c', 'd', 'v', true, 1, 1, 'EUR', 2, 'EUR') RETURNING id, version::text`,
      );
      await session.query(`UPDATE bikes SET title = 'again' WHERE id = $1`, [rows[0].id]);
      const logged = await session.query(
        'SELECT kind FROM public.bike_changes WHERE bike_id = $1 ORDER BY txid, change_id',
        [rows[0].id],
      );
      expect(logged.rows.map((row) => row.kind)).toEqual(['create', 'update']);
      expect((await session.query('SELECT count(*)::int AS n FROM pg_temp.bike_changes')).rows).toEqual([{ n: 0 }]);
      expect(await counted()).not.toBe(before);
      // The update's version came from the schema's sequence, as the insert's did: not 1 from the temporary one.
      const {
        rows: [after],
      } = await session.query<{ version: string }>('SELECT version::text FROM bikes WHERE id = $1', [rows[0].id]);
      expect(BigInt(after.version)).toBeGreaterThan(BigInt(rows[0].version));
    } finally {
      await session.end();
    }
  });

  it('prunes through that function only what the retention lets go, whatever cut-off it gives', async () => {
    const changesOf = async (id: string) =>
      (
        await asService.query<LogPosition & { kind: string; total_inventory: number }>(
          'SELECT txid, change_id, kind, total_inventory FROM bike_changes WHERE bike_id = $1 ORDER BY txid, change_id',
          [id],
        )
      ).rows;
    const { rows } = await asService.query<{ id: string }>(
      `INSERT INTO bikes (id, handle, title, product_type, created_at, description, vendor, available_for_sale,
         total_inventory, min_price_amount, min_price_currency_code, max_price_amount, max_price_currency_code)
       VALUES (gen_random_uuid(), 'h3', 't', 'p', 'c', 'd', 'v', true, 1, 1, 'EUR', 2, 'EUR') RETURNING id`,
    );
    const { id } = rows[0];
    await asService.query('UPDATE bikes SET total_inventory = 2 WHERE id = $1', [id]);
    // Every change so far is 31 days old, past the retention (30 days); then one more, within it.
    await query(direct, `UPDATE bike_changes SET changed_at = changed_at - interval '31 days'`);
    await asService.query('UPDATE bikes SET total_inventory = 3 WHERE id = $1', [id]);
    const [, aged] = await changesOf(id);

    // With the history kept no longer than the feed (HISTORY_RETENTION_DAYS=30), a cut-off in the
    // future, which would prune every change there is: pruning stops at the retention.
    await query(direct, 'UPDATE bike_changes_pruning SET history_retention_days = 30');
    await pruneUntilPast(asService, `now() + interval '1 day'`, aged);
    const { rows: horizon } = await asService.query<LogPosition>(
      'SELECT horizon_txid AS txid, horizon_change_id AS change_id FROM bike_changes_pruning',
    );
    expect(horizon).toEqual([{ txid: aged.txid, change_id: aged.change_id }]);
    // The create past the retention went (superseded); the update within it stays, and so does
    // the aged one it would have superseded.
    expect((await changesOf(id)).map((change) => [change.kind, change.total_inventory])).toEqual([
      ['update', 2],
      ['update', 3],
    ]);
  });
});

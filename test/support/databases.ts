import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export const TEMPLATE_DATABASE = 'bike_catalog_test_template';

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

function adminUrl(): string {
  const url = process.env.TEST_ADMIN_DATABASE_URL;
  if (!url) throw new Error('TEST_ADMIN_DATABASE_URL is not set: run the tests through jest (npm test)');
  return url;
}

async function asAdmin(sql: string): Promise<void> {
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

async function createDatabase({ template, owner }: { template?: string; owner?: string } = {}): Promise<string> {
  const name = `bike_catalog_test_${randomBytes(6).toString('hex')}`;
  await asAdmin(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}${owner ? ` OWNER ${owner}` : ''}`);
  return withDatabase(adminUrl(), name);
}

/** A fresh, migrated database of its own, so a test file can count on exactly the rows it made. */
export const createTestDatabase = () => createDatabase({ template: TEMPLATE_DATABASE });

/** A fresh database with nothing in it, not even the migrations; owned by `owner` when given. */
export const createEmptyTestDatabase = (owner?: string) => createDatabase({ owner });

export interface TestRole {
  name: string;
  /** A test database's connection string `url`, logging in as this role instead. */
  at(url: string): string;
}

/**
 * A login role of its own on the test server, as an operator would make for the service: no
 * superuser, no CREATEROLE or CREATEDB, a random password. (The test server's admin must be
 * allowed to create roles: testcontainers' and the embedded server's are superusers.)
 */
export async function createTestRole(): Promise<TestRole> {
  const name = `bike_catalog_test_role_${randomBytes(6).toString('hex')}`;
  const password = randomBytes(16).toString('hex');
  await asAdmin(`CREATE ROLE ${name} LOGIN PASSWORD '${password}'`);
  return {
    name,
    at(url) {
      const parsed = new URL(url);
      parsed.username = name;
      parsed.password = password;
      return parsed.toString();
    },
  };
}

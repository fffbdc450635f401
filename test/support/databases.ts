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

async function createDatabase(template?: string): Promise<string> {
  const name = `bike_catalog_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  } finally {
    await admin.end();
  }
  return withDatabase(adminUrl(), name);
}

/** A fresh, migrated database of its own, so a test file can count on exactly the rows it made. */
export const createTestDatabase = () => createDatabase(TEMPLATE_DATABASE);

/** A fresh database with nothing in it, not even the migrations. */
export const createEmptyTestDatabase = () => createDatabase();

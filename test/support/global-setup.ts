import { Client } from 'pg';
import { migrate } from '../../src/db/migrate';
import { startTestPostgresServer } from './postgres-server';
import { TEMPLATE_DATABASE, withDatabase } from './databases';

export default async function globalSetup(): Promise<void> {
  const server = await startTestPostgresServer();
  console.log(`\ntest PostgreSQL: ${server.description}`);
  (globalThis as Record<string, unknown>).__TEST_POSTGRES__ = server;
  // Workers start after this and inherit the environment.
  process.env.TEST_ADMIN_DATABASE_URL = server.adminUrl;

  // Migrate once into a template; each test file clones it (CREATE DATABASE ... TEMPLATE).
  const admin = new Client({ connectionString: server.adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE}`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  } finally {
    await admin.end();
  }
  await migrate(withDatabase(server.adminUrl, TEMPLATE_DATABASE));
}

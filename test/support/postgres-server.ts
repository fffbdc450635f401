import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { startEmbeddedPostgres } from '../../src/postgres/embedded-postgres';
import { tempDataDir } from './temp-dir';

/**
 * The PostgreSQL server for a test run: TEST_DATABASE_URL when set, otherwise a container from
 * testcontainers when a container engine answers (POSTGRES_IMAGE, postgres:18-alpine by default;
 * deploy/podman/ makes podman one, with a stand-in image), otherwise an embedded PostgreSQL in a
 * temporary directory.
 */
export interface TestPostgresServer {
  /** A connection string with the right to create databases. */
  adminUrl: string;
  description: string;
  stop(): Promise<void>;
}

async function containerRuntimeAvailable(): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await Promise.race([
      getContainerRuntimeClient(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), 5_000))),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export async function startTestPostgresServer(): Promise<TestPostgresServer> {
  const given = process.env.TEST_DATABASE_URL;
  if (given) return { adminUrl: given, description: 'TEST_DATABASE_URL', stop: async () => undefined };

  if (await containerRuntimeAvailable()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const image = process.env.POSTGRES_IMAGE || 'postgres:18-alpine';
    // A password of its own, not the image's default ("test", also the user's name and a word the
    // logs say): the tests that a secret never reaches the logs then mean something.
    const container = await new PostgreSqlContainer(image).withPassword(randomBytes(24).toString('hex')).start();
    return {
      adminUrl: container.getConnectionUri(),
      description: `testcontainers ${image}`,
      stop: async () => void (await container.stop()),
    };
  }

  const dataDir = tempDataDir('test');
  const embedded = await startEmbeddedPostgres({ dataDir, database: 'postgres', ephemeral: true });
  return {
    adminUrl: embedded.adminUrl,
    description: 'embedded PostgreSQL',
    async stop() {
      await embedded.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

import type { TestPostgresServer } from './postgres-server';

export default async function globalTeardown(): Promise<void> {
  const server = (globalThis as Record<string, unknown>).__TEST_POSTGRES__ as TestPostgresServer | undefined;
  await server?.stop();
}

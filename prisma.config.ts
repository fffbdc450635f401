import { defineConfig } from 'prisma/config';

// The Prisma CLI reads the database from DATABASE_URL; the service itself never reads this file.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? '' },
});

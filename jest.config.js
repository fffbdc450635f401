/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  ...require('./test/support/jest-transform'),
  // One PostgreSQL server for the whole run; each test file gets its own database in it.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Every answer a test file receives is judged against /openapi.json (test/support/conformance.ts).
  setupFilesAfterEnv: ['<rootDir>/test/support/conformance-setup.ts'],
  testTimeout: 30_000,
  maxWorkers: 2,
};

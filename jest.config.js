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
  // Only a guard against a test that hangs: far longer than any test takes on a loaded machine, and
  // longer than the waits in it (PATIENCE_MS, test/support/wait.ts). A test asserts what the service
  // guarantees, never how fast this machine is.
  testTimeout: 600_000,
  maxWorkers: 2,
};

/**
 * `npm run test:resilience`: hostile input, token attacks, database outages, crashes, shutdowns,
 * limits and races. These tests start and kill PostgreSQL servers and service processes, so
 * they run one file at a time, apart from `npm test`
 * (their files end in .resilience.ts, which the main configuration does not pick up).
 */
/** @type {import('jest').Config} */
module.exports = {
  rootDir: '../..',
  testEnvironment: 'node',
  roots: ['<rootDir>/test/resilience'],
  testMatch: ['**/*.resilience.ts'],
  ...require('../support/jest-transform'),
  // The same PostgreSQL server for the run as `npm test` uses, for the in-process services.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Every answer a test file receives is judged against /openapi.json (test/support/conformance.ts).
  setupFilesAfterEnv: ['<rootDir>/test/support/conformance-setup.ts'],
  // A guard against a hang only, as in jest.config.js; these tests do more, so it is longer.
  testTimeout: 900_000,
  maxWorkers: 1,
};

/**
 * npm run test:browser: the docs page in a real headless Chromium. Apart from `npm test`
 * because it needs Debian's chromium (test/browser/ensure-chromium.sh installs it).
 * @type {import('jest').Config}
 */
module.exports = {
  rootDir: '../..',
  testEnvironment: 'node',
  roots: ['<rootDir>/test/browser'],
  testMatch: ['**/*.browser.ts'],
  ...require('../support/jest-transform'),
  // Every answer the page receives is judged against /openapi.json (test/support/conformance.ts).
  setupFilesAfterEnv: ['<rootDir>/test/support/conformance-setup.ts'],
  // A guard against a hang only, as in jest.config.js.
  testTimeout: 600_000,
};

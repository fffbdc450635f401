/**
 * `npm run test:compose`: the compose stacks started for real on a container engine (DOCKER_HOST;
 * deploy/podman/ makes podman one), one stack at a time. Skipped, with the reason, where no
 * engine answers.
 */
/** @type {import('jest').Config} */
module.exports = {
  rootDir: '../..',
  testEnvironment: 'node',
  roots: ['<rootDir>/test/compose'],
  testMatch: ['**/*.compose.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }] },
  // A guard against a hang only, as in jest.config.js: engines and images are slow, so it is long.
  testTimeout: 900_000,
  maxWorkers: 1,
};

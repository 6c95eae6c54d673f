import { defineConfig } from 'vitest/config';

/**
 * Three projects:
 * - unit: pure logic beside the code (shared/, core/, renderer/ with jsdom)
 * - integration: test/integration against the real Redis, RabbitMQ and SQS emulators
 *   (globalSetup starts the SQS emulators if they are not running)
 * - e2e: test/e2e, the built renderer in Chromium against the real services (`npm run e2e`, after `npm run build`)
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['shared/**/*.test.ts', 'core/**/*.test.ts', 'electron/**/*.test.ts', 'renderer/**/*.test.{ts,tsx}'],
          environment: 'node',
          // The property tests (fast-check, up to 60 runs of 1,000-member bodies) take 2–3 s on a
          // quiet 2-core machine and over 5 s (vitest's default) beside the integration tests in CI.
          // Speed is the bench's job (`npm run bench`), not a test timeout's.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

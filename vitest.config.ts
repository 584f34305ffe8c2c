import { defineConfig } from 'vitest/config';

// Temporal's native worker runtime does not like worker_threads: run test files in forked processes.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts', 'engine/test/**/*.test.ts'],
    // one paygate workflow bundle per run, shared by the files that start a worker (test/helpers/temporal.ts)
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 20_000,
    reporters: ['default'],
  },
});

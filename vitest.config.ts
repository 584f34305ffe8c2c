import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that never read DATABASE_URL: no storage at all (rules, parsers, the keyring, the sandbox PGs on
 * their own), or storage they always open themselves whatever DATABASE_URL says (PGlite under a temporary
 * DATA_DIR). Run again with DATABASE_URL set they would repeat the PGlite pass word for word, so CI's Postgres
 * pass (PAYGATE_TEST_PASS=postgres) leaves them out. A file that builds a test app (test/helpers/app.ts), opens a
 * database or hands DATABASE_URL to a child process does not belong here: test/platform/test-passes.test.ts
 * checks that each file listed here imports none of the storage helpers.
 */
export const DATABASE_INDEPENDENT = [
  'test/api/body-limits.test.ts',
  'test/api/config.test.ts',
  'test/api/docs-derived.test.ts',
  'test/api/request-parsing.test.ts',
  'test/architecture/imports.test.ts',
  'test/architecture/map.test.ts',
  'test/browser/dashboard.test.ts',
  'test/escrow/workflow.test.ts',
  'test/gateways/sandbox-card.test.ts',
  'test/gateways/sandbox-faults.test.ts',
  'test/gateways/sandbox-identity.test.ts',
  'test/gateways/sandbox-no-leak.test.ts',
  'test/payments/rules.test.ts',
  'test/payments/workflow.test.ts',
  'test/platform/codec.test.ts',
  'test/platform/compose-file.test.ts',
  'test/platform/keyring.test.ts',
  'test/platform/node-version.test.ts',
  'test/platform/operation-log.test.ts',
  'test/platform/first-run.test.ts',
  'test/platform/helper-processes.test.ts',
  'test/platform/private-files.test.ts',
  'test/platform/rules.test.ts',
  'test/platform/tour-readme.test.ts',
  'test/platform/transport.test.ts',
  'test/reserves/workflow.test.ts',
  'test/sandbox/durable-state.test.ts',
  'test/sandbox/fake-pg-units.test.ts',
  'test/sandbox/secret-and-token.test.ts',
  'test/schedules/rules.test.ts',
  'test/schedules/workflow.test.ts',
  'test/verification/workflow.test.ts',
  'test/webhooks/rules.test.ts',
  'test/webhooks/workflow.test.ts',
];

/**
 * The kill -9 suites: their worker processes share a database, so they run on the Postgres server in every pass
 * (test/helpers/worker-process.ts: DATABASE_URL, or the machine's server, which is the one CI's Postgres pass names).
 * CI's PGlite pass has run them on that server already; the Postgres pass does not run them again.
 */
export const ALWAYS_ON_POSTGRES = [
  'test/escrow/kill9.test.ts',
  'test/schedules/kill9.test.ts',
  'test/webhooks/kill9.test.ts',
  'test/upstream/kill9.test.ts',
];

/** The engine's own suites: they never touch paygate's storage. */
export const ENGINE_SUITES = ['test/engine/**', 'engine/test/**'];

const postgresPass = process.env.PAYGATE_TEST_PASS === 'postgres';

/**
 * The longest files, longest first (CI's measurements). With several files at once the run ends when its last file
 * does: these start first so that none of them is left running alone at the end. Without vitest's cache of past
 * durations (CI's fresh clone) files would start largest first, which puts the fuzz walk past the middle.
 */
const SLOW_FIRST = [
  'test/api/fuzz.test.ts',
  'test/chaos/chaos.test.ts',
  'test/payments/reconcile.test.ts',
  'test/webhooks/kill9.test.ts',
  'test/escrow/kill9.test.ts',
  'test/schedules/kill9.test.ts',
  'test/upstream/kill9.test.ts',
  'test/engine/journal-growth.test.ts',
  'test/platform/edges.test.ts',
  'test/schedules/schedules.test.ts',
  'test/api/rate-limit.test.ts',
  'test/engine/history.test.ts',
  'test/engine/local-activities.test.ts',
  'test/engine/activities.test.ts',
  'test/projects/admin.test.ts',
];

class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * Files whose assertions bound real time tightly (a 2 s workflow task timeout that a starved worker misses): they
 * run alone, after the others, so that no other file takes the cores from them.
 */
const ALONE = ['test/engine/local-activities.test.ts'];

const INCLUDE = ['test/**/*.test.ts', 'engine/test/**/*.test.ts'];
const EXCLUDE = [
  ...configDefaults.exclude,
  ...(postgresPass ? [...ENGINE_SUITES, ...DATABASE_INDEPENDENT, ...ALWAYS_ON_POSTGRES] : []),
];

// Temporal's native worker runtime does not like worker_threads: run test files in forked processes.
// Most files spend their time waiting (timers, sockets, the engine), so three run at once even on two cores;
// VITEST_MAX_WORKERS (or --maxWorkers) sets another number.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: Number(process.env.VITEST_MAX_WORKERS ?? 3),
    // one paygate workflow bundle per run, shared by the files that start a worker (test/helpers/temporal.ts)
    globalSetup: ['test/helpers/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'together', include: INCLUDE, exclude: [...EXCLUDE, ...ALONE] } },
      {
        extends: true,
        test: { name: 'alone', include: ALONE, exclude: EXCLUDE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 20_000,
    reporters: ['default'],
  },
});

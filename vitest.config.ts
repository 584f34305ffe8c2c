import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * CI's second pass (PAYGATE_TEST_PASS=postgres, DATABASE_URL on the machine's Postgres) runs these suites only:
 * the storage suites. The two engines run the same SQL; where they differ is what a server does that embedded PGlite
 * (one session: every statement in turn) never does: transactions that really run at once (claims, advisory locks,
 * unique keys raced by concurrent requests), the pool, and the wire types. So the pass takes, for every area with a
 * store, the suites that drive its store through the real app with concurrent callers, the database's own suite,
 * the fuzz walk at full size, the chaos run and the scale bench's smoke run (split processes on a shared Postgres:
 * they skip without one).
 * test/platform/test-passes.test.ts checks that each of these reaches DATABASE_URL's database and that every store
 * module of src/ is covered by one of them.
 */
export const POSTGRES_SUITES = [
  'test/api/fuzz-1.test.ts',
  'test/api/fuzz-2.test.ts',
  'test/api/fuzz-3.test.ts',
  'test/chaos/chaos.test.ts',
  'test/chaos/relay-chaos.test.ts',
  'test/bench/scale-smoke.test.ts',
  'test/payments/reconcile.test.ts',
  'test/schedules/schedules.test.ts',
  'test/payments/billing.test.ts',
  'test/escrow/escrow.test.ts',
  'test/verification/verification.test.ts',
  'test/platform/db.test.ts',
  'test/api/idempotency.test.ts',
  'test/payments/cancel.test.ts',
  'test/verification/send-limits.test.ts',
  'test/verification/windows.test.ts',
  'test/reserves/reserves.test.ts',
  'test/schedules/charges-store.test.ts',
  'test/webhooks/delivery.test.ts',
  'test/webhooks/split-processes.test.ts',
  'test/webhooks/api.test.ts',
  'test/projects/key-rotation.test.ts',
  'test/projects/token.test.ts',
  'test/upstream/config.test.ts',
  'test/browser/dashboard-sessions.test.ts',
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

const postgresPass = process.env.PAYGATE_TEST_PASS === 'postgres';

/**
 * The longest files, longest first (CI's measurements). With several files at once the run ends when its last file
 * does: these start first so that none of them is left running alone at the end. Without vitest's cache of past
 * durations (CI's fresh clone) files would start largest first, which puts the fuzz walk past the middle.
 */
const SLOW_FIRST = [
  'test/api/fuzz-1.test.ts',
  'test/api/fuzz-2.test.ts',
  'test/api/fuzz-3.test.ts',
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
 * run alone, after the others, so that no other file takes the cores from them. And the check over what every other
 * file answered (answers-reached.test.ts), which must come after them.
 */
const ALONE = ['test/engine/local-activities.test.ts', 'test/api/answers-reached.test.ts'];

const INCLUDE = postgresPass ? POSTGRES_SUITES : ['test/**/*.test.ts', 'engine/test/**/*.test.ts'];
const EXCLUDE = configDefaults.exclude;

// Temporal's native worker runtime does not like worker_threads: run test files in forked processes.
// Most files spend their time waiting (timers, sockets, the engine), so three run at once even on two cores;
// VITEST_MAX_WORKERS (or --maxWorkers) sets another number.
// The files of a process run one after another in it (`isolate: false`): a file in a fresh process spent seconds
// of CPU loading the app's modules before its first test, and half the suite's time went there. No test changes
// process-wide state (environment, globals, timers, module mocks); the SDK's runtime, the one thing a process has
// once, is installed before any file by setupFiles (test/helpers/runtime.ts).
export default defineConfig({
  test: {
    pool: 'forks',
    isolate: false,
    setupFiles: ['test/helpers/setup-runtime.ts'],
    maxWorkers: Number(process.env.VITEST_MAX_WORKERS ?? 3),
    // what is built once per run (the workflow bundle, a migrated PGlite cluster), shared by the files: run-cache.ts
    globalSetup: ['test/helpers/global-setup.ts'],
    projects: [
      { extends: true, test: { name: 'together', include: INCLUDE, exclude: [...EXCLUDE, ...ALONE] } },
      ...(postgresPass
        ? []
        : [
            {
              extends: true as const,
              test: { name: 'alone', include: ALONE, exclude: EXCLUDE, maxWorkers: 1, sequence: { groupOrder: 1 } },
            },
          ]),
    ],
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 20_000,
    reporters: ['default'],
  },
});

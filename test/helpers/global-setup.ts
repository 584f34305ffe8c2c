// Once per vitest run: a directory where the first test file that needs an artifact built once per run (paygate's
// workflow bundle, a migrated PGlite cluster: run-cache.ts) leaves it for the others, and where each test process
// writes which routes its apps answered (answers-reached.ts). One directory for the run's projects ('together' and
// 'alone', vitest.config.ts), so the last group reads what the first wrote. Removed at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** where this run's artifacts built once are shared between test files (run-cache.ts) */
    runCacheDir: string;
    /**
     * The run takes every test file of the suite (no file filter, no name filter, not CI's Postgres pass): the run's
     * checks over all files (answers-reached.test.ts) hold only then.
     */
    wholeSuite: boolean;
  }
}

/** Where the run's directory is kept between the projects' setups (each project loads this module on its own). */
const RUN_DIR_VARIABLE = 'PAYGATE_TEST_RUN_DIR';

export default function setup(project: TestProject): () => void {
  process.env[RUN_DIR_VARIABLE] ??= mkdtempSync(join(tmpdir(), 'paygate-test-run-'));
  const dir = process.env[RUN_DIR_VARIABLE];
  project.provide('runCacheDir', dir);
  // filenamePattern is how vitest keeps the command line's file filters (not typed as public API): when it cannot be
  // read, the run counts as filtered and the whole-suite checks stand aside
  const vitest = project.vitest as unknown as { filenamePattern?: unknown };
  const filtered = !('filenamePattern' in vitest) || (Array.isArray(vitest.filenamePattern) && vitest.filenamePattern.length > 0);
  project.provide(
    'wholeSuite',
    !filtered && !project.vitest.config.testNamePattern && process.env.PAYGATE_TEST_PASS !== 'postgres',
  );
  return () => rmSync(dir, { recursive: true, force: true });
}

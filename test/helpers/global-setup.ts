// Once per vitest run: a directory where the first test file that needs an artifact built once per run (paygate's
// workflow bundle, a migrated PGlite cluster: run-cache.ts) leaves it for the others. Removed at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** where this run's artifacts built once are shared between test files (run-cache.ts) */
    runCacheDir: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'paygate-test-run-'));
  project.provide('runCacheDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}

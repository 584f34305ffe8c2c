// Once per vitest run: a directory where the first test file that needs paygate's workflow bundle leaves it for the
// others (test/helpers/temporal.ts), so webpack runs once per run rather than once per file. Removed at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** where this run's paygate workflow bundle is shared between test files */
    workflowBundleDir: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'paygate-test-bundle-'));
  project.provide('workflowBundleDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}

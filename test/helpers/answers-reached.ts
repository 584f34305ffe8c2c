// Which routes the suite's answers reached, by status: each test process writes what its apps answered under the
// run's directory (global-setup.ts), and the run's end reports the routes whose documented success answer no test
// checked (test/api/answers-reached.test.ts; answer-check.ts holds each answer against its route's contract as it is sent).
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';

const seen = new Set<string>();
let written = 0;

/** Counts one answer of a route (answer-check.ts's `answered`). */
export function recordAnswered({ route, status }: { route: string; status: number }): void {
  seen.add(`${status} ${route}`);
}

function answersDir(): string | undefined {
  try {
    return join(inject('runCacheDir'), 'answers');
  } catch {
    return undefined; // not in a vitest worker
  }
}

/** Writes the answers this process saw since its last flush (an app's close calls it). */
export function flushAnswered(): void {
  const dir = answersDir();
  const all = [...seen];
  if (!dir || all.length === written) return;
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, `${process.pid}.txt`), `${all.slice(written).join('\n')}\n`);
  written = all.length;
}

/** Every `status route` the run's processes wrote under `runCacheDir`. */
export function answeredInRun(runCacheDir: string): Set<string> {
  const dir = join(runCacheDir, 'answers');
  let files: string[] = [];
  try {
    files = readdirSync(dir);
  } catch {
    return new Set();
  }
  return new Set(files.flatMap((file) => readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean)));
}

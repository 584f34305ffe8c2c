// The Temporal SDK's runtime for every test file: one per process (files share processes: vitest.config.ts
// `isolate: false`), installed before any file by setup-runtime.ts; the helpers call it too, for use outside vitest. It keeps what the SDK logs (worker, activities,
// workflows, at every level) for the tests that read it (`workerLogs`: nothing sensitive in it, a refusal logged
// at debug) and prints errors only: failing activities and workflow tasks on purpose is what many tests do.
// ENGINE_TEST_LOG_LEVEL=DEBUG prints everything, for a test being debugged.
import { DefaultLogger, type LogEntry, Runtime } from '@temporalio/worker';

const MAX_WORKER_LOG_LINES = 20_000;
const workerLogLines: string[] = [];
const printAll = process.env.ENGINE_TEST_LOG_LEVEL === 'DEBUG';

/** Everything the Temporal SDK logged in this process (its latest lines), one JSON line per entry. */
export function workerLogs(): string {
  return workerLogLines.join('\n');
}

let installed = false;
export function installTestRuntime(): void {
  if (installed) return;
  installed = true;
  Runtime.install({
    logger: new DefaultLogger('DEBUG', (entry: LogEntry) => {
      if (printAll || entry.level === 'ERROR') process.stderr.write(`[worker] ${entry.level} ${entry.message}\n`);
      workerLogLines.push(
        JSON.stringify({ level: entry.level, message: entry.message, meta: entry.meta }, (_key, v: unknown) =>
          typeof v === 'bigint' ? v.toString() : v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v,
        ),
      );
      // dropped by the thousand: shifting one line off a full array per entry costs the array's length each time
      if (workerLogLines.length > MAX_WORKER_LOG_LINES + 1_000) workerLogLines.splice(0, 1_000);
    }),
    // The SDK core's own lines (Rust) stay on stderr, at ERROR: a test's deliberate failures make the core warn, and
    // `npm test` prints no warning. Not forwarded here: forwarding holds back every line of this logger for 100 ms,
    // after the test that caused it has read workerLogs.
    telemetryOptions: { logging: { filter: { core: printAll ? 'DEBUG' : 'ERROR', other: 'ERROR' }, console: {} } },
  });
}

/**
 * Environment for the engine conformance suite.
 *
 * Every test file drives the server only through the real Temporal SDK (@temporalio/client,
 * @temporalio/worker, @temporalio/testing 1.24). Where the server comes from:
 *
 * - default: `bin/temporal-devserver`, launched by @temporalio/testing's TestWorkflowEnvironment
 *   (`createTimeSkipping` for the virtual clock, `createLocal` for the real-clock dev server),
 *   exactly as a user of the SDK would launch the Java test server or the Temporal CLI.
 * - `TEMPORAL_ADDRESS=host:port` (optionally `TEMPORAL_NAMESPACE`, default `default`): the same suite
 *   runs against that real Temporal server through `createFromExistingServer`, so any divergence of
 *   the engine from Temporal shows up wherever a real server exists:
 *
 *       temporal server start-dev --search-attribute CustomKeywordField=Keyword \
 *                                 --search-attribute CustomIntField=Int   # (or any real cluster)
 *       TEMPORAL_ADDRESS=127.0.0.1:7233 npm run test:engine
 *
 *   A real server has no virtual clock: tests that only make sense with time skipping are not
 *   registered and the file prints why (see `excludedAgainstRealServer`). Durations elsewhere are
 *   short enough to run on a real clock. Tests of engine-only promises (the capabilities it
 *   advertises, the kill -9 restart of bin/temporal-devserver) also run only against the engine.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Worker,
  type WorkerOptions,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { INT_KEY, KEYWORD_KEY } from './search-attributes.js';
import { installTestRuntime } from '../helpers/runtime.js';

/** ENGINE_DEVSERVER_PATH swaps in another launcher, e.g. one that runs the engine under `node --cpu-prof`. */
export const DEVSERVER_PATH =
  process.env.ENGINE_DEVSERVER_PATH || fileURLToPath(new URL('../../bin/temporal-devserver', import.meta.url));
export const WORKFLOWS_PATH = fileURLToPath(new URL('./workflows.ts', import.meta.url));

export const realServerAddress: string | undefined = process.env.TEMPORAL_ADDRESS || undefined;
export const againstRealServer = realServerAddress !== undefined;
export const realServerNamespace = process.env.TEMPORAL_NAMESPACE ?? 'default';

export { INT_KEY, KEYWORD_KEY };

export type EnvMode = 'time-skipping' | 'dev-server';

/**
 * Creates the environment of one test file. Against the engine every call launches its own
 * server process, so files (and `describe` blocks) never share server state.
 */
export async function createEnv(mode: EnvMode = 'time-skipping'): Promise<TestWorkflowEnvironment> {
  installTestRuntime();
  if (realServerAddress !== undefined) {
    return TestWorkflowEnvironment.createFromExistingServer({
      address: realServerAddress,
      namespace: realServerNamespace,
    });
  }
  const executable = { type: 'existing-path' as const, path: DEVSERVER_PATH };
  if (mode === 'time-skipping') {
    return TestWorkflowEnvironment.createTimeSkipping({ server: { executable } });
  }
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable,
      namespace: 'default',
      ip: '127.0.0.1',
      searchAttributes: [KEYWORD_KEY, INT_KEY],
    },
  });
}

let bundlePromise: Promise<WorkflowBundleWithSourceMap> | undefined;
/** The workflow bundle of test/engine/workflows.ts, built once per test file (webpack takes ~1 s). */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundlePromise ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('ERROR') });
  return bundlePromise;
}

export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

export type TestWorkerOptions = Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue' | 'workflowsPath'> & {
  taskQueue?: string;
};

/**
 * Runs a worker on a fresh task queue for the duration of `body`, then shuts it down.
 * `body` gets the task queue name. Bounded: a body that does not settle within `timeoutMs` fails.
 */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  options: TestWorkerOptions,
  body: (taskQueue: string, worker: Worker) => Promise<T>,
  timeoutMs = 45_000,
): Promise<T> {
  const taskQueue = options.taskQueue ?? uniqueId('tq');
  const worker = await Worker.create({
    workflowBundle: options.workflowBundle ?? (await workflowBundle()),
    ...options,
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    shutdownGraceTime: options.shutdownGraceTime ?? '2s',
  });
  return worker.runUntil(bounded(body(taskQueue, worker), timeoutMs, `test body on ${taskQueue}`));
}

/** Rejects when `promise` does not settle in `ms` (so no test can hang on a server that never answers). */
export function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Polls `probe` until it returns a value other than undefined; bounded. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const EVENT_TYPE_PREFIX = 'EVENT_TYPE_';
/** The name of an event's type without its prefix, e.g. 'WORKFLOW_EXECUTION_STARTED'. */
export function eventTypeName(event: HistoryEvent, eventTypes: Record<number, string>): string {
  const name = eventTypes[event.eventType ?? 0] ?? `UNKNOWN_${event.eventType}`;
  return name.startsWith(EVENT_TYPE_PREFIX) ? name.slice(EVENT_TYPE_PREFIX.length) : name;
}

export async function historyEvents(handle: WorkflowHandle): Promise<HistoryEvent[]> {
  const history = await handle.fetchHistory();
  return history.events ?? [];
}

/** Checks that `expected` appears in `actual` in this order (other entries may sit in between). */
export function isSubsequence(actual: readonly string[], expected: readonly string[]): boolean {
  let next = 0;
  for (const item of actual) {
    if (item === expected[next]) next += 1;
    if (next === expected.length) return true;
  }
  return expected.length === 0;
}

export function namespaceOf(env: TestWorkflowEnvironment): string {
  return env.namespace ?? 'default';
}

/** Printed once per file when some of its tests need the engine (virtual clock or engine-only promise). */
export function excludedAgainstRealServer(what: string, reason: string): void {
  if (againstRealServer) {
    process.stderr.write(`[engine conformance] not run against TEMPORAL_ADDRESS: ${what} — ${reason}\n`);
  }
}

/**
 * Replays the server's history of `handle` through the SDK: a missing, extra or out-of-order event
 * for any command the workflow emitted fails with a DeterminismViolationError.
 */
export async function expectReplays(handle: WorkflowHandle): Promise<void> {
  await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, await handle.fetchHistory(), handle.workflowId);
}

// The workflows' own tests: paygate's real workflow bundle in a worker whose activities are stubs (plain async
// functions recording their calls), on the project's engine (bin/temporal-devserver) in time-skipping mode,
// payloads sealed by paygate's codec with a test keyring. No database, no Fastify, no sandbox PGs.
// In the style of temporalio/samples-typescript hello-world/src/mocha/workflows-mocks.test.ts.
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import {
  type Client,
  Client as TemporalClient,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { ApplicationFailure, type Workflow } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createKeyring, generateKeyringSpec, type Keyring, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { paygateClientOptions } from '../../src/platform/temporal/client.js';
import { paygateWorkerOptions, refusingUnopenedInputs } from '../../src/platform/temporal/worker.js';
import { bounded, DEVSERVER_PATH, type HistoryEvent, paygateWorkflowBundle } from './temporal.js';
import { installTestRuntime } from './runtime.js';

const SETUP_TIMEOUT_MS = 60_000;
const SKIP_TIMEOUT_MS = 30_000;
const CLOSE_TIMEOUT_MS = 15_000;
const CALL_TIMEOUT_MS = 20_000;
const BODY_TIMEOUT_MS = 40_000;

// biome-ignore lint/suspicious/noExplicitAny: activity signatures differ; ActivityStubs' type parameter keeps each one's
type AnyActivity = (...args: any[]) => Promise<unknown>;

/** One call of a stub activity, as the worker ran it. */
export interface ActivityCall {
  readonly name: string;
  /** the activity's (one) argument, decoded */
  readonly input: unknown;
  /** the attempt of this call (retries are calls too) */
  readonly attempt: number;
  readonly local: boolean;
  /** the engine's (virtual) time this attempt was scheduled at */
  readonly scheduledAtMs: number;
}

/**
 * Stub activities: `impl` says what each activity the test expects does; every call is recorded (before it runs,
 * so a call that throws is recorded too). Only the names in `impl` are registered: an activity the workflow calls
 * beyond them fails as not registered (retried as the workflow's policy says), so the test sees a missing call.
 */
export class ActivityStubs<A extends object> {
  readonly calls: ActivityCall[] = [];
  readonly activities: Record<string, AnyActivity>;

  private waiters: { readonly name: string; readonly count: number; readonly resolve: () => void }[] = [];

  constructor(impl: { [K in keyof A]?: A[K] }) {
    this.activities = {};
    for (const [name, fn] of Object.entries(impl) as [string, AnyActivity][]) {
      this.activities[name] = async (...args: unknown[]) => {
        const info = Context.current().info;
        this.calls.push({
          name,
          input: args[0],
          attempt: info.attempt,
          local: info.isLocal,
          scheduledAtMs: info.currentAttemptScheduledTimestampMs,
        });
        const reached = this.waiters.filter((w) => this.countOf(w.name) >= w.count);
        this.waiters = this.waiters.filter((w) => !reached.includes(w));
        for (const w of reached) w.resolve();
        return fn(...args);
      };
    }
  }

  private countOf(name: string): number {
    return this.calls.filter((c) => c.name === name).length;
  }

  /** Resolves once `name` has been called `count` times in all (what a signal set off has reached its activity). */
  called(name: keyof A & string, count = 1): Promise<void> {
    if (this.countOf(name) >= count) return Promise.resolve();
    const reached = new Promise<void>((resolve) => this.waiters.push({ name, count, resolve }));
    return bounded(reached, CALL_TIMEOUT_MS, `${count} call(s) of ${name}`);
  }

  /** The inputs of `name`'s calls, in order. */
  inputsOf<K extends keyof A & string>(name: K): A[K] extends (input: infer I, ...rest: never[]) => unknown ? I[] : never {
    return this.calls.filter((c) => c.name === name).map((c) => c.input) as never;
  }

  /** The activities called, in order. */
  names(): string[] {
    return this.calls.map((c) => c.name);
  }
}

/** What one test's worker lets it do: start workflows on its task queue. */
export interface WorkerScope {
  readonly taskQueue: string;
  start<W extends Workflow>(
    workflowType: string,
    args: Parameters<W>,
    workflowId?: string,
  ): Promise<WorkflowHandleWithFirstExecutionRunId<W>>;
}

export interface WorkflowTestEnv {
  readonly env: TestWorkflowEnvironment;
  /** the time-skipping client (result() lets virtual time run), with paygate's data converter */
  readonly client: Client;
  readonly keyring: Keyring;
  /** the engine's virtual time, in ms */
  now(): Promise<number>;
  /** lets virtual time run `ms` forward (timers due meanwhile fire, their workflow tasks and activities run) */
  skipTime(ms: number): Promise<void>;
  /** a run's history as the engine stores it: fetched without the codec, payloads still sealed */
  rawHistory(workflowId: string): Promise<HistoryEvent[]>;
  /**
   * Runs `body` with a worker of its own (a fresh task queue) on paygate's workflow bundle and `stubs`' activities;
   * workflows the body started and left running are terminated before the worker stops, so no later test's time
   * skipping waits on a task nobody polls.
   */
  withWorker<T>(stubs: ActivityStubs<object>, body: (scope: WorkerScope) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function startWorkflowTestEnv(): Promise<WorkflowTestEnv> {
  installTestRuntime();
  const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('test')));
  // the bundle builds while the engine starts
  const bundle = paygateWorkflowBundle();
  const env = await bounded(
    TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: DEVSERVER_PATH } },
      client: paygateClientOptions(keyring),
    }),
    SETUP_TIMEOUT_MS,
    'the time-skipping engine to start',
  );
  try {
    const workflowBundle = await bounded(bundle, SETUP_TIMEOUT_MS, 'the workflow bundle');
    const { client } = env;
    return {
      env,
      client,
      keyring,
      now: () => env.currentTimeMs(),
      async skipTime(ms) {
        await bounded(env.sleep(ms), SKIP_TIMEOUT_MS, `skipping ${ms} ms of virtual time`);
      },
      async rawHistory(workflowId) {
        const raw = new TemporalClient({ connection: env.connection, namespace: env.namespace ?? 'default' });
        return (await raw.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      },
      async withWorker(stubs, body) {
        const taskQueue = `workflow-test-${randomUUID()}`;
        const worker = await bounded(
          Worker.create({
            connection: env.nativeConnection,
            namespace: env.namespace ?? 'default',
            taskQueue,
            workflowBundle,
            activities: refusingUnopenedInputs(stubs.activities),
            ...paygateWorkerOptions(keyring),
            shutdownGraceTime: '1s',
            // a stub a failed test left waiting must not hold the worker (and the next test) forever
            shutdownForceTime: '3s',
          }),
          SETUP_TIMEOUT_MS,
          'the worker to start',
        );
        const started: WorkflowHandle[] = [];
        const scope: WorkerScope = {
          taskQueue,
          async start<W extends Workflow>(workflowType: string, args: Parameters<W>, workflowId = `wf-${randomUUID()}`) {
            const options = { taskQueue, workflowId, args } as unknown as WorkflowStartOptions<W>;
            const handle = await client.workflow.start<W>(workflowType, options);
            started.push(handle);
            return handle;
          },
        };
        // the body's own failure is what the test reports, not the worker's trouble stopping after it
        let bodyFailure: { readonly error: unknown } | undefined;
        try {
          return await worker.runUntil(async () => {
            try {
              // under the test's own timeout, so a body stuck on a refused expectation still cleans up below
              return await bounded(body(scope), BODY_TIMEOUT_MS, 'the test body');
            } catch (error) {
              bodyFailure = { error };
              throw error;
            } finally {
              for (const handle of started) {
                // best effort: a failure here must not hide the body's own
                await handle
                  .describe()
                  .then(({ status }) => (status.name === 'RUNNING' ? handle.terminate('the test ended') : undefined))
                  .catch(() => undefined);
              }
            }
          });
        } catch (err) {
          throw bodyFailure ? bodyFailure.error : err;
        }
      },
      async close() {
        await bounded(env.teardown(), CLOSE_TIMEOUT_MS, 'the engine to stop').catch(() => undefined);
      },
    };
  } catch (err) {
    await bounded(env.teardown(), CLOSE_TIMEOUT_MS, 'the engine to stop').catch(() => undefined);
    throw err;
  }
}

/** The timers a run started, as durations in ms, from its history (exact: no clock reading involved). */
export async function timerDurationsMs(handle: WorkflowHandle): Promise<number[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const d = e.timerStartedEventAttributes?.startToFireTimeout;
    return d ? [Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6)] : [];
  });
}

/**
 * The ApplicationFailure an update or a workflow result was refused with (found in the error's cause chain); fails
 * the test when `call` succeeds or fails otherwise.
 */
export async function refusal(call: Promise<unknown>): Promise<ApplicationFailure> {
  let value: unknown;
  try {
    value = await call;
  } catch (err) {
    for (let cause: unknown = err; cause instanceof Error; cause = cause.cause) {
      if (cause instanceof ApplicationFailure) return cause;
    }
    throw err;
  }
  throw new Error(`expected a refusal, the call succeeded with ${JSON.stringify(value)}`);
}

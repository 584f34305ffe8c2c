// The real Temporal side of API tests: the project's embedded engine (bin/temporal-devserver) in
// time-skipping mode through @temporalio/testing, a client with paygate's data converter, the services over
// it, and a worker running paygate's workflows and its one set of activities (createActivities) over those
// services and the test's own stores and gateways: the composition root's order.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { Client as TemporalClient } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities/index.js';
import type { WebhookActivityOptions } from '../../src/activities/webhooks.js';
import type { GatewayRegistry } from '../../src/gateways/types.js';
import type { Keyring } from '../../src/platform/security/keyring.js';
import type { Services } from '../../src/composition/services.js';
import type { Stores } from '../../src/composition/stores.js';
import { paygateClientOptions } from '../../src/platform/temporal/client.js';
import { paygateWorkerOptions, refusingUnopenedInputs } from '../../src/platform/temporal/worker.js';
import { WORKFLOW_BUNDLER_OPTIONS, WORKFLOWS_PATH } from '../../src/platform/temporal/workflow-bundle.js';
import type { Metrics } from '../../src/platform/observability/metrics.js';
import { observingWorkflowClient } from '../../src/platform/observability/workflow-client.js';
import { sharedRunArtifact } from './run-cache.js';
import { installTestRuntime } from './runtime.js';

export { workerLogs } from './runtime.js';

export const DEVSERVER_PATH = fileURLToPath(new URL('../../bin/temporal-devserver', import.meta.url));

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Event type names without the EVENT_TYPE_ prefix, e.g. 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED'. */
export function eventTypeNames(events: readonly HistoryEvent[]): string[] {
  const names = temporal.api.enums.v1.EventType as unknown as Record<number, string>;
  return events.map((e) => (names[e.eventType ?? 0] ?? `UNKNOWN_${e.eventType}`).replace(/^EVENT_TYPE_/, ''));
}

/** The SDK's marker of a local activity (its `data` detail is the SDK's own plain JSON; the result is sealed). */
export const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/**
 * The activities a history ran, in order: an activity task by its scheduled event, a local activity by its marker
 * (`local:` before the name). Read from the marker's `data`, which the SDK keeps plain (type, attempt, times).
 */
export function activitiesRun(events: readonly HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) return [scheduled];
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== LOCAL_ACTIVITY_MARKER) return [];
    const data = marker.details?.data?.payloads?.[0]?.data;
    const type = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string }).activity_type : undefined;
    return [`local:${type ?? '?'}`];
  });
}

export interface TestTemporal {
  readonly env: TestWorkflowEnvironment;
  /** paygate's client: payloads sealed by the codec (what the API uses) */
  readonly client: Client;
  readonly taskQueue: string;
  /** the services built over `client` (TestTemporalDeps.services): the worker's activities call them */
  readonly services: Services;
  /** the engine's virtual time */
  now(): Promise<Date>;
  /** skips virtual time; resolves once the engine's clock has moved `durationMs` forward */
  skipTime(durationMs: number): Promise<void>;
  /** the history as stored by the engine: payloads still sealed, fetched without the codec */
  rawHistory(workflowId: string): Promise<HistoryEvent[]>;
  /** stops the worker and starts a new one on the same task queue: workflows continue by replaying their history */
  restartWorker(): Promise<void>;
  close(): Promise<void>;
}

export interface TestTemporalDeps {
  readonly stores: Stores;
  readonly gateways: GatewayRegistry;
  readonly keyring: Keyring;
  /** the process's services over the client this starts (buildServices, as the composition root builds them) */
  readonly services: (temporal: { readonly client: Client; readonly taskQueue: string }) => Services;
  /** how webhook attempts reach receivers (sandbox mode, resolver, clock); production rules when absent */
  readonly webhooks?: WebhookActivityOptions;
  /** the activities' business clock (createActivities' businessClock); the host's clock when absent */
  readonly businessClock?: () => Date;
  /** the app's registry: the worker's activities and clients count into it, as in `npm start` */
  readonly metrics?: Metrics;
}

const SETUP_TIMEOUT_MS = 60_000;
const SKIP_TIMEOUT_MS = 30_000;
const CLOSE_TIMEOUT_MS = 15_000;

const buildBundle = () =>
  bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('ERROR'), ...WORKFLOW_BUNDLER_OPTIONS });

let bundle: Promise<{ code: string }> | undefined;
/** paygate's workflow bundle, built once per vitest run (webpack takes a while: run-cache.ts). */
export function paygateWorkflowBundle(): Promise<{ code: string }> {
  bundle ??= sharedRunArtifact('workflows.js', async () => (await buildBundle()).code).then((code) => ({
    code: code.toString('utf8'),
  }));
  return bundle;
}

/** Rejects when `promise` does not settle in `ms`, so no test waits forever on a stuck server. */
export function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export async function startTestTemporal(deps: TestTemporalDeps): Promise<TestTemporal> {
  installTestRuntime();
  const env = await bounded(
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: DEVSERVER_PATH } } }),
    SETUP_TIMEOUT_MS,
    'the time-skipping engine to start',
  );
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const stopWorker = async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await bounded(running ?? Promise.resolve(), CLOSE_TIMEOUT_MS, 'the worker to stop').catch(() => undefined);
    worker = undefined;
    running = undefined;
  };
  try {
    const namespace = env.namespace ?? 'default';
    const taskQueue = `paygate-test-${randomUUID()}`;
    const client = new TemporalClient({
      connection: env.connection,
      namespace,
      ...paygateClientOptions(deps.keyring, [observingWorkflowClient(deps.metrics)]),
    });
    // the client, then the services over it, then the activities over them, then the worker
    const services = deps.services({ client, taskQueue });
    const activities = createActivities({
      stores: deps.stores,
      services,
      gateways: deps.gateways,
      ...(deps.webhooks ? { webhooks: deps.webhooks } : {}),
      ...(deps.businessClock ? { businessClock: deps.businessClock } : {}),
      ...(deps.metrics ? { metrics: deps.metrics } : {}),
    });
    const startWorker = async () => {
      const created = await bounded(
        (async () =>
          Worker.create({
            connection: env.nativeConnection,
            namespace,
            taskQueue,
            activities: refusingUnopenedInputs(activities),
            ...paygateWorkerOptions(deps.keyring, {
              clientInterceptors: [observingWorkflowClient(deps.metrics)],
              ...(deps.metrics ? { metrics: deps.metrics } : {}),
            }),
            workflowBundle: await paygateWorkflowBundle(),
            shutdownGraceTime: '2s',
          }))(),
        SETUP_TIMEOUT_MS,
        'the worker to start',
      );
      worker = created;
      running = created.run();
      // A worker that dies makes every later update hang until its bound; surface the cause instead.
      running.catch((err: unknown) => process.stderr.write(`test worker stopped: ${String(err)}\n`));
    };
    await startWorker();
    // the worker process's webhook dispatcher, on the services' clocks (the test clock follows the engine's time)
    services.webhookDispatcher.start();

    const rawClient = new TemporalClient({ connection: env.connection, namespace });
    const now = async () => new Date(await env.currentTimeMs());

    return {
      env,
      client,
      taskQueue,
      services,
      now,
      async skipTime(durationMs) {
        await bounded(env.sleep(durationMs), SKIP_TIMEOUT_MS, `skipping ${durationMs} ms of virtual time`);
      },
      async rawHistory(workflowId) {
        const history = await bounded(rawClient.workflow.getHandle(workflowId).fetchHistory(), SKIP_TIMEOUT_MS, 'history');
        return history.events ?? [];
      },
      async restartWorker() {
        await stopWorker();
        await startWorker();
      },
      async close() {
        await bounded(services.webhookDispatcher.stop(), CLOSE_TIMEOUT_MS, 'the webhook dispatcher to stop').catch(
          () => undefined,
        );
        await stopWorker();
        await bounded(env.teardown(), CLOSE_TIMEOUT_MS, 'the engine to stop').catch(() => undefined);
      },
    };
  } catch (err) {
    await stopWorker();
    await bounded(env.teardown(), CLOSE_TIMEOUT_MS, 'the engine to stop').catch(() => undefined);
    throw err;
  }
}

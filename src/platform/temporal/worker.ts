import type { WorkflowClientInterceptor } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowInfo } from '@temporalio/workflow';
import {
  NativeConnection,
  Runtime,
  Worker,
  type InjectedSinks,
  type Logger as SdkLogger,
  type WorkerOptions,
} from '@temporalio/worker';
import type { Metrics } from '../observability/metrics.js';
import type { Keyring } from '../security/keyring.js';
import { paygateDataConverter } from './data-converter.js';
import { messageEnvelopes } from './message-envelopes.js';
import { payloadRefusalOf, type RefusalRecord, type RefusalSinks } from './messages.js';
import { type TemporalTransport, temporalTransportOptions } from './transport.js';
import {
  bundleWorkflowsInThread,
  WORKFLOW_BUNDLER_OPTIONS,
  WORKFLOW_INTERCEPTORS_PATH,
  WORKFLOWS_PATH,
} from './workflow-bundle.js';

/**
 * Workflow runs the worker keeps in memory between their tasks (the sticky cache). The SDK's default follows the
 * heap limit (thousands here), and a webhook delivery waits hours on its ladder: an evicted run is replayed from
 * its short history when its timer fires, which costs far less than holding every waiting run.
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 500;

export interface PaygateWorkerOptions {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly keyring: Keyring;
  readonly activities: object;
  /** a prebuilt bundle (tests build one and reuse it); otherwise the workflows are bundled at start */
  readonly workflowBundle?: WorkerOptions['workflowBundle'];
  /** the sticky cache's bound; DEFAULT_MAX_CACHED_WORKFLOWS unless set */
  readonly maxCachedWorkflows?: number;
  /** TLS / mTLS / API key for a production cluster */
  readonly transport?: TemporalTransport;
  /** seen by every workflow call of the client the worker gives its activities (metrics, log ids) */
  readonly clientInterceptors?: readonly WorkflowClientInterceptor[];
  /** where the workflow bundler reports (its webpack summary is many lines); the Runtime's logger unless set */
  readonly bundlerLogger?: SdkLogger;
  /** where every message, input or activity result a workflow refused is counted (it is logged as a warning too) */
  readonly metrics?: Pick<Metrics, 'workflowRefusal'>;
  /** told of every refusal instead of the warning and the count (tests) */
  readonly onRefusal?: (refusal: RefusalRecord, workflow: Pick<WorkflowInfo, 'workflowId' | 'workflowType'>) => void;
}

/** The error type an activity fails with when its input did not open (EncryptionCodec's stand-in). */
export const ACTIVITY_INPUT_REFUSED = 'ACTIVITY_INPUT_REFUSED';

/**
 * The activities, each refusing an input that did not open: the worker's codec hands a refused payload on as a
 * stand-in value (so a workflow can drop a forged message instead of failing its task), which no activity may run
 * on. Not retried: the same task would carry the same input.
 */
export function refusingUnopenedInputs<T extends object>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] =
      typeof fn === 'function'
        ? (...args: unknown[]) => {
            const reason = args.map(payloadRefusalOf).find((r) => r !== undefined);
            if (reason !== undefined) {
              throw ApplicationFailure.nonRetryable(`the ${name} activity's input is ${reason}`, ACTIVITY_INPUT_REFUSED);
            }
            return (fn as (...a: unknown[]) => unknown)(...args);
          }
        : fn;
  }
  return wrapped as T;
}

function refusalSinks(onRefusal: NonNullable<PaygateWorkerOptions['onRefusal']>): InjectedSinks<RefusalSinks> {
  return {
    paygateRefusals: {
      record: { fn: (info, refusal) => onRefusal(refusal, info), callDuringReplay: false },
    },
  };
}

/** A refusal is logged (the Runtime's logger: paygate's log) and counted. */
const recordRefusal =
  (metrics: PaygateWorkerOptions['metrics']): NonNullable<PaygateWorkerOptions['onRefusal']> =>
  (refusal, workflow) => {
    Runtime.instance().logger.warn('a workflow refused what it was sent: not sealed by paygate for it', {
      ...refusal,
      workflowId: workflow.workflowId,
      workflowType: workflow.workflowType,
    });
    metrics?.workflowRefusal(refusal.kind, refusal.name, refusal.reason);
  };

export interface PaygateWorker {
  readonly worker: Worker;
  /** runs until shutdown() is called or the worker fails */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * What makes a Temporal worker paygate's, whatever else it is given: the data converter that hands a refused
 * payload on as a stand-in, the sink the workflows report refusals through, the envelopes on the signals and
 * updates of the client it gives its activities. Its activities go through refusingUnopenedInputs.
 */
export function paygateWorkerOptions(
  keyring: Keyring,
  opts: Pick<PaygateWorkerOptions, 'metrics' | 'onRefusal' | 'clientInterceptors'> = {},
): Pick<WorkerOptions, 'dataConverter' | 'sinks'> & { interceptors: NonNullable<WorkerOptions['interceptors']> } {
  return {
    dataConverter: paygateDataConverter(keyring, 'worker'),
    sinks: refusalSinks(opts.onRefusal ?? recordRefusal(opts.metrics)),
    interceptors: { client: { workflow: [messageEnvelopes, ...(opts.clientInterceptors ?? [])] } },
  };
}

export async function createPaygateWorker(opts: PaygateWorkerOptions): Promise<PaygateWorker> {
  const connection = await NativeConnection.connect({ address: opts.address, ...temporalTransportOptions(opts.transport) });
  const paygate = paygateWorkerOptions(opts.keyring, opts);
  // bundled here rather than by Worker.create, whose bundler reports to the Runtime's logger and grows this
  // process's heap
  const workflowBundle =
    opts.workflowBundle ?? (opts.bundlerLogger ? await bundleWorkflowsInThread(WORKFLOWS_PATH, opts.bundlerLogger) : undefined);
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: refusingUnopenedInputs(opts.activities),
    ...(workflowBundle
      ? { workflowBundle }
      : {
          workflowsPath: WORKFLOWS_PATH,
          bundlerOptions: { webpackConfigHook: WORKFLOW_BUNDLER_OPTIONS.webpackConfigHook },
        }),
    maxCachedWorkflows: opts.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_WORKFLOWS,
    ...paygate,
    interceptors: {
      ...paygate.interceptors,
      // a bundle holds them already (WORKFLOW_BUNDLER_OPTIONS): naming them again makes the SDK warn on every start
      ...(workflowBundle ? {} : { workflowModules: [WORKFLOW_INTERCEPTORS_PATH] }),
    },
  });
  let running: Promise<void> | undefined;
  return {
    worker,
    run() {
      running ??= worker.run().finally(() => connection.close());
      return running;
    },
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}

import type { WorkflowClientInterceptor } from '@temporalio/client';
import { NativeConnection, Worker, type Logger as SdkLogger, type WorkerOptions } from '@temporalio/worker';
import type { Keyring } from '../security/keyring.js';
import { paygateDataConverter } from './data-converter.js';
import { type TemporalTransport, temporalTransportOptions } from './transport.js';
import { bundleWorkflowsInThread, WORKFLOW_BUNDLER_OPTIONS, WORKFLOWS_PATH } from './workflow-bundle.js';

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
}

export interface PaygateWorker {
  readonly worker: Worker;
  /** runs until shutdown() is called or the worker fails */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

export async function createPaygateWorker(opts: PaygateWorkerOptions): Promise<PaygateWorker> {
  const connection = await NativeConnection.connect({ address: opts.address, ...temporalTransportOptions(opts.transport) });
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: opts.activities,
    dataConverter: paygateDataConverter(opts.keyring),
    ...(opts.workflowBundle
      ? { workflowBundle: opts.workflowBundle }
      : opts.bundlerLogger
        ? {
            // bundled here rather than by Worker.create, whose bundler reports to the Runtime's logger and grows
            // this process's heap
            workflowBundle: await bundleWorkflowsInThread(WORKFLOWS_PATH, opts.bundlerLogger),
          }
        : { workflowsPath: WORKFLOWS_PATH, bundlerOptions: WORKFLOW_BUNDLER_OPTIONS }),
    maxCachedWorkflows: opts.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_WORKFLOWS,
    ...(opts.clientInterceptors ? { interceptors: { client: { workflow: [...opts.clientInterceptors] } } } : {}),
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

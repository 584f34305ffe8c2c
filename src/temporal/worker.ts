import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Keyring } from '../security/keyring.js';
import { paygateDataConverter } from './data-converter.js';
import { type TemporalTransport, temporalTransportOptions } from './transport.js';

/** The workflow bundle entry: every workflow paygate runs. */
export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface PaygateWorkerOptions {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly keyring: Keyring;
  readonly activities: object;
  /** a prebuilt bundle (tests build one and reuse it); otherwise the workflows are bundled at start */
  readonly workflowBundle?: WorkerOptions['workflowBundle'];
  readonly maxCachedWorkflows?: number;
  /** TLS / mTLS / API key for a production cluster */
  readonly transport?: TemporalTransport;
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
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
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

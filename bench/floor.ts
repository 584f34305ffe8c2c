/**
 * The Temporal floor driver of `npm run bench:flows` (issue 39, item 1): what a workflow flow costs in the Temporal
 * SDK and the engine alone. Laid out as `npm start` lays paygate out (src/main.ts): the client and the worker in
 * this one process, the embedded engine in a child process started as the composition starts it (the devserver on
 * loopback with its token and, as in sandbox mode, its clock control), the worker with paygate's worker options
 * (its sticky cache, its default concurrency, a prebuilt bundle made with paygate's bundler options in a thread of
 * its own) and every payload sealed by paygate's codec (paygateDataConverter over a keyring made as a first start
 * makes one). The workflows and activities are the floor's (bench/floor-workflows.ts lists the actions of each
 * flow); there is no HTTP: the figures are the client's calls, timed here.
 *
 * Run by bench/flows-floor.ts: `tsx bench/floor.ts <dataDir>` with an IPC channel. It sends { kind: 'ready' } once
 * the worker runs, then answers each { kind: 'measure' } with the flows' throughput, latencies and the CPU this
 * process and the engine spent per flow (from /proc, around the flows only: a shipping flow's order is started
 * before, as bench:flows pays for paygate's escrow payment before it measures).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createLogger } from '../src/platform/logger.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../src/platform/security/keyring.js';
import { paygateDataConverter } from '../src/platform/temporal/data-converter.js';
import { startEmbeddedEngine } from '../src/platform/temporal/embedded-engine.js';
import { installTemporalLogger } from '../src/platform/temporal/runtime.js';
import { temporalTransportOptions } from '../src/platform/temporal/transport.js';
import { DEFAULT_MAX_CACHED_WORKFLOWS } from '../src/platform/temporal/worker.js';
import { WORKFLOW_BUNDLER_OPTIONS } from '../src/platform/temporal/workflow-bundle.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS } from '../src/platform/temporal/workflow-calls.js';
import { floorActivities, type FloorShipment } from './floor-activities.js';
import {
  confirmOtpUpdate,
  type escrowWorkflow,
  type FloorEnvelope,
  type FloorEscrowInput,
  type FloorVerificationInput,
  otpSentUpdate,
  resendOtpUpdate,
  shippingStartUpdate,
  type verificationWorkflow,
} from './floor-workflows.js';
import { percentile, randomPhone } from './paygate-calls.js';
import { cpuMs } from './proc-stats.js';

/** What one measurement gives: as bench/flows.ts's, the CPU per flow of this process (`driver`) and the engine. */
export interface FloorFigures {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpu: { readonly driver: number; readonly engine: number };
}

export type FloorRequest = { kind: 'measure'; id: number; flow: string; flows: number; callers: number };
export type FloorReply =
  | { kind: 'ready'; enginePid: number | undefined }
  | { kind: 'measured'; id: number; figures: FloorFigures }
  | { kind: 'failed'; id: number; message: string };

// paygate's defaults (src/platform/config): the namespace and task queue of `npm start`
const NAMESPACE = 'default';
const TASK_QUEUE = 'paygate';
const WORKFLOWS_PATH = fileURLToPath(new URL('./floor-workflows.ts', import.meta.url));

// ---- the payloads: paygate's shapes, dummy values of the same lengths ------------------------------------------

const hex24 = () => randomBytes(12).toString('hex');
/** The bench's project (an application_id: 24 hex characters). */
const APPLICATION_ID = hex24();
/** The client's half of paygate's message envelope (src/platform/temporal/message-envelopes.ts). */
const envelope = (name: string, args: unknown[]): [FloorEnvelope] => [{ paygateMessage: name, args }];

/** The run's input as src/verification/request.ts gives it for the bench's request (sandbox_identity, SMS). */
const verificationInput = (receiptId: string): FloorVerificationInput => ({
  receiptId,
  merchantId: APPLICATION_ID,
  pg: 'sandbox_identity',
  type: 'sms',
  requestedAt: new Date().toISOString(),
  clientIp: '127.0.0.1',
  person: { name: '홍길동', phone: randomPhone(), identityNo: '9001011', carrier: 'SKT' },
  caps: { maxWrongOtps: 5, maxResends: 5 },
  oneActivityPerStep: true,
});

/** The order's input as src/escrow/context.ts gives it for the bench's sandbox_escrow_b payment. */
const escrowInput = (receiptId: string): FloorEscrowInput => ({
  receiptId,
  applicationId: APPLICATION_ID,
  pg: 'sandbox_escrow_b',
  gatewayTid: `spy_${hex24()}`,
  reconcileAfterHours: 72,
});

/** The bench's shipping start resolved for sandbox_escrow_b (resolveShipmentMinimal: no parties). */
const shipment = (): FloorShipment => ({
  trackingNumber: `T${randomBytes(5).toString('hex')}`,
  deliveryCorp: 'CJ대한통운',
  recipient: { name: '', phone: '', address: '', zipcode: '' },
  sender: { name: '', phone: '', zipcode: '', addr1: '', addr2: '' },
});

// ---- the flows: the client's calls of one paygate flow ---------------------------------------------------------

interface FloorFlow {
  /** unmeasured: what each flow needs beforehand (the escrow payment's started order), one value per flow */
  prepare?(count: number): Promise<string[]>;
  run(prepared: string): Promise<void>;
}

function floorFlows(client: Client): Record<string, FloorFlow> {
  // every workflow call of paygate's services runs under this deadline (callWorkflow, shippingStart)
  const underDeadline = <T>(fn: () => Promise<T>) => client.withDeadline(Date.now() + DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, fn);
  const escrowStart = (receiptId: string) =>
    new WithStartWorkflowOperation<typeof escrowWorkflow>('escrowWorkflow', {
      workflowId: `escrow:${receiptId}`,
      workflowIdConflictPolicy: 'USE_EXISTING',
      taskQueue: TASK_QUEUE,
      args: [escrowInput(receiptId)],
    });
  return {
    verification: {
      async run() {
        const receiptId = hex24();
        const workflowId = `verification:${receiptId}`;
        await underDeadline(() =>
          client.workflow.executeUpdateWithStart(otpSentUpdate, {
            args: envelope('otpSent', []),
            startWorkflowOperation: new WithStartWorkflowOperation<typeof verificationWorkflow>('verificationWorkflow', {
              workflowId,
              workflowIdConflictPolicy: 'FAIL',
              taskQueue: TASK_QUEUE,
              args: [verificationInput(receiptId)],
            }),
          }),
        );
        await underDeadline(() =>
          client.workflow
            .getHandle(workflowId)
            .executeUpdate(resendOtpUpdate, { args: envelope('resendOtp', [{ nonce: randomUUID() }]) }),
        );
        // the SMS inbox: no Temporal action
        await underDeadline(() =>
          client.workflow
            .getHandle(workflowId)
            .executeUpdate(confirmOtpUpdate, { args: envelope('confirmOtp', [{ nonce: randomUUID(), otp: '123456' }]) }),
        );
        // the certificate lookup: no Temporal action
      },
    },
    shipping: {
      async prepare(count) {
        const receiptIds: string[] = [];
        for (let i = 0; i < count; i++) {
          const receiptId = hex24();
          await underDeadline(() =>
            client.workflow.start<typeof escrowWorkflow>('escrowWorkflow', {
              workflowId: `escrow:${receiptId}`,
              workflowIdConflictPolicy: 'USE_EXISTING',
              taskQueue: TASK_QUEUE,
              args: [escrowInput(receiptId)],
            }),
          );
          receiptIds.push(receiptId);
        }
        // each order's first task done (started, task scheduled, started, completed), so none is left to the flows
        for (const receiptId of receiptIds) {
          const handle = client.workflow.getHandle(`escrow:${receiptId}`);
          for (let waited = 0; (await handle.describe()).historyLength < 4; waited += 20) {
            if (waited > 30_000) throw new Error(`escrow:${receiptId} had no workflow task done within 30 s`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
        return receiptIds;
      },
      async run(receiptId) {
        await underDeadline(() =>
          client.workflow.executeUpdateWithStart(shippingStartUpdate, {
            args: envelope('shippingStart', [{ nonce: randomUUID(), shipment: shipment() }]),
            startWorkflowOperation: escrowStart(receiptId),
          }),
        );
      },
    },
  };
}

// ---- the workflow bundle, as paygate builds its own --------------------------------------------------------------

// Plain JavaScript (a thread does not inherit tsx's loader), as src/platform/temporal/workflow-bundle.ts runs it;
// the floor's bundle has no interceptor modules (paygate's check envelopes: paygate's cost).
const THREAD_SCRIPT = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  try {
    const { bundleWorkflowCode, DefaultLogger } = require(workerData.sdk);
    const { code } = await bundleWorkflowCode({
      workflowsPath: workerData.workflowsPath,
      logger: new DefaultLogger('WARN'),
      webpackConfigHook: (config) => ({ ...config, optimization: { ...config.optimization, ...workerData.optimization } }),
    });
    parentPort.postMessage({ code });
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.stack) || err) });
  }
})();
`;

/** The floor's workflows bundled with paygate's optimisation settings (WORKFLOW_BUNDLER_OPTIONS), in a thread. */
function bundleInThread(): Promise<{ code: string }> {
  // the hook's settings as plain data, for the thread
  type WebpackConfig = Parameters<NonNullable<WorkerOptions['bundlerOptions']>['webpackConfigHook'] & {}>[0];
  const optimization = WORKFLOW_BUNDLER_OPTIONS.webpackConfigHook!({} as WebpackConfig).optimization;
  const sdk = createRequire(import.meta.url).resolve('@temporalio/worker');
  return new Promise((resolve, reject) => {
    const thread = new Thread(THREAD_SCRIPT, { eval: true, workerData: { sdk, workflowsPath: WORKFLOWS_PATH, optimization } });
    thread.once('message', (msg: { code?: string; error?: string }) =>
      msg.code !== undefined ? resolve({ code: msg.code }) : reject(new Error(`the floor's bundle failed: ${msg.error}`)),
    );
    thread.once('error', reject);
  });
}

// ---- the process -------------------------------------------------------------------------------------------------

const dataDir = process.argv[2];
const send = process.send?.bind(process);
if (!dataDir || !send) throw new Error('usage: run by bench/flows-floor.ts (tsx bench/floor.ts <dataDir>, with an IPC channel)');
const reply = (message: FloorReply) => send(message);

let stopping = false;
const logger = createLogger({
  level: (process.env.LOG_LEVEL ?? 'info') as 'info',
  format: 'json',
  destination: process.stderr,
});
installTemporalLogger(logger, { stopping: () => stopping });
const engineLog = logger.child({ component: 'temporal-engine' });

const engine = await startEmbeddedEngine({
  dataDir: join(dataDir, 'temporal'),
  namespace: NAMESPACE,
  token: randomBytes(32).toString('base64url'),
  clockControl: true,
  onOutput: (line) => engineLog.debug(line),
});
const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec()));
const transport = temporalTransportOptions(engine.transport);
const connection = await Connection.connect({ address: engine.address, connectTimeout: '10 seconds', ...transport });
const client = new Client({ connection, namespace: NAMESPACE, dataConverter: paygateDataConverter(keyring) });
const workerConnection = await NativeConnection.connect({ address: engine.address, ...transport });
const worker = await Worker.create({
  connection: workerConnection,
  namespace: NAMESPACE,
  taskQueue: TASK_QUEUE,
  activities: floorActivities,
  workflowBundle: await bundleInThread(),
  maxCachedWorkflows: DEFAULT_MAX_CACHED_WORKFLOWS,
  dataConverter: paygateDataConverter(keyring, 'worker'),
});
const running = worker.run();
running.catch((err: unknown) => {
  if (stopping) return;
  logger.fatal({ err }, 'the floor worker stopped');
  process.exit(1);
});

const stop = async () => {
  if (stopping) return;
  stopping = true;
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running.catch(() => undefined);
  await workerConnection.close().catch(() => undefined);
  await connection.close().catch(() => undefined);
  await engine.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('disconnect', () => void stop());

const flows = floorFlows(client);

async function measure(request: FloorRequest): Promise<FloorFigures> {
  const flow = flows[request.flow];
  if (!flow) throw new Error(`no floor for the ${request.flow} flow`);
  const prepared = flow.prepare ? await flow.prepare(request.flows) : [];
  const latencies: number[] = [];
  const before = { driver: cpuMs(process.pid), engine: cpuMs(engine.pid) };
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(request.callers, request.flows) }, async () => {
      while (next < request.flows) {
        const i = next++;
        const t0 = performance.now();
        await flow.run(prepared[i] ?? '');
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    perSecond: request.flows / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    cpu: {
      driver: (cpuMs(process.pid) - before.driver) / request.flows,
      engine: (cpuMs(engine.pid) - before.engine) / request.flows,
    },
  };
}

process.on('message', (request: FloorRequest) => {
  measure(request).then(
    (figures) => reply({ kind: 'measured', id: request.id, figures }),
    (err: unknown) =>
      reply({ kind: 'failed', id: request.id, message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
reply({ kind: 'ready', enginePid: engine.pid });

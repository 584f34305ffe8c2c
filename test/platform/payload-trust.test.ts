// Payload trust through the real embedded engine (bin/temporal-devserver, launched as `npm start` does):
// whoever reaches the Temporal frontend without paygate's keyring cannot drive a verification. A
// codec-less client's confirmOtp update (with the right OTP) is rejected before it is accepted; the steps that
// reach the PG run as local activities inside paygate's workflow task, so a codec-less poller on the activity
// queue never sees them; and a regular activity's result answered by such a poller is refused by the workflow,
// which asks the activity again and goes on with the genuine answer. No forgery changes the database or fails a
// workflow task. (The forger here holds the engine's token, as an operator of a real cluster with write access
// would: test/platform/engine-credential.test.ts covers those without.)
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { UPDATE_NOT_AUTHORIZED } from '../../src/platform/temporal/messages.js';
import { verificationWorkflowId } from '../../src/verification/contract.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { SANDBOX_PHONES } from '../../src/sandbox/identity-pg.js';
import { startSandboxGateways, type SandboxGateways } from '../../src/sandbox/server.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { paygateClientOptions } from '../../src/platform/temporal/client.js';
import type { RefusalRecord } from '../../src/platform/temporal/messages.js';
import { paygateWorkerOptions, refusingUnopenedInputs } from '../../src/platform/temporal/worker.js';
import { MESSAGE_REFUSED } from '../../src/workflows/interceptors.js';
import { startEmbeddedEngine, type EmbeddedEngine } from '../../src/platform/temporal/embedded-engine.js';
import { temporalTransportOptions } from '../../src/platform/temporal/transport.js';
import { freshPhone, verificationClient, type VerificationClient } from '../verification/fixtures.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { installTestRuntime } from '../helpers/runtime.js';
import { bounded, eventTypeNames, paygateWorkflowBundle, type HistoryEvent } from '../helpers/temporal.js';

const NAMESPACE = 'default';
const TASK_QUEUE = 'paygate-trust-test';
const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('trust')));

let dataDir: string;
let engine: EmbeddedEngine;
let connection: Connection;
let native: NativeConnection;
let sandbox: SandboxGateways;
let t: TestApp;
let api: VerificationClient;
/** a client with no codec: what anyone who reaches the frontend has */
let raw: Client;
let workflowWorker: { worker: Worker; running: Promise<void> } | undefined;
let activityWorker: { worker: Worker; running: Promise<void> } | undefined;
/** what the workflows reported refusing, as the worker's sink received it */
const refusals: RefusalRecord[] = [];

// Two workers on paygate's queue, so the test can leave the activity queue to an impostor. The workflows' worker
// holds the activities too (local activities run where the workflow task runs) but does not poll the activity queue.
async function startWorker(kind: 'workflows' | 'activities') {
  const activities = refusingUnopenedInputs(
    createActivities({ stores: t.deps.stores, services: t.deps.services, gateways: t.deps.gateways }),
  );
  const worker = await Worker.create({
    connection: native,
    namespace: NAMESPACE,
    taskQueue: TASK_QUEUE,
    ...paygateWorkerOptions(keyring, { onRefusal: (refusal) => refusals.push(refusal) }),
    shutdownGraceTime: '1s',
    activities,
    ...(kind === 'workflows' ? { workflowBundle: await paygateWorkflowBundle(), enableNonLocalActivities: false } : {}),
  });
  return { worker, running: worker.run() };
}

async function stopWorker(w: { worker: Worker; running: Promise<void> } | undefined) {
  if (!w) return;
  if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
  await bounded(w.running, 20_000, 'a worker to stop').catch(() => undefined);
}

beforeAll(async () => {
  // the refused forgeries make the SDK warn about failed workflow tasks: the test runtime prints errors only
  installTestRuntime();
  dataDir = await mkdtemp(path.join(tmpdir(), 'paygate-trust-'));
  engine = await startEmbeddedEngine({ dataDir, namespace: NAMESPACE, token: randomBytes(24).toString('base64url') });
  // the forger is a holder of the engine's token: the codec, not the credential, is what this file tests
  connection = await Connection.connect({ address: engine.address, ...temporalTransportOptions(engine.transport) });
  native = await NativeConnection.connect({ address: engine.address, ...temporalTransportOptions(engine.transport) });
  sandbox = await startSandboxGateways({ host: '127.0.0.1', port: 0 });
  const gateways = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: 5_000 });
  // the app's GET /sandbox/v1/sms reads this sandbox (with its internal-route token, where it has one)
  const token = (sandbox as { token?: string }).token;
  const sandboxAccess = { sandboxUrl: sandbox.url, ...(token ? { sandboxToken: token } : {}) } as { sandboxUrl: string };
  t = await buildTestApp({
    ...sandboxAccess,
    keyring,
    gateways,
    temporal: {
      client: new Client({ connection, namespace: NAMESPACE, ...paygateClientOptions(keyring) }),
      taskQueue: TASK_QUEUE,
    },
  });
  api = verificationClient(t, await t.createProject());
  raw = new Client({ connection, namespace: NAMESPACE });
  workflowWorker = await startWorker('workflows');
  activityWorker = await startWorker('activities');
});

afterAll(async () => {
  await stopWorker(activityWorker);
  await stopWorker(workflowWorker);
  await native?.close().catch(() => undefined);
  await connection?.close().catch(() => undefined);
  await t?.close();
  await sandbox?.close();
  await engine?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const count = (events: HistoryEvent[], type: string) => eventTypeNames(events).filter((n) => n === type).length;

const row = (receiptId: string) =>
  t.deps.database.db.selectFrom('verifications').selectAll().where('receipt_id', '=', receiptId).executeTakeFirstOrThrow();

/** request over HTTP (the real workflow sends the OTP), then read the OTP from the sandbox inbox */
async function requestedWithOtp(): Promise<{ receiptId: string; otp: string }> {
  const phone = freshPhone();
  const res = await api.request({ phone });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.status).toBe(51);
  return { receiptId: res.body.receipt_id as string, otp: await api.latestOtp(phone) };
}

async function history(workflowId: string): Promise<HistoryEvent[]> {
  return (await raw.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

describe('payloads not sealed by paygate are refused', () => {
  it("a codec-less client's confirmOtp update, even with the right OTP, is rejected before it is accepted and writes nothing", async () => {
    const { receiptId, otp } = await requestedWithOtp();
    const before = await row(receiptId);
    const workflowId = verificationWorkflowId(receiptId);
    const eventsBefore = eventTypeNames(await history(workflowId));

    const forged = await raw.workflow
      .getHandle(workflowId)
      .executeUpdate('confirmOtp', { args: [{ otp }] })
      .then(
        (result) => ({ accepted: result }),
        (err: unknown) => err,
      );
    expect(forged).toBeInstanceOf(WorkflowUpdateFailedError);
    expect((forged as WorkflowUpdateFailedError).cause).toMatchObject({ type: MESSAGE_REFUSED });
    expect(refusals).toContainEqual({ kind: 'update', name: 'confirmOtp', reason: 'not-sealed' });

    expect(await row(receiptId)).toEqual(before);
    // rejected in the validator stage: no trace in history, no gateway call scheduled
    // (the request's own otpSent update is in history already)
    expect(eventTypeNames(await history(workflowId))).toEqual(eventsBefore);

    // the workflow is not poisoned: paygate's own confirm with the same OTP still verifies
    const confirmed = await api.confirm(receiptId, otp);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.status).toBe(12);
  });

  it('the confirm runs inside the workflow task: a codec-less poller on the activity queue gets no task of it', async () => {
    const { receiptId, otp } = await requestedWithOtp();
    const workflowId = verificationWorkflowId(receiptId);
    // leave the activity queue to the impostor
    await stopWorker(activityWorker);
    activityWorker = undefined;
    const service = connection.workflowService;
    const stopPolling = new AbortController();
    const impostorPoll = connection
      .withAbortSignal(stopPolling.signal, () =>
        service.pollActivityTaskQueue({ namespace: NAMESPACE, taskQueue: { name: TASK_QUEUE }, identity: 'impostor' }),
      )
      .then(
        (task) => ({ task }),
        (err: unknown) => ({ err }),
      );
    try {
      // paygate's own (sealed) confirm verifies with no worker on the activity queue
      const confirmed = await api.confirm(receiptId, otp);
      expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
      expect(confirmed.body.status).toBe(12);
    } finally {
      stopPolling.abort();
    }
    // the impostor's poll ended by its own abort, with no task: nothing of the confirm was offered to it
    const polled = await bounded(impostorPoll, 10_000, "the impostor's poll to end");
    expect('task' in polled ? (polled.task.taskToken?.length ?? 0) : 0).toBe(0);
    expect((await row(receiptId)).status).toBe(12);
    const events = await history(workflowId);
    expect(eventTypeNames(events)).not.toContain('ACTIVITY_TASK_SCHEDULED');
    expect(count(events, 'MARKER_RECORDED')).toBeGreaterThanOrEqual(2);
    activityWorker = await startWorker('activities');
  });

  it('a forged result of a regular activity from a codec-less poller is refused: the activity is asked again, no task fails', async () => {
    // the sandbox PG cannot deliver this phone's SMS: the workflow records the failure with a regular activity
    await stopWorker(activityWorker);
    activityWorker = undefined;
    const phone = SANDBOX_PHONES.sendFails;
    const requested = api.request({ phone });

    const service = connection.workflowService;
    const task = await bounded(
      service.pollActivityTaskQueue({ namespace: NAMESPACE, taskQueue: { name: TASK_QUEUE }, identity: 'impostor' }),
      30_000,
      'the recordVerificationRequestFailed task',
    );
    expect(task.activityType?.name).toBe('recordVerificationRequestFailed');
    const workflowId = task.workflowExecution!.workflowId!;
    const receiptId = workflowId.slice(verificationWorkflowId('').length);
    const before = await row(receiptId);
    const refusedBefore = refusals.filter((r) => r.kind === 'activity-result').length;
    // "the failure is recorded": a workflow that believed it would tell the caller of a write that never happened
    await service.respondActivityTaskCompleted({
      namespace: NAMESPACE,
      taskToken: task.taskToken,
      identity: 'impostor',
      result: { payloads: [defaultPayloadConverter.toPayload(null)] },
    });
    // the workflow reports the refusal and waits before it asks again: nothing written meanwhile
    const deadline = Date.now() + 30_000;
    while (refusals.filter((r) => r.kind === 'activity-result').length === refusedBefore && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(refusals).toContainEqual({ kind: 'activity-result', name: 'recordVerificationRequestFailed', reason: 'not-sealed' });
    expect(await row(receiptId)).toEqual(before);

    // activities back: the workflow asks again, the genuine activity records the failure and the caller gets it
    activityWorker = await startWorker('activities');
    const res = await bounded(requested, 30_000, 'the request after the refused result');
    expect(res.status, JSON.stringify(res.body)).not.toBe(200);
    expect(JSON.stringify(res.body)).toContain('AUTH_CONFIRM_READY_FAILED');
    const after = await row(receiptId);
    expect(after).not.toEqual(before);
    expect(after.failure_error_name).toBe('AUTH_CONFIRM_READY_FAILED');
    expect(eventTypeNames(await history(workflowId))).not.toContain('WORKFLOW_TASK_FAILED');
  });
});

describe('updates need a fresh proof sealed by paygate', () => {
  const UPDATE_COMPLETED_STAGE =
    temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;

  /** a raw update as anyone on the frontend can send it: the arguments exactly as given */
  const rawUpdate = (workflowId: string, name: string, payloads: temporal.api.common.v1.IPayload[]) =>
    connection.workflowService.updateWorkflowExecution({
      namespace: NAMESPACE,
      workflowExecution: { workflowId },
      request: { meta: { updateId: randomUUID(), identity: 'impostor' }, input: { name, args: { payloads } } },
      waitPolicy: { lifecycleStage: UPDATE_COMPLETED_STAGE },
    });

  it("a codec-less client's resendOtp without arguments is rejected: no SMS, no history, no counter", async () => {
    const phone = freshPhone();
    const requested = await api.request({ phone });
    expect(requested.status, JSON.stringify(requested.body)).toBe(200);
    const receiptId = requested.body.receipt_id as string;
    const workflowId = verificationWorkflowId(receiptId);
    const before = await row(receiptId);
    const eventsBefore = eventTypeNames(await history(workflowId));

    const forged = await raw.workflow
      .getHandle(workflowId)
      .executeUpdate('resendOtp')
      .then(
        (result) => ({ accepted: result }),
        (err: unknown) => err,
      );
    expect(forged).toBeInstanceOf(WorkflowUpdateFailedError);
    // no envelope: refused before the proof is even looked at
    expect((forged as WorkflowUpdateFailedError).cause).toMatchObject({ type: MESSAGE_REFUSED });
    expect(refusals).toContainEqual({ kind: 'update', name: 'resendOtp', reason: 'no-envelope' });

    expect(await row(receiptId)).toEqual(before);
    expect(eventTypeNames(await history(workflowId))).toEqual(eventsBefore);
    expect(await api.inbox(phone)).toHaveLength(1);
    // paygate's own resend still works
    const resent = await api.realarm(receiptId);
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(await api.inbox(phone)).toHaveLength(2);
  });

  it('a workflow a codec-less client starts without its input is refused at once: no failed task, a refusal recorded', async () => {
    for (const [type, args] of [
      ['scheduleWorkflow', []],
      ['verificationWorkflow', [null]],
    ] as const) {
      const workflowId = `forged-start-${type}-${randomUUID()}`;
      const handle = await raw.workflow.start(type, { taskQueue: TASK_QUEUE, workflowId, args: [...args] });
      const outcome = await bounded(
        handle.result().then(
          () => 'completed',
          (err: unknown) => err,
        ),
        30_000,
        'the forged run to end',
      );
      expect(String((outcome as Error).cause ?? outcome), type).toMatch(/not sealed by paygate/);
      expect(refusals).toContainEqual({ kind: 'workflow-input', name: 'input', reason: 'no-input' });
      // refused in its first task, which completed: nothing retried, nothing failed
      const events = await history(workflowId);
      expect(count(events, 'WORKFLOW_TASK_FAILED'), type).toBe(0);
      expect(count(events, 'WORKFLOW_EXECUTION_FAILED'), type).toBe(1);
    }
  });

  it('a sealed confirm argument copied from the history cannot be sent again (each proof is taken once)', async () => {
    const { receiptId, otp } = await requestedWithOtp();
    const workflowId = verificationWorkflowId(receiptId);
    const wrong = otp === '000000' ? '111111' : '000000';
    const refused = await api.confirm(receiptId, wrong);
    expect(refused.body.code).toBe(2405);

    // the sealed argument of that confirm, as it stands in the engine's history
    const accepted = (await history(workflowId)).find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'confirmOtp',
    );
    const sealedArgs = accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads;
    expect(sealedArgs).toHaveLength(1);
    const eventsBefore = eventTypeNames(await history(workflowId));

    const replayed = await rawUpdate(workflowId, 'confirmOtp', sealedArgs!);
    expect(replayed.outcome?.failure?.applicationFailureInfo?.type).toBe(UPDATE_NOT_AUTHORIZED);
    // refused in the validator: nothing in history, no gateway call, no wrong OTP counted
    expect(eventTypeNames(await history(workflowId))).toEqual(eventsBefore);
    const confirmed = await api.confirm(receiptId, otp);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.status).toBe(12);
  });
});

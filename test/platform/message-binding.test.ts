// Messages bound to their workflow, through the real app, engine and worker. Anyone who reaches the Temporal
// frontend with a plain client (no codec) can read a history and send signals and updates: a sealed argument
// copied from one project's workflow must open in no other (a reserve's revoke, a verification's resend, an escrow
// order's PG notifications), and a message that is plain, empty, garbage or lifted from another workflow must be
// dropped or rejected with a record, never fail a workflow task, and leave the workflow applying the next genuine
// message — for every signal and update paygate's workflows take.
import { randomBytes, randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escrowWorkflowId } from '../../src/escrow/contract.js';
import { reserveWorkflowId } from '../../src/reserves/contract.js';
import { scheduleWorkflowId } from '../../src/schedules/contract.js';
import { verificationWorkflowId } from '../../src/verification/contract.js';
import { MESSAGE_REFUSED } from '../../src/workflows/interceptors.js';
import type { TestApp, TestProject } from '../helpers/app.js';
import { eventTypeNames, type HistoryEvent, workerLogs } from '../helpers/temporal.js';
import { keyInClient } from '../payments/key-in-fixtures.js';
import { freshPhone, verificationClient } from '../verification/fixtures.js';
import { MESSAGE_EVENTS } from '../../src/webhooks/rules.js';
import {
  DELIVERY_WORKFLOW_TYPE,
  type DeliveryWorkflow,
  deliveryWorkflowId,
  endpointDisabledSignal,
} from '../../src/webhooks/contract.js';
import { attemptRows, deliveryRow, eventually, startReceiver, untilDelivery, webhookClient } from '../webhooks/fixtures.js';
import { createEscrowProject, escrowClient, startEscrowApp } from '../escrow/fixtures.js';

type Payload = temporal.api.common.v1.IPayload;
const HOUR_MS = 60 * 60 * 1000;
const UPDATE_COMPLETED =
  temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;

let t: TestApp;
beforeAll(async () => {
  t = await startEscrowApp();
}, 120_000);
afterAll(async () => {
  await t?.close();
});

const service = () => t.temporal!.env.connection.workflowService;
const namespace = () => t.temporal!.env.namespace ?? 'default';
const history = (workflowId: string): Promise<HistoryEvent[]> => t.temporal!.rawHistory(workflowId);

/** An update as anyone on the frontend can send it: the payloads exactly as given; answers the failure type, if any. */
async function rawUpdate(workflowId: string, name: string, payloads: Payload[]): Promise<string | undefined> {
  const res = await service().updateWorkflowExecution({
    namespace: namespace(),
    workflowExecution: { workflowId },
    request: { meta: { updateId: randomUUID(), identity: 'impostor' }, input: { name, args: { payloads } } },
    waitPolicy: { lifecycleStage: UPDATE_COMPLETED },
  });
  return res.outcome?.failure?.applicationFailureInfo?.type ?? (res.outcome?.failure ? 'failure' : undefined);
}

async function rawSignal(workflowId: string, name: string, payloads: Payload[]): Promise<void> {
  await service().signalWorkflowExecution({
    namespace: namespace(),
    workflowExecution: { workflowId },
    signalName: name,
    input: { payloads },
    identity: 'impostor',
    requestId: randomUUID(),
  });
}

/** The sealed arguments of the first accepted update `name` in a history. */
function updateArgs(events: HistoryEvent[], name: string): Payload[] {
  const accepted = events.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === name);
  const payloads = accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads;
  expect(payloads, `an accepted ${name} update in the history`).toBeTruthy();
  return payloads!;
}

/** The sealed arguments of every signal `name` in a history. */
function signalArgs(events: HistoryEvent[], name: string): Payload[][] {
  return events
    .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === name)
    .map((e) => e.workflowExecutionSignaledEventAttributes!.input?.payloads ?? []);
}

/** The sealed input a workflow was started with: a payload sealed for that workflow, lifted from its history. */
function startInput(events: HistoryEvent[]): Payload[] {
  const payloads = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  expect(payloads?.length).toBeGreaterThan(0);
  return payloads!;
}

/**
 * The four forgeries of a message: plain JSON (what a codec-less client sends), no argument, garbage dressed as a
 * sealed payload, and a payload sealed for another workflow (`elsewhere`).
 */
function forgeries(plainArg: unknown, elsewhere: Payload[]): Record<string, Payload[]> {
  const looksSealed: Payload = {
    metadata: {
      encoding: Buffer.from('binary/encrypted'),
      'encryption-key-id': Buffer.from(t.deps.keyring!.currentKeyId),
      'encryption-binding': Buffer.from('v2'),
    },
    data: randomBytes(96),
  };
  return {
    plain: [defaultPayloadConverter.toPayload(plainArg) as Payload],
    empty: [],
    garbage: [looksSealed],
    'cross-workflow': elsewhere,
  };
}

/** Until the workflow has no task outstanding (its history ends with a completed task or what one commanded). */
async function settled(workflowId: string): Promise<void> {
  const busy = ['WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED', 'ACTIVITY_TASK_SCHEDULED', 'ACTIVITY_TASK_STARTED'];
  await eventually(async () => {
    const types = eventTypeNames(await history(workflowId));
    return busy.includes(types[types.length - 1]!) ? undefined : true;
  }, `${workflowId} to be idle`);
}

/** How many refusals of `name` for `reason` the worker counted (paygate_workflow_refusals_total). */
async function refusalsCounted(name: string, reason: string): Promise<number> {
  const text = await t.deps.metrics!.render();
  const line = text
    .split('\n')
    .find(
      (l) => l.startsWith('paygate_workflow_refusals_total{') && l.includes(`name="${name}"`) && l.includes(`reason="${reason}"`),
    );
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function expectNoFailedTask(workflowId: string): Promise<void> {
  expect(eventTypeNames(await history(workflowId))).not.toContain('WORKFLOW_TASK_FAILED');
}

/** Sends each forgery of update `name`; each is rejected before it is accepted and leaves no trace in the history. */
async function forgeUpdates(workflowId: string, name: string, plainArg: unknown, elsewhere: Payload[]): Promise<void> {
  await settled(workflowId);
  const before = eventTypeNames(await history(workflowId));
  for (const [form, payloads] of Object.entries(forgeries(plainArg, elsewhere))) {
    expect(await rawUpdate(workflowId, name, payloads), `${name} sent ${form}`).toBe(MESSAGE_REFUSED);
  }
  expect(eventTypeNames(await history(workflowId))).toEqual(before);
  await expectNoFailedTask(workflowId);
}

/** Sends each forgery of signal `name`, then waits until the worker has taken them all (the history says so). */
async function forgeSignals(workflowId: string, name: string, plainArg: unknown, elsewhere: Payload[]): Promise<void> {
  const forms = Object.values(forgeries(plainArg, elsewhere));
  const signalled = signalArgs(await history(workflowId), name).length;
  for (const payloads of forms) await rawSignal(workflowId, name, payloads);
  await eventually(async () => {
    const events = await history(workflowId);
    const types = eventTypeNames(events);
    const lastSignal = types.lastIndexOf('WORKFLOW_EXECUTION_SIGNALED');
    // every forgery recorded, and a workflow task completed after the last one: the worker has applied (dropped) it
    return signalArgs(events, name).length === signalled + forms.length &&
      types.slice(lastSignal).includes('WORKFLOW_TASK_COMPLETED')
      ? true
      : undefined;
  }, `the ${name} forgeries taken by the worker`);
  await expectNoFailedTask(workflowId);
}

// ---------------------------------------------------------------------------------------------------------------

const inMs = (ms: number) => new Date(t.clock.now().getTime() + ms).toISOString();
let orders = 0;

async function reserveFor(project: TestProject) {
  const api = keyInClient(t, project);
  const key = await api.issuedKey();
  const created = await api.post('/v2/subscribe/payment/reserve', {
    order_name: 'Annual plan',
    order_id: `binding-${Date.now()}-${++orders}`,
    price: 12_000,
    billing_key: key,
    reserve_execute_at: inMs(HOUR_MS),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const reserveId = created.body.reserve_id as string;
  return {
    api,
    reserveId,
    workflowId: reserveWorkflowId(reserveId),
    status: async () => (await api.get(`/v2/subscribe/payment/reserve/${reserveId}`)).body.status,
    revoke: () => api.send('DELETE', `/v2/subscribe/payment/reserve/${reserveId}`),
  };
}

async function verificationFor(project: TestProject) {
  const api = verificationClient(t, project);
  const phone = freshPhone();
  const requested = await api.request({ phone });
  expect(requested.status, JSON.stringify(requested.body)).toBe(200);
  const receiptId = requested.body.receipt_id as string;
  return { api, phone, receiptId, workflowId: verificationWorkflowId(receiptId) };
}

async function escrowOrderFor(project: TestProject, opts: { shipped?: boolean } = {}) {
  const api = escrowClient(t, project);
  const paid = await api.pay({ pg: 'sandbox_escrow_b', escrow: true, price: 21_000 });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  const receiptId = paid.body.receipt_id as string;
  if (opts.shipped !== false) {
    const shipped = await api.ship(receiptId, { tracking_number: `T-${++orders}`, delivery_corp: 'UPS' });
    expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
  }
  const status = async () => ((await api.receipt(receiptId)).body.escrow_data as { status: number }).status;
  return { api, receiptId, workflowId: escrowWorkflowId(receiptId), status };
}

async function scheduleFor(project: TestProject) {
  const api = keyInClient(t, project);
  const key = await api.issuedKey();
  const created = await api.post('/v2/subscribe/schedules', {
    order_name: 'Monthly plan',
    price: 9_900,
    interval: 'month',
    billing_key: key,
    start_at: inMs(HOUR_MS),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const scheduleId = created.body.schedule_id as string;
  const path = `/v2/subscribe/schedules/${scheduleId}`;
  const call = async (method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: Record<string, unknown>) => {
    const res = await t.app.inject({
      method,
      url,
      headers: { authorization: project.basicAuth },
      ...(body === undefined ? {} : { payload: body }),
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Record<string, unknown>;
  };
  return {
    api,
    scheduleId,
    workflowId: scheduleWorkflowId(scheduleId),
    status: async () => (await api.get(path)).body.status,
    pause: () => call('POST', `${path}/pause`),
    resume: () => call('POST', `${path}/resume`),
    cancel: () => call('DELETE', path),
    patch: (body: Record<string, unknown>) => call('PATCH', path, body),
  };
}

const proofLike = () => ({ nonce: randomUUID().replaceAll('-', '') });

describe("a sealed argument copied from one project's workflow opens in no other", () => {
  it("project A's revokeReserve argument does not revoke project B's reserve", async () => {
    const a = await reserveFor(await t.createProject());
    expect((await a.revoke()).status).toBe(200);
    const lifted = updateArgs(await history(a.workflowId), 'revokeReserve');

    const b = await reserveFor(await t.createProject());
    const counted = await refusalsCounted('revokeReserve', 'unopenable');
    expect(await rawUpdate(b.workflowId, 'revokeReserve', lifted)).toBe(MESSAGE_REFUSED);
    expect(await refusalsCounted('revokeReserve', 'unopenable')).toBe(counted + 1);
    expect(workerLogs()).toContain('a workflow refused what it was sent');
    expect(await b.status()).toBe('reserved');
    expect(eventTypeNames(await history(b.workflowId))).not.toContain('WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
    // B's own revoke is still B's to make
    expect((await b.revoke()).status).toBe(200);
    expect(await b.status()).toBe('revoked');
  });

  it("project A's resendOtp argument sends no SMS to project B's user", async () => {
    const a = await verificationFor(await t.createProject());
    expect((await a.api.realarm(a.receiptId)).status).toBe(200);
    const lifted = updateArgs(await history(a.workflowId), 'resendOtp');

    const b = await verificationFor(await t.createProject());
    expect(await b.api.inbox(b.phone)).toHaveLength(1);
    expect(await rawUpdate(b.workflowId, 'resendOtp', lifted)).toBe(MESSAGE_REFUSED);
    expect(await b.api.inbox(b.phone)).toHaveLength(1);
    expect((await b.api.realarm(b.receiptId)).status).toBe(200);
    expect(await b.api.inbox(b.phone)).toHaveLength(2);
  });

  it("project A's escrow pgNotification signals do not move project B's order or refund it", async () => {
    const a = await escrowOrderFor(await createEscrowProject(t));
    expect((await a.api.buyer(a.receiptId, { event: 'purchase_rejected' })).status).toBe(202);
    await eventually(async () => ((await a.status()) === -2 ? true : undefined), 'A at -2');
    expect((await a.api.buyer(a.receiptId, { event: 'rejection_approved' })).status).toBe(202);
    await eventually(async () => ((await a.status()) === -3 ? true : undefined), 'A at -3');
    const lifted = signalArgs(await history(a.workflowId), 'pgNotification');
    expect(lifted.length).toBeGreaterThanOrEqual(2);

    const b = await escrowOrderFor(await createEscrowProject(t));
    const eventsBefore = (await b.api.events(b.receiptId)).body;
    const signalled = signalArgs(await history(b.workflowId), 'pgNotification').length;
    for (const payloads of lifted) await rawSignal(b.workflowId, 'pgNotification', payloads);
    await eventually(async () => {
      const events = await history(b.workflowId);
      const types = eventTypeNames(events);
      return signalArgs(events, 'pgNotification').length === signalled + lifted.length &&
        types.slice(types.lastIndexOf('WORKFLOW_EXECUTION_SIGNALED')).includes('WORKFLOW_TASK_COMPLETED')
        ? true
        : undefined;
    }, 'the lifted signals taken by B');
    expect(await b.status()).toBe(3);
    expect(await refusalsCounted('pgNotification', 'unopenable')).toBeGreaterThanOrEqual(lifted.length);
    expect((await b.api.receipt(b.receiptId)).body.cancelled_price ?? 0).toBe(0);
    expect((await b.api.events(b.receiptId)).body).toEqual(eventsBefore);
    await expectNoFailedTask(b.workflowId);
    // B's own PG notification still applies
    expect((await b.api.buyer(b.receiptId, { event: 'purchase_rejected' })).status).toBe(202);
    await eventually(async () => ((await b.status()) === -2 ? true : undefined), 'B at -2');
  });
});

describe('a plain, empty, garbage or cross-workflow message is dropped with a record; the next genuine one applies', () => {
  it('revokeReserve (update)', async () => {
    const sibling = await reserveFor(await t.createProject());
    const r = await reserveFor(await t.createProject());
    await forgeUpdates(r.workflowId, 'revokeReserve', proofLike(), startInput(await history(sibling.workflowId)));
    expect(await r.status()).toBe('reserved');
    expect((await r.revoke()).status).toBe(200);
    expect(await r.status()).toBe('revoked');
  });

  it('otpSent, resendOtp and confirmOtp (updates)', async () => {
    const project = await t.createProject();
    const sibling = await verificationFor(project);
    const v = await verificationFor(project);
    const elsewhere = startInput(await history(sibling.workflowId));
    await forgeUpdates(v.workflowId, 'otpSent', {}, elsewhere);
    await forgeUpdates(v.workflowId, 'resendOtp', proofLike(), elsewhere);
    const otp = await v.api.latestOtp(v.phone);
    await forgeUpdates(v.workflowId, 'confirmOtp', { ...proofLike(), otp }, elsewhere);
    expect(await v.api.inbox(v.phone)).toHaveLength(1);
    expect((await v.api.realarm(v.receiptId)).status).toBe(200);
    const confirmed = await v.api.confirm(v.receiptId, await v.api.latestOtp(v.phone));
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.status).toBe(12);
  });

  it('shippingStart (update) and pgNotification (signal)', async () => {
    const project = await createEscrowProject(t);
    const sibling = await escrowOrderFor(project);
    const o = await escrowOrderFor(project, { shipped: false });
    const elsewhere = startInput(await history(sibling.workflowId));
    await forgeUpdates(o.workflowId, 'shippingStart', { tracking_number: 'X', delivery_corp: 'UPS' }, elsewhere);
    expect(await o.status()).toBe(0);
    const shipped = await o.api.ship(o.receiptId, { tracking_number: 'REAL-1', delivery_corp: 'UPS' });
    expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
    expect(await o.status()).toBe(3);

    await forgeSignals(o.workflowId, 'pgNotification', { event: 'purchase_confirmed', notificationId: 'forged' }, elsewhere);
    expect(await o.status()).toBe(3);
    expect((await o.api.buyer(o.receiptId, { event: 'purchase_confirmed' })).status).toBe(202);
    await eventually(async () => ((await o.status()) === 1 ? true : undefined), 'the order confirmed');
  });

  it('pauseSchedule, resumeSchedule, patchSchedule and cancelSchedule (updates)', async () => {
    const project = await t.createProject();
    const sibling = await scheduleFor(project);
    const s = await scheduleFor(project);
    const elsewhere = startInput(await history(sibling.workflowId));
    const runProof = { ...proofLike(), runId: 'any' };
    await forgeUpdates(s.workflowId, 'pauseSchedule', runProof, elsewhere);
    expect(await s.status()).toBe('active');
    expect((await s.pause()).status).toBe('paused');
    await forgeUpdates(s.workflowId, 'resumeSchedule', runProof, elsewhere);
    expect(await s.status()).toBe('paused');
    expect((await s.resume()).status).toBe('active');
    await forgeUpdates(s.workflowId, 'patchSchedule', runProof, elsewhere);
    expect(await s.patch({ price: 5_000 })).toMatchObject({ price: 5_000 });
    await forgeUpdates(s.workflowId, 'cancelSchedule', runProof, elsewhere);
    expect(await s.status()).toBe('active');
    expect((await s.cancel()).status).toBe('cancelled');
  });

  it("endpointDisabled (signal) to an earlier release's delivery run waiting on its ladder", async () => {
    const project = await t.createProject();
    const receiver = await startReceiver();
    try {
      const api = webhookClient(t, project);
      expect((await api.put({ url: receiver.url })).status).toBe(200);
      receiver.answer({ status: 500 });
      const store = t.app.deps.stores.webhooks;
      const endpoint = (await store.findEndpoint(project.applicationId, 'message'))!;
      // deliveries no longer start a workflow: a row and its run as an earlier release saved and started them
      const legacyRun = async (ref: string) => {
        const tags = [`rcpt_${ref}`, ref];
        const id = `${ref}_${randomUUID()}`;
        await store.createDelivery({
          deliveryId: id,
          endpoint,
          event: MESSAGE_EVENTS[302],
          eventCode: 302,
          tags,
          body: JSON.stringify({ event: MESSAGE_EVENTS[302], event_code: 302, ref_id: ref, tags }),
          sendsWhenDisabled: false,
          createdAt: t.clock.now(),
          firstAttemptAt: t.clock.now(),
        });
        await t.deps.database.db
          .updateTable('webhook_deliveries')
          .set({ next_attempt_at: null, last_attempt: null })
          .where('delivery_id', '=', id)
          .execute();
        await t.temporal!.client.workflow.start<DeliveryWorkflow>(DELIVERY_WORKFLOW_TYPE, {
          workflowId: deliveryWorkflowId(id),
          taskQueue: t.temporal!.taskQueue,
          args: [{ deliveryId: id, firstAttempt: 1, lastAttempt: 10 }],
        });
        return id;
      };
      const sibling = await legacyRun('sibling');
      const id = await legacyRun('waiting');
      await untilDelivery(t, id, 'ready', 1);
      const workflowId = deliveryWorkflowId(id);
      await forgeSignals(workflowId, 'endpointDisabled', {}, startInput(await history(deliveryWorkflowId(sibling))));
      // still waiting on its ladder: the row ready, the run running
      expect((await deliveryRow(t, id))!.status).toBe('ready');
      expect((await t.temporal!.client.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');
      // the genuine signal ends the run at once; the row says what the attempt left
      await t.temporal!.client.workflow.getHandle(workflowId).signal(endpointDisabledSignal);
      await eventually(
        async () =>
          (await t.temporal!.client.workflow.getHandle(workflowId).describe()).status.name === 'COMPLETED' ? true : undefined,
        'the stopped run to end',
      );
      expect((await attemptRows(t, id)).length).toBe(1);
    } finally {
      await receiver.close();
    }
  });
});

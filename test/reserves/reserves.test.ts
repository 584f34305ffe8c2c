// Reserved charges over HTTP through the real worker, the time-skipping engine and the sandbox PG: a reserve
// charges once at its time (the receipt to feedback_url), a revoked one never; a charge whose PG answer was
// lost is retried by the activity and re-drives the same PG charge (executed once); revoking while executing
// is refused by the workflow's validator without history; a declined card fails the reserve with its PG code;
// bad input is a catalog error and stores nothing.
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reserveWorkflowId, revokeReserveUpdate } from '../../src/reserves/contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../../src/platform/temporal/messages.js';
import { chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { bounded, eventTypeNames } from '../helpers/temporal.js';
import { armSandboxFault, keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { eventually, expectApiError, type Receiver, startReceiver } from '../webhooks/fixtures.js';

const HOUR_MS = 60 * 60 * 1000;
const ISO_KST = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+09:00$/;

describe('reserved charges', () => {
  let t: TestApp;
  let feedback: Receiver;
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    feedback = await startReceiver('/feedback');
  }, 120_000);
  afterAll(async () => {
    await feedback?.close();
    await t?.close();
  });

  const setup = async () => {
    const project = await t.createProject();
    const api = keyInClient(t, project);
    return { project, api, key: await api.issuedKey() };
  };
  const inMs = (ms: number) => new Date(t.clock.now().getTime() + ms).toISOString();
  let orders = 0;
  const reserve = (api: ReturnType<typeof keyInClient>, body: Record<string, unknown>, headers?: Record<string, string>) =>
    api.post(
      '/v2/subscribe/payment/reserve',
      { order_name: 'Annual plan', order_id: `reserve-${Date.now()}-${++orders}`, price: 12_000, ...body },
      headers,
    );
  const lookup = (api: ReturnType<typeof keyInClient>, reserveId: string) =>
    api.get(`/v2/subscribe/payment/reserve/${reserveId}`);
  const revoke = (api: ReturnType<typeof keyInClient>, reserveId: string) =>
    api.send('DELETE', `/v2/subscribe/payment/reserve/${reserveId}`);
  const untilStatus = (api: ReturnType<typeof keyInClient>, reserveId: string, status: string) =>
    eventually(async () => {
      const res = await lookup(api, reserveId);
      return res.body.status === status ? res.body : undefined;
    }, `reserve ${reserveId} to be ${status}`);
  const executions = (project: TestProject, orderId: string) =>
    sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, orderId));
  const reserveRows = async (project: TestProject) =>
    (
      await t.deps.database.db
        .selectFrom('reserves')
        .select('reserve_id')
        .where('application_id', '=', project.applicationId)
        .execute()
    ).length;

  it('charges once at reserve_execute_at through the charge path; feedback_url gets the receipt', async () => {
    const { project, api, key } = await setup();
    const user = { username: 'Hong Gildong', phone: '01012345678' };
    const created = await reserve(api, {
      billing_key: key,
      reserve_execute_at: inMs(2 * HOUR_MS),
      feedback_url: feedback.url,
      user,
      metadata: { plan: 'annual' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(['reserve_execute_at', 'reserve_id']);
    expect(created.body.reserve_execute_at).toMatch(ISO_KST);
    const reserveId = created.body.reserve_id as string;

    const before = await lookup(api, reserveId);
    expect(before.body).toMatchObject({ status: 'reserved', price: 12_000, tax_free: 0, user, metadata: { plan: 'annual' } });
    expect(before.body.receipt_id).toBeUndefined();
    expect(before.body.reserve_started_at).toBeUndefined();
    const orderId = before.body.order_id as string;
    // the buyer is personal data: stored sealed, never in plain text
    const row = await t.deps.database.db
      .selectFrom('reserves')
      .selectAll()
      .where('reserve_id', '=', reserveId)
      .executeTakeFirstOrThrow();
    expect(row.user_sealed).not.toContain(user.phone);

    // an hour early: nothing happens
    await t.temporal!.skipTime(HOUR_MS);
    expect((await lookup(api, reserveId)).body.status).toBe('reserved');
    expect(await executions(project, orderId)).toBe(0);

    await t.temporal!.skipTime(HOUR_MS + 1000);
    const paid = await untilStatus(api, reserveId, 'paid');
    expect(paid.reserve_started_at).toMatch(ISO_KST);
    expect(paid.reserve_finished_at).toMatch(ISO_KST);
    const receiptId = paid.receipt_id as string;
    const receipt = await api.get(`/v2/receipt/${receiptId}`);
    expect(receipt.body).toMatchObject({ status: 1, order_id: orderId, price: 12_000 });

    const delivered = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(receiptId)),
      'the reserve feedback',
    );
    expect(JSON.parse(delivered.body)).toMatchObject({ receipt_id: receiptId, reserve_id: reserveId, status: 1 });
    expect(delivered.headers['webhook-signature']).toBeDefined();

    // long after: still one charge, one feedback; the order_id is taken for a direct charge
    await t.temporal!.skipTime(24 * HOUR_MS);
    expect(await executions(project, orderId)).toBe(1);
    expect(feedback.requests.filter((r) => r.body.includes(receiptId))).toHaveLength(1);
    expectApiError(await api.charge(key, { order_id: orderId }), 409, 9410, 'ORDER_ID_DUPLICATED');
    expectApiError(await revoke(api, reserveId), 409, 9441, 'RESERVE_NOT_REVOKABLE');
  });

  it('a retry of a reserve whose first request stored it and died before starting its run starts that run; it charges once', async () => {
    const { project, api, key } = await setup();
    const orderId = `reserve-orphan-${Date.now()}`;
    const executeAt = new Date(t.clock.now().getTime() + HOUR_MS);
    // what the first request left when its process was killed between storing the reserve and starting its run
    const orphanId = randomUUID().replaceAll('-', '').slice(0, 24);
    const stored = await t.deps.stores.reserves.insert({
      reserveId: orphanId,
      applicationId: project.applicationId,
      billingKey: key,
      orderId,
      orderName: 'Annual plan',
      price: 12_000,
      taxFree: 0,
      quota: 0,
      user: undefined,
      items: undefined,
      metadata: undefined,
      feedback: undefined,
      requestedAt: t.clock.now(),
      executeAt,
    });
    expect(stored?.status).toBe('reserved');
    const body = { billing_key: key, order_id: orderId, reserve_execute_at: executeAt.toISOString() };

    // the merchant's retry of the same reserve: the stored reserve, its run started now
    const retried = await reserve(api, body);
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.reserve_id).toBe(orphanId);
    // asked again once its run exists, or with another amount: the order_id is taken
    expectApiError(await reserve(api, body), 409, 9410, 'ORDER_ID_DUPLICATED');
    expectApiError(await reserve(api, { ...body, price: 13_000 }), 409, 9410, 'ORDER_ID_DUPLICATED');

    await t.temporal!.skipTime(HOUR_MS + 1000);
    const paid = await untilStatus(api, orphanId, 'paid');
    expect(paid.order_id).toBe(orderId);
    expect(await executions(project, orderId)).toBe(1);
    expect(await reserveRows(project)).toBe(1);
  });

  it('a revoked reserve never charges; a second revoke is 9441', async () => {
    const { project, api, key } = await setup();
    const created = await reserve(api, { billing_key: key, reserve_execute_at: inMs(HOUR_MS) });
    const reserveId = created.body.reserve_id as string;
    const revoked = await revoke(api, reserveId);
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body).toEqual({ reserve_id: reserveId, success: true });
    const view = await lookup(api, reserveId);
    expect(view.body.status).toBe('revoked');
    expect(view.body.reserve_revoked_at).toMatch(ISO_KST);
    expectApiError(await revoke(api, reserveId), 409, 9441, 'RESERVE_NOT_REVOKABLE');

    await t.temporal!.skipTime(2 * HOUR_MS);
    expect((await lookup(api, reserveId)).body.status).toBe('revoked');
    expect(await executions(project, view.body.order_id as string)).toBe(0);
    const result = await bounded(
      t.temporal!.client.workflow.getHandle(reserveWorkflowId(reserveId)).result(),
      20_000,
      'the reserve workflow',
    );
    expect(result).toEqual({ status: 'revoked' });
  });

  it('a PG answer lost mid charge: the retried activity re-drives the same charge (executed once); revoking meanwhile is refused without history', async () => {
    const { project, api, key } = await setup();
    const created = await reserve(api, { billing_key: key, reserve_execute_at: inMs(HOUR_MS) });
    const reserveId = created.body.reserve_id as string;
    const orderId = (await lookup(api, reserveId)).body.order_id as string;
    const handle = t.temporal!.client.workflow.getHandle(reserveWorkflowId(reserveId));

    // an update without a fresh proof is refused before it is accepted
    await expect(handle.executeUpdate(revokeReserveUpdate, { args: [{ nonce: 'short' }] })).rejects.toSatisfy(
      (err: unknown) =>
        err instanceof WorkflowUpdateFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === UPDATE_NOT_AUTHORIZED,
    );

    // the sandbox PG charges, then holds its answer past the gateway client's timeout
    await armSandboxFault(t.sandboxUrl, 'charge', 'timeout');
    await t.temporal!.skipTime(HOUR_MS + 1000);
    await untilStatus(api, reserveId, 'executing');
    expectApiError(await revoke(api, reserveId), 409, 9441, 'RESERVE_NOT_REVOKABLE');
    await expect(handle.executeUpdate(revokeReserveUpdate, { args: [{ nonce: randomUUID() }] })).rejects.toSatisfy(
      (err: unknown) =>
        err instanceof WorkflowUpdateFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === 'RESERVE_NOT_REVOKABLE',
    );

    const paid = await eventually(
      async () => {
        const res = await lookup(api, reserveId);
        return res.body.status === 'paid' ? res.body : undefined;
      },
      'the retried charge',
      40_000,
    );
    expect(paid.receipt_id).toBeDefined();
    expect(await executions(project, orderId)).toBe(1);

    const events = await t.temporal!.rawHistory(reserveWorkflowId(reserveId));
    const names = eventTypeNames(events);
    // refused updates leave nothing in the history
    expect(names.filter((n) => n.startsWith('WORKFLOW_EXECUTION_UPDATE'))).toEqual([]);
    const started = events.filter((e) => e.activityTaskStartedEventAttributes);
    expect(started.at(-1)?.activityTaskStartedEventAttributes?.attempt).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('a declined card fails the reserve with the PG code; feedback_url gets the failed reserve as a form body', async () => {
    const { api } = await setup();
    const declining = await api.issuedKey({ card_no: '4000000000009995' });
    const created = await reserve(api, {
      billing_key: declining,
      reserve_execute_at: inMs(HOUR_MS),
      feedback_url: feedback.url,
      content_type: 'application/x-www-form-urlencoded',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const reserveId = created.body.reserve_id as string;
    await t.temporal!.skipTime(HOUR_MS + 1000);
    const failed = await untilStatus(api, reserveId, 'failed');
    expect(failed.error_code).toBe('PAYMENT_DECLINED');
    expect(failed.pg_error_code).toEqual(expect.any(String));
    expect(failed.receipt_id).toBeUndefined();
    const delivered = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(`reserve_id=${reserveId}`)),
      'the failure feedback',
    );
    const form = new URLSearchParams(delivered.body);
    expect(form.get('status')).toBe('failed');
    expect(form.get('error_code')).toBe('PAYMENT_DECLINED');
  });

  it('the same Idempotency-Key answers the first reserve again and stores one', async () => {
    const { project, api, key } = await setup();
    const body = { billing_key: key, reserve_execute_at: inMs(HOUR_MS), order_id: `idem-${randomUUID()}` };
    const headers = { 'idempotency-key': randomUUID() };
    const first = await reserve(api, body, headers);
    const second = await reserve(api, body, headers);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(await reserveRows(project)).toBe(1);
  });

  it('bad input is a catalog error and stores nothing', async () => {
    const { project, api, key } = await setup();
    const ok = { billing_key: key, reserve_execute_at: inMs(HOUR_MS) };
    expectApiError(await reserve(api, { ...ok, reserve_execute_at: inMs(-60_000) }), 400, 9442, 'RESERVE_EXECUTE_AT_INVALID');
    expectApiError(
      await reserve(api, { ...ok, reserve_execute_at: inMs(366 * 24 * HOUR_MS) }),
      400,
      9442,
      'RESERVE_EXECUTE_AT_INVALID',
    );
    expectApiError(await reserve(api, { ...ok, reserve_execute_at: 'tomorrow' }), 400, 9442, 'RESERVE_EXECUTE_AT_INVALID');
    expectApiError(await reserve(api, { ...ok, reserve_execute_at: undefined }), 400, 9442, 'RESERVE_EXECUTE_AT_INVALID');
    expectApiError(await reserve(api, { ...ok, billing_key: '0123456789abcdef01234567' }), 404, 2309, 'SUBSCRIBE_BK_NOT_FOUND');
    expectApiError(await reserve(api, { ...ok, price: 0 }), 400, 9400, 'INVALID_REQUEST');
    expectApiError(await reserve(api, { ...ok, user: 'someone' }), 400, 9400, 'INVALID_REQUEST');
    expectApiError(await reserve(api, { ...ok, feedback_url: 'ftp://x.example/f' }), 400, 9400, 'INVALID_REQUEST');

    const charged = await api.charge(key);
    expect(charged.status).toBe(200);
    expectApiError(await reserve(api, { ...ok, order_id: charged.body.order_id }), 409, 9410, 'ORDER_ID_DUPLICATED');
    const taken = await reserve(api, ok);
    expect(taken.status).toBe(200);
    const takenOrder = (await lookup(api, taken.body.reserve_id as string)).body.order_id;
    expectApiError(await reserve(api, { ...ok, order_id: takenOrder }), 409, 9410, 'ORDER_ID_DUPLICATED');

    const other = await setup();
    expectApiError(await reserve(api, { ...ok, billing_key: other.key }), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expectApiError(await lookup(other.api, taken.body.reserve_id as string), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expectApiError(await revoke(other.api, taken.body.reserve_id as string), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expectApiError(await lookup(api, '0123456789abcdef01234567'), 404, 9440, 'RESERVE_NOT_FOUND');
    expectApiError(await revoke(api, 'nope'), 404, 9440, 'RESERVE_NOT_FOUND');

    const destroyed = await api.send('DELETE', `/v2/subscribe/billing_key/${key}`);
    expect(destroyed.status).toBe(200);
    expectApiError(await reserve(api, ok), 400, 9423, 'BILLING_KEY_DESTROYED');
    // only the one accepted reserve was stored
    expect(await reserveRows(project)).toBe(1);
    expect((await lookup(api, taken.body.reserve_id as string)).body.status).toBe('reserved');
  });
});

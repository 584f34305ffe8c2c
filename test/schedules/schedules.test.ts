// Subscription schedules over HTTP through the real worker, the time-skipping engine and the sandbox PG: a
// monthly schedule from Jan 31 charging the clamped days for 13 months (continuing as new on the way), dunning
// with a declining card ending paused with its webhooks, pause/resume skipping the missed periods, PATCH from the
// next period, cancel, the billing key's destroy cancelling its schedules, and every bad input of the issue as a
// catalog error that changes nothing.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  patchScheduleUpdate,
  pauseScheduleUpdate,
  scheduleStateQuery,
  scheduleWorkflowId,
} from '../../src/schedules/contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../../src/platform/temporal/messages.js';
import { newId } from '../../src/platform/ids.js';
import { KEY_IN_METHOD, KEY_IN_METHOD_SYMBOL } from '../../src/gateways/card-rules.js';
import { chargeHash, chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { pgChargeKey } from '../../src/payments/charges.js';
import { formatTimestamp } from '../../src/platform/time.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { createKeyring, type Keyring, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { paygateWorkerOptions } from '../../src/platform/temporal/worker.js';
import { bounded, eventTypeNames, type HistoryEvent, paygateWorkflowBundle } from '../helpers/temporal.js';
import { openHistoryCapsStack, type HistoryCapsStack } from '../helpers/history-caps-stack.js';
import { armSandboxFault, type JsonResponse, keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { eventually, expectApiError, type Receiver, startReceiver } from '../webhooks/fixtures.js';

interface Hook {
  webhook_type: string;
  schedule?: { schedule_id: string };
  charge?: Record<string, unknown>;
  receipt?: Record<string, unknown>;
}

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

describe('subscription schedules', () => {
  let t: TestApp;
  let hooks: Receiver;
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    hooks = await startReceiver('/hooks');
  }, 120_000);
  afterAll(async () => {
    await hooks?.close();
    await t?.close();
  });

  const setup = async (card?: string) => {
    const project = await t.createProject({ webhook_url: hooks.url });
    const api = keyInClient(t, project);
    return { project, api, key: await api.issuedKey(card ? { card_no: card } : {}) };
  };
  const call = async (project: TestProject, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) => {
    const res = await t.app.inject({
      method,
      url,
      headers: { authorization: project.basicAuth },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers } as JsonResponse;
  };
  const create = (project: TestProject, body: Record<string, unknown>) =>
    call(project, 'POST', '/v2/subscribe/schedules', { order_name: 'Monthly plan', price: 9_900, interval: 'month', ...body });
  const view = async (project: TestProject, id: string) => (await call(project, 'GET', `/v2/subscribe/schedules/${id}`)).body;
  const chargesOf = async (project: TestProject, id: string) =>
    (await call(project, 'GET', `/v2/subscribe/schedules/${id}/charges`)).body.list as Record<string, unknown>[];
  const skipTo = async (at: Date) => {
    const ms = at.getTime() - t.clock.now().getTime();
    if (ms > 0) await t.temporal!.skipTime(ms);
  };
  const until = <T>(probe: () => Promise<T | undefined>, what: string) => eventually(probe, what, 30_000);
  const paidCount = (project: TestProject, id: string, n: number) =>
    until(async () => {
      const list = await chargesOf(project, id);
      return list.filter((c) => c.status === 'paid').length >= n ? list : undefined;
    }, `${n} paid periods of ${id}`);
  const hooksOf = (id: string, type?: string) =>
    hooks.requests
      .map((r) => ({ id: r.headers['webhook-id'], body: JSON.parse(r.body) as Hook }))
      .filter((r) => r.body.schedule?.schedule_id === id && (type === undefined || r.body.webhook_type === type));
  const distinctHooks = (id: string, type: string) => new Set(hooksOf(id, type).map((h) => h.id)).size;
  const scheduleRows = async (project: TestProject) =>
    (
      await t.deps.database.db
        .selectFrom('schedules')
        .select('schedule_id')
        .where('application_id', '=', project.applicationId)
        .execute()
    ).length;
  /** The next Jan 31, 09:00 KST after the engine's now. */
  const nextJan31 = () => {
    const year = new Date(t.clock.now().getTime() + 9 * HOUR_MS).getUTCFullYear() + 1;
    return new Date(`${year}-01-31T09:00:00+09:00`);
  };

  it('a monthly schedule from Jan 31 charges the clamped days for 13 months, once each, continuing as new; then completes', async () => {
    const { project, key } = await setup();
    const start = nextJan31();
    const created = await create(project, {
      billing_key: key,
      start_at: start.toISOString(),
      max_charges: 13,
      metadata: { plan: 'pro' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    expect(created.body).toMatchObject({
      status: 'active',
      interval: 'month',
      interval_count: 1,
      charges_made: 0,
      max_charges: 13,
      start_at: formatTimestamp(start),
      next_charge_at: formatTimestamp(start),
      metadata: { plan: 'pro' },
    });
    const upcoming = await call(project, 'GET', `/v2/subscribe/schedules/${id}/upcoming?count=4`);
    expect((upcoming.body.list as string[]).map((d) => d.slice(5, 10))).toEqual(['01-31', '02-28', '03-31', '04-30']);

    const y = start.getUTCFullYear();
    const feb = new Date(Date.UTC(y, 2, 0)).getUTCDate();
    const expectedDays = [
      '01-31',
      `02-${feb}`,
      '03-31',
      '04-30',
      '05-31',
      '06-30',
      '07-31',
      '08-31',
      '09-30',
      '10-31',
      '11-30',
      '12-31',
      '01-31',
    ];
    for (let n = 1; n <= 13; n++) {
      // an hour before the due time nothing is charged; just after, exactly this period is
      const due = new Date(`${n === 13 ? y + 1 : y}-${expectedDays[n - 1]}T09:00:00+09:00`);
      await skipTo(new Date(due.getTime() - HOUR_MS));
      expect((await chargesOf(project, id)).filter((c) => c.status === 'paid')).toHaveLength(n - 1);
      await skipTo(new Date(due.getTime() + 1000));
      await paidCount(project, id, n);
    }
    const list = await chargesOf(project, id);
    expect(list.map((c) => (c.due_at as string).slice(5, 10))).toEqual(expectedDays);
    expect(list.map((c) => c.order_id)).toEqual(expectedDays.map((_, i) => `${id}-${i + 1}`));
    for (const c of list) {
      expect(c).toMatchObject({ status: 'paid', attempts: 1, receipt_id: expect.any(String) });
      expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, c.order_id as string))).toBe(
        1,
      );
    }
    const done = await until(async () => {
      const v = await view(project, id);
      return v.status === 'completed' ? v : undefined;
    }, 'completed');
    expect(done.charges_made).toBe(13);
    expect(done.next_charge_at).toBeUndefined();
    await until(async () => (distinctHooks(id, 'SUBSCRIPTION_COMPLETED') === 1 ? true : undefined), 'the COMPLETED webhook');
    expect(distinctHooks(id, 'SUBSCRIPTION_CHARGED')).toBe(13);
    const charged = hooksOf(id, 'SUBSCRIPTION_CHARGED')[0]!.body;
    expect(charged.charge).toMatchObject({ period: expect.any(Number), status: 'paid' });
    expect(charged.receipt).toMatchObject({ status: 1, price: 9_900 });

    // 13 periods went through more than one run: the history was continued as new and kept its state
    const events = await t.temporal!.rawHistory(scheduleWorkflowId(id));
    expect(events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId).toBeTruthy();
    const result = await bounded(t.temporal!.client.workflow.getHandle(scheduleWorkflowId(id)).result(), 20_000, 'the schedule');
    expect(result).toBe('completed');
    expectApiError(await call(project, 'POST', `/v2/subscribe/schedules/${id}/pause`), 409, 9451, 'SCHEDULE_STATE_INVALID');
  }, 240_000);

  it('dunning: a declined card goes past_due, is retried after each delay, and ends paused with its webhooks', async () => {
    const { project, key } = await setup('4000000000009995');
    const created = await create(project, {
      billing_key: key,
      interval: 'day',
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
      retry: { delays: ['PT1H', 7200] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    await t.temporal!.skipTime(HOUR_MS + 1000);
    const pastDue = await until(async () => {
      const v = await view(project, id);
      return v.status === 'past_due' ? v : undefined;
    }, 'past_due');
    expect(pastDue.next_charge_at).toBeDefined();
    const first = (await chargesOf(project, id))[0]!;
    expect(first).toMatchObject({ period: 1, status: 'retrying', attempts: 1, pg_error_code: expect.any(String) });

    await t.temporal!.skipTime(HOUR_MS + 1000);
    await until(async () => ((await chargesOf(project, id))[0]!.attempts === 2 ? true : undefined), 'the second attempt');
    expect((await view(project, id)).status).toBe('past_due');
    await t.temporal!.skipTime(2 * HOUR_MS + 1000);
    const paused = await until(async () => {
      const v = await view(project, id);
      return v.status === 'paused' ? v : undefined;
    }, 'paused after the ladder');
    expect(paused.charges_made).toBe(0);
    expect((await chargesOf(project, id))[0]).toMatchObject({ status: 'failed', attempts: 3 });
    await until(async () => (distinctHooks(id, 'SUBSCRIPTION_PAUSED') === 1 ? true : undefined), 'the PAUSED webhook');
    expect(distinctHooks(id, 'SUBSCRIPTION_CHARGE_FAILED')).toBe(3);
    expect(distinctHooks(id, 'SUBSCRIPTION_PAST_DUE')).toBe(1);
    expect(distinctHooks(id, 'SUBSCRIPTION_CHARGED')).toBe(0);
    // a paused schedule charges nothing more
    await t.temporal!.skipTime(3 * DAY_MS);
    expect(await chargesOf(project, id)).toHaveLength(1);
  }, 120_000);

  it('dunning: a retry that succeeds brings a past_due schedule back to active, and an outage is not an attempt', async () => {
    const { project, api, key: declining } = await setup('4000000000009995');
    const created = await create(project, {
      billing_key: declining,
      interval: 'day',
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
      retry: { delays: ['PT1H', 'PT1H'] },
    });
    const id = created.body.schedule_id as string;
    await t.temporal!.skipTime(HOUR_MS + 1000);
    await until(async () => ((await view(project, id)).status === 'past_due' ? true : undefined), 'past_due');
    // the customer's card is replaced behind the schedule (as a merchant would re-point it); the PG is down once
    const good = await api.issuedKey();
    await t.deps.database.db.updateTable('schedules').set({ billing_key: good }).where('schedule_id', '=', id).execute();
    await armSandboxFault(t.sandboxUrl, 'charge', '500');
    await t.temporal!.skipTime(HOUR_MS + 1000);
    const [first] = await paidCount(project, id, 1);
    // the 500 was retried by the activity: the period was paid on its second dunning attempt, not a third, under the
    // period's order_id
    expect(first).toMatchObject({ period: 1, status: 'paid', attempts: 2, order_id: `${id}-1` });
    const back = await view(project, id);
    expect(back).toMatchObject({ status: 'active', charges_made: 1 });
    expect(distinctHooks(id, 'SUBSCRIPTION_PAST_DUE')).toBe(1);
    await until(async () => (distinctHooks(id, 'SUBSCRIPTION_CHARGED') === 1 ? true : undefined), 'the CHARGED webhook');
  }, 120_000);

  it("dunning: a retry keeps the period's order_id on its own PG key; its lost answer is re-driven, never charged twice", async () => {
    const { project, api, key: declining } = await setup('4000000000009995');
    const created = await create(project, {
      billing_key: declining,
      interval: 'day',
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
      retry: { delays: ['PT1H', 'PT1H'] },
    });
    const id = created.body.schedule_id as string;
    const orderId = `${id}-1`;
    await t.temporal!.skipTime(HOUR_MS + 1000);
    await until(async () => ((await view(project, id)).status === 'past_due' ? true : undefined), 'past_due');
    expect((await chargesOf(project, id))[0]).toMatchObject({ order_id: orderId, attempts: 1, status: 'retrying' });
    const good = await api.issuedKey();
    await t.deps.database.db.updateTable('schedules').set({ billing_key: good }).where('schedule_id', '=', id).execute();
    // the PG charges the retry, then its answer is lost (this project's next charge only): the activity's next try
    // must be the same attempt (same receipt, same PG key), not a new one
    const armed = await api.post(
      '/sandbox/v1/faults',
      { pg: 'sandbox_card', operation: 'charge', fault: 'lost_response', count: 1 },
      { 'idempotency-key': `lost-retry-${id}` },
    );
    expect(armed.status, JSON.stringify(armed.body)).toBe(201);
    expect((await api.get('/sandbox/v1/faults')).body.list).toHaveLength(1);
    await t.temporal!.skipTime(HOUR_MS + 1000);
    const [first] = await eventually(
      async () => {
        const list = await chargesOf(project, id);
        return list[0]?.status === 'paid' ? list : undefined;
      },
      'the retry paid',
      60_000,
    );
    expect(first).toMatchObject({ period: 1, status: 'paid', attempts: 2, order_id: orderId });
    // the retry's first call lost its answer
    expect((await api.get('/sandbox/v1/faults')).body.list).toEqual([]);
    // the decline stays under the order_id's first key (the PG would answer it again there); the retry had the next
    // key, executed once although the activity sent it again after the lost answer
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 1))).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 2))).toBe(0);
    const receipts = await t.deps.database.db
      .selectFrom('receipts')
      .select(['receipt_id', 'order_id', 'status'])
      .where('application_id', '=', project.applicationId)
      .execute();
    expect(receipts).toEqual([{ receipt_id: first!.receipt_id, order_id: orderId, status: 1 }]);
    expect(await view(project, id)).toMatchObject({ status: 'active', charges_made: 1 });
  }, 120_000);

  it("dunning: a retry an earlier version left pending under its own '-r<n>' order_id is re-driven under it, not charged again", async () => {
    const { project, api, key: declining } = await setup('4000000000009995');
    const created = await create(project, {
      billing_key: declining,
      interval: 'day',
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
      retry: { delays: ['PT1H', 'PT1H'] },
    });
    const id = created.body.schedule_id as string;
    await t.temporal!.skipTime(HOUR_MS + 1000);
    await until(async () => ((await view(project, id)).status === 'past_due' ? true : undefined), 'past_due');
    const good = await api.issuedKey();
    await t.deps.database.db.updateTable('schedules').set({ billing_key: good }).where('schedule_id', '=', id).execute();
    // what a version that gave each retry its own order_id left when its second attempt lost the PG's answer: the
    // attempt's pending receipt (still owned by its call, so nothing else settles it first)
    const legacyOrderId = `${id}-1-r2`;
    const params = {
      billingKey: good,
      orderName: 'Monthly plan',
      orderId: legacyOrderId,
      price: 9_900,
      taxFree: 0,
      quota: 0,
      metadata: { schedule_id: id, period: 1 },
    };
    const claim = await t.deps.stores.receipts.claimOrder({
      receiptId: newId(),
      applicationId: project.applicationId,
      orderId: legacyOrderId,
      orderName: params.orderName,
      billingKey: good,
      chargeHash: chargeHash(params),
      pg: 'sandbox_card',
      method: KEY_IN_METHOD,
      methodSymbol: KEY_IN_METHOD_SYMBOL,
      price: params.price,
      taxFree: 0,
      quota: 0,
      metadata: params.metadata,
      requestedAt: t.clock.now(),
      callUntil: new Date(t.clock.now().getTime() + 30 * DAY_MS),
    });
    expect(claim.kind).toBe('claimed');
    await t.temporal!.skipTime(HOUR_MS + 1000);
    const [first] = await paidCount(project, id, 1);
    expect(first).toMatchObject({ period: 1, status: 'paid', attempts: 2, order_id: legacyOrderId });
    expect(first!.receipt_id).toBe(claim.kind === 'claimed' ? claim.receiptId : undefined);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, legacyOrderId))).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, `${id}-1`, 1))).toBe(0);
    const paidReceipts = await t.deps.database.db
      .selectFrom('receipts')
      .select('order_id')
      .where('application_id', '=', project.applicationId)
      .where('status', '=', 1)
      .execute();
    expect(paidReceipts).toEqual([{ order_id: legacyOrderId }]);
  }, 120_000);

  it('cancel while a charge is in flight: the charge finishes once, the schedule stays cancelled', async () => {
    const { project, key } = await setup();
    const created = await create(project, {
      billing_key: key,
      interval: 'day',
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
    });
    const id = created.body.schedule_id as string;
    // the sandbox PG charges, then holds its answer past the gateway client's timeout
    await armSandboxFault(t.sandboxUrl, 'charge', 'timeout');
    await t.temporal!.skipTime(HOUR_MS + 1000);
    await until(async () => ((await chargesOf(project, id)).length === 1 ? true : undefined), 'the period opened');
    const cancelled = await call(project, 'DELETE', `/v2/subscribe/schedules/${id}`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    const [paid] = await eventually(
      async () => {
        const list = await chargesOf(project, id);
        return list[0]?.status === 'paid' ? list : undefined;
      },
      'the in-flight charge to finish',
      45_000,
    );
    expect(
      await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, paid!.order_id as string)),
    ).toBe(1);
    expect(await view(project, id)).toMatchObject({ status: 'cancelled', charges_made: 1 });
    await t.temporal!.skipTime(2 * DAY_MS);
    expect(await chargesOf(project, id)).toHaveLength(1);
  }, 90_000);

  it("charges a period as a local activity: no activity task, a marker in the run's task, and the history replays", async () => {
    const { project, key } = await setup();
    const created = await create(project, { billing_key: key, interval: 'day' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    await paidCount(project, id, 1);
    const handle = t.deps.temporal!.client.workflow.getHandle(scheduleWorkflowId(id));
    const history = await eventually(
      async () => {
        const h = await handle.fetchHistory();
        return eventTypeNames(h.events ?? []).includes('TIMER_STARTED') ? h : undefined;
      },
      'the wait for period 2',
      30_000,
    );
    const names = eventTypeNames(history.events ?? []);
    expect(names).not.toContain('ACTIVITY_TASK_SCHEDULED');
    const markers = (history.events ?? []).map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean);
    expect(markers).toEqual(expect.arrayContaining(['core_patch', 'core_local_activity']));
    // the charge's result is sealed by the codec like an activity's (the marker's own data is the SDK's plain JSON)
    const charge = (history.events ?? []).find((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    const result = charge?.markerRecordedEventAttributes?.details?.result?.payloads?.[0];
    expect(Buffer.from(result?.metadata?.encoding ?? []).toString()).toBe('binary/encrypted');
    // the charge, its marker and the wait for period 2 in one workflow task after the start
    expect(names.filter((n) => n === 'WORKFLOW_TASK_COMPLETED')).toHaveLength(1);
    await replay(history, t.deps.keyring!, scheduleWorkflowId(id));
  });

  it('the same Idempotency-Key answers the first create again and stores one schedule', async () => {
    const { project, key } = await setup();
    const headers = { authorization: project.basicAuth, 'idempotency-key': randomUUID() };
    const payload = { billing_key: key, order_name: 'Plan', price: 1_000, interval: 'week' };
    const first = await t.app.inject({ method: 'POST', url: '/v2/subscribe/schedules', headers, payload });
    const second = await t.app.inject({ method: 'POST', url: '/v2/subscribe/schedules', headers, payload });
    expect(first.statusCode).toBe(201);
    expect(second.statusCode).toBe(201);
    expect(second.json()).toEqual(first.json());
    expect(await scheduleRows(project)).toBe(1);
  });

  it('pause / resume: missed periods are skipped, never charged late; invalid transitions are 9451 without history', async () => {
    const { project, key } = await setup();
    const created = await create(project, {
      billing_key: key,
      interval: 'day',
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
    });
    const id = created.body.schedule_id as string;
    await t.temporal!.skipTime(HOUR_MS + 1000);
    await paidCount(project, id, 1);

    expectApiError(await call(project, 'POST', `/v2/subscribe/schedules/${id}/resume`), 409, 9451, 'SCHEDULE_STATE_INVALID');
    const paused = await call(project, 'POST', `/v2/subscribe/schedules/${id}/pause`);
    expect(paused.status, JSON.stringify(paused.body)).toBe(200);
    expect(paused.body.status).toBe('paused');
    expectApiError(await call(project, 'POST', `/v2/subscribe/schedules/${id}/pause`), 409, 9451, 'SCHEDULE_STATE_INVALID');
    // the workflow's validator refuses too (a caller past the database check), and the history keeps nothing of it
    const handle = t.temporal!.client.workflow.getHandle(scheduleWorkflowId(id));
    const runId = (await handle.describe()).runId;
    await expect(handle.executeUpdate(pauseScheduleUpdate, { args: [{ nonce: randomUUID(), runId }] })).rejects.toSatisfy(
      (err: unknown) =>
        err instanceof WorkflowUpdateFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === 'SCHEDULE_STATE_INVALID',
    );

    await t.temporal!.skipTime(3 * DAY_MS + HOUR_MS);
    expect((await chargesOf(project, id)).filter((c) => c.status === 'paid')).toHaveLength(1);
    const resumed = await call(project, 'POST', `/v2/subscribe/schedules/${id}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body.status).toBe('active');
    expect(Date.parse(resumed.body.next_charge_at as string)).toBeGreaterThan(t.clock.now().getTime());
    const list = await chargesOf(project, id);
    expect(list.map((c) => c.status)).toEqual(['paid', 'skipped', 'skipped', 'skipped']);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, `${id}-2`))).toBe(0);
    await t.temporal!.skipTime(DAY_MS);
    const after = await paidCount(project, id, 2);
    expect(after.at(-1)).toMatchObject({ period: 5, status: 'paid' });
    const state = await handle.query(scheduleStateQuery);
    expect(state).toMatchObject({ status: 'active', period: 6 });
    const names = (await t.temporal!.rawHistory(scheduleWorkflowId(id))).map((e) => String(e.eventType));
    expect(names.filter((n) => n.includes('UPDATE_REJECTED'))).toEqual([]);
  }, 120_000);

  it('PATCH applies from the next period; cancel stops it; destroying the key cancels its schedules', async () => {
    const { project, api, key } = await setup();
    const created = await create(project, {
      billing_key: key,
      interval: 'day',
      price: 1_000,
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
    });
    const id = created.body.schedule_id as string;
    await t.temporal!.skipTime(HOUR_MS + 1000);
    const [first] = await paidCount(project, id, 1);
    const patched = await call(project, 'PATCH', `/v2/subscribe/schedules/${id}`, { price: 2_000, order_name: 'Upgraded' });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ price: 2_000, order_name: 'Upgraded' });
    expect((await api.get(`/v2/receipt/${first!.receipt_id}`)).body.price).toBe(1_000);
    await t.temporal!.skipTime(DAY_MS);
    const [, second] = await paidCount(project, id, 2);
    expect((await api.get(`/v2/receipt/${second!.receipt_id}`)).body).toMatchObject({ price: 2_000, order_name: 'Upgraded' });

    const cancelled = await call(project, 'DELETE', `/v2/subscribe/schedules/${id}`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    await until(async () => (distinctHooks(id, 'SUBSCRIPTION_CANCELLED') === 1 ? true : undefined), 'the CANCELLED webhook');
    await t.temporal!.skipTime(2 * DAY_MS);
    expect(await chargesOf(project, id)).toHaveLength(2);
    expectApiError(await call(project, 'DELETE', `/v2/subscribe/schedules/${id}`), 409, 9451, 'SCHEDULE_STATE_INVALID');
    expectApiError(
      await call(project, 'PATCH', `/v2/subscribe/schedules/${id}`, { price: 5 }),
      409,
      9451,
      'SCHEDULE_STATE_INVALID',
    );
    expectApiError(await call(project, 'POST', `/v2/subscribe/schedules/${id}/pause`), 409, 9451, 'SCHEDULE_STATE_INVALID');
    expect((await view(project, id)).price).toBe(2_000);

    // the key's destroy cancels every open schedule on it
    const other = await create(project, { billing_key: key, start_at: new Date(t.clock.now().getTime() + DAY_MS).toISOString() });
    const destroyed = await api.send('DELETE', `/v2/subscribe/billing_key/${key}`);
    expect(destroyed.status).toBe(200);
    expect((await view(project, other.body.schedule_id as string)).status).toBe('cancelled');
    const listed = await call(project, 'GET', `/v2/subscribe/schedules?billing_key=${key}&status=cancelled&limit=1`);
    expect(listed.body).toMatchObject({ page: 1, per: 1, count: 2 });
    expect((listed.body.list as Record<string, unknown>[])[0]!.schedule_id).toBe(other.body.schedule_id);
  }, 120_000);

  it('a proof is taken once, by the run it names: one made for an earlier run is refused after continue-as-new', async () => {
    const { project, key } = await setup();
    const created = await create(project, {
      billing_key: key,
      interval: 'day',
      start_at: new Date(t.clock.now().getTime() + HOUR_MS).toISOString(),
    });
    const id = created.body.schedule_id as string;
    const handle = t.temporal!.client.workflow.getHandle(scheduleWorkflowId(id));
    const firstRun = (await handle.describe()).runId;
    const refused = (err: unknown) =>
      err instanceof WorkflowUpdateFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === UPDATE_NOT_AUTHORIZED;
    const spent = { nonce: randomUUID(), runId: firstRun };
    await expect(handle.executeUpdate(patchScheduleUpdate, { args: [spent, { metadata: { step: 1 } }] })).resolves.toBe('active');
    // the same sealed argument again, and a proof without a run or for another run: refused before the history
    await expect(handle.executeUpdate(patchScheduleUpdate, { args: [spent, { metadata: { step: 9 } }] })).rejects.toSatisfy(
      refused,
    );
    const unbound = { nonce: randomUUID() } as unknown as typeof spent;
    await expect(handle.executeUpdate(patchScheduleUpdate, { args: [unbound, { metadata: { step: 9 } }] })).rejects.toSatisfy(
      refused,
    );
    // 12 daily periods end the first run; the 13th is charged by the run it continued as
    for (let n = 1; n <= 13; n++) {
      await t.temporal!.skipTime(n === 1 ? HOUR_MS + 1000 : DAY_MS);
      await paidCount(project, id, n);
    }
    const events = await t.temporal!.rawHistory(scheduleWorkflowId(id));
    expect(events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId).toBe(firstRun);
    const secondRun = (await handle.describe()).runId;
    expect(secondRun).not.toBe(firstRun);
    // a fresh nonce made for the first run is refused by the second: no nonce needs carrying across runs
    for (const proof of [spent, { nonce: randomUUID(), runId: firstRun }]) {
      await expect(handle.executeUpdate(patchScheduleUpdate, { args: [proof, { metadata: { step: 2 } }] })).rejects.toSatisfy(
        refused,
      );
    }
    expect((await view(project, id)).metadata).toEqual({ step: 1 });
    await expect(
      handle.executeUpdate(patchScheduleUpdate, { args: [{ nonce: randomUUID(), runId: secondRun }, { metadata: { step: 3 } }] }),
    ).resolves.toBe('active');
    expect((await view(project, id)).metadata).toEqual({ step: 3 });
    // and the API's own requests name the current run
    const patched = await call(project, 'PATCH', `/v2/subscribe/schedules/${id}`, { metadata: { step: 4 } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.metadata).toEqual({ step: 4 });
  }, 180_000);

  it('every bad input of the issue is a catalog error and changes nothing', async () => {
    const { project, key } = await setup();
    const ok = { billing_key: key };
    const bad: Record<string, unknown>[] = [
      { interval: 'fortnight' },
      { interval_count: 0 },
      { interval_count: 366 },
      { price: 0 },
      { price: -5 },
      { price: 99.5 },
      { price: 1000, tax_free: 1001 },
      { start_at: 'soon' },
      { start_at: '2020-01-01T00:00:00+09:00' },
      { start_at: '2030-02-01T00:00:00+09:00', end_at: '2030-01-01T00:00:00+09:00' },
      { retry: { delays: [0] } },
      { retry: { delays: ['-PT1H'] } },
      { retry: { delays: Array.from({ length: 11 }, () => 'PT1H') } },
    ];
    for (const body of bad) expectApiError(await create(project, { ...ok, ...body }), 400, 9400, 'INVALID_REQUEST');
    expectApiError(await create(project, { billing_key: '0123456789abcdef01234567' }), 404, 2309, 'SUBSCRIBE_BK_NOT_FOUND');
    expect(await scheduleRows(project)).toBe(0);

    const created = await create(project, { ...ok, start_at: new Date(t.clock.now().getTime() + DAY_MS).toISOString() });
    expect(created.status).toBe(201);
    const id = created.body.schedule_id as string;
    const before = await view(project, id);
    const stranger = await setup();
    expectApiError(await create(stranger.project, ok), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    for (const [method, url, body] of [
      ['GET', `/v2/subscribe/schedules/${id}`],
      ['GET', `/v2/subscribe/schedules/${id}/charges`],
      ['POST', `/v2/subscribe/schedules/${id}/pause`],
      ['PATCH', `/v2/subscribe/schedules/${id}`, { price: 1 }],
      ['DELETE', `/v2/subscribe/schedules/${id}`],
    ] as const) {
      expectApiError(await call(stranger.project, method, url, body), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    }
    expectApiError(
      await call(project, 'GET', '/v2/subscribe/schedules/0123456789abcdef01234567'),
      404,
      9450,
      'SCHEDULE_NOT_FOUND',
    );
    expectApiError(
      await call(project, 'PATCH', `/v2/subscribe/schedules/${id}`, { interval: 'day' }),
      400,
      9400,
      'INVALID_REQUEST',
    );
    expectApiError(await call(project, 'PATCH', `/v2/subscribe/schedules/${id}`, { price: 0 }), 400, 9400, 'INVALID_REQUEST');
    expectApiError(await call(project, 'POST', `/v2/subscribe/schedules/${id}/resume`), 409, 9451, 'SCHEDULE_STATE_INVALID');
    expect(await view(project, id)).toEqual(before);
    expect(await scheduleRows(project)).toBe(1);
    expect(await scheduleRows(stranger.project)).toBe(0);
  });
});

async function replay(history: proto.api.history.v1.IHistory, keyring: Keyring, id: string): Promise<void> {
  await bounded(
    Worker.runReplayHistory({ workflowBundle: await paygateWorkflowBundle(), ...paygateWorkerOptions(keyring) }, history, id),
    30_000,
    'replay',
  );
}

describe('subscription schedules: replay of a history recorded before the idle continue-as-new', () => {
  // Recorded on the workflow code before it (and before run-bound proofs): 12 PATCHes, a pause and a resume in
  // one run on an engine suggesting continue-as-new at 40 events, sealed with the key below. The new code would
  // continue as new at the suggestion; on this history patched() answers false, so it replays as recorded.
  const FIXTURE_KEYRING = `replay-fixture:${Buffer.alloc(32, 7).toString('base64')}`;

  it('replays: the run went past the suggestion without continuing as new', async () => {
    const encoded = await readFile(new URL('./schedule-history-before-caps.b64', import.meta.url), 'utf8');
    const history = proto.api.history.v1.History.decode(Buffer.from(encoded.trim(), 'base64'));
    const events = history.events ?? [];
    const names = eventTypeNames(events);
    expect(names.filter((n) => n === 'WORKFLOW_EXECUTION_UPDATE_COMPLETED')).toHaveLength(14);
    expect(names).not.toContain('MARKER_RECORDED');
    expect(names).not.toContain('WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    expect(events.some((e) => e.workflowTaskStartedEventAttributes?.suggestContinueAsNew)).toBe(true);
    await replay(history, createKeyring(parseKeyringSpec(FIXTURE_KEYRING)), 'schedule:pre-caps');
  });
});

describe('subscription schedules: replay of a history recorded before the local-activity charge', () => {
  // Recorded on the workflow code before the period's charge became a local activity: period 1 charged through an
  // activity task at once, then the wait for period 2, sealed with the key below. patched() answers false on it, so
  // the charge replays as the activity it was.
  const FIXTURE_KEYRING = `replay-fixture:${Buffer.alloc(32, 7).toString('base64')}`;

  it('replays: the charge was an activity task', async () => {
    const encoded = await readFile(new URL('./schedule-history-before-local-charge.b64', import.meta.url), 'utf8');
    const history = proto.api.history.v1.History.decode(Buffer.from(encoded.trim(), 'base64'));
    const names = eventTypeNames(history.events ?? []);
    expect(names).toContain('ACTIVITY_TASK_COMPLETED');
    expect(names).toContain('TIMER_STARTED');
    expect(names).not.toContain('MARKER_RECORDED');
    await replay(history, createKeyring(parseKeyringSpec(FIXTURE_KEYRING)), 'schedule:pre-local-charge');
  });
});

// The engine suggests continue-as-new at SUGGEST_AT events here (Temporal's default is 4,096): a merchant's updates
// within one period no longer grow one run's history (towards the engine's termination at 51,200 events).
describe('subscription schedules: updates within one period keep each run bounded', () => {
  const SUGGEST_AT = 40;
  // an update adds about 8 to 12 events; the run continues as new at the first task after the suggestion (a
  // completion refused because something landed on the closing task adds a failed task and its retry)
  const RUN_BOUND = SUGGEST_AT + 30;
  let stack: HistoryCapsStack;
  beforeAll(async () => {
    stack = await openHistoryCapsStack({ suggestAtEvents: SUGGEST_AT });
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('30 PATCHes continue the run as new while it waits; every run stays under the bound and the schedule keeps working', async () => {
    const { t } = stack;
    const project = await t.createProject();
    const api = keyInClient(t, project);
    const key = await api.issuedKey({});
    const send = async (method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: object) => {
      const res = await t.app.inject({
        method,
        url,
        headers: { authorization: project.basicAuth },
        ...(body ? { payload: body } : {}),
      });
      return { status: res.statusCode, body: res.json() as Record<string, unknown> };
    };
    const startAt = new Date(Date.now() + 15_000);
    const created = await send('POST', '/v2/subscribe/schedules', {
      billing_key: key,
      order_name: 'Daily plan',
      price: 1_000,
      interval: 'day',
      start_at: startAt.toISOString(),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    const handle = t.deps.temporal!.client.workflow.getHandle(scheduleWorkflowId(id));
    const firstRun = (await handle.describe()).runId;

    for (let n = 1; n <= 30; n++) {
      const res = await send('PATCH', `/v2/subscribe/schedules/${id}`, { metadata: { n } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.metadata).toEqual({ n });
    }

    // walk the chain of runs back from the current one: several runs, none past the bound
    const runs: number[] = [];
    const client = t.deps.temporal!.client;
    for (let runId = (await handle.describe()).runId; runId; ) {
      const events: HistoryEvent[] = (await client.workflow.getHandle(scheduleWorkflowId(id), runId).fetchHistory()).events ?? [];
      runs.push(events.length);
      runId = runId === firstRun ? '' : (events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? '');
    }
    expect(runs.length).toBeGreaterThanOrEqual(3);
    for (const length of runs) expect(length).toBeLessThanOrEqual(RUN_BOUND);
    // the first run continued as new while waiting (its patch marker recorded), and replays as it ran
    const first = await t.deps.temporal!.client.workflow.getHandle(scheduleWorkflowId(id), firstRun).fetchHistory();
    const names = eventTypeNames(first.events ?? []);
    expect(names).toContain('MARKER_RECORDED');
    expect(names.at(-1)).toBe('WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    // replayed under its workflow id: its payloads are sealed for it
    await replay(first, t.deps.keyring!, scheduleWorkflowId(id));

    // the schedule goes on: its first period is charged once at its due time, then pause / resume / cancel work
    const paid = await eventually(
      async () => {
        const list = (
          await t.app.inject({
            method: 'GET',
            url: `/v2/subscribe/schedules/${id}/charges`,
            headers: { authorization: project.basicAuth },
          })
        ).json() as {
          list: Record<string, unknown>[];
        };
        return list.list.some((c) => c.status === 'paid') ? list.list : undefined;
      },
      'the first period paid',
      40_000,
    );
    expect(paid).toHaveLength(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, `${id}-1`))).toBe(1);
    expect((await send('POST', `/v2/subscribe/schedules/${id}/pause`)).body.status).toBe('paused');
    expect((await send('POST', `/v2/subscribe/schedules/${id}/resume`)).body.status).toBe('active');
    expect(await handle.query(scheduleStateQuery)).toMatchObject({ status: 'active', period: 2 });
    expect((await send('DELETE', `/v2/subscribe/schedules/${id}`)).body.status).toBe('cancelled');
    expect(await bounded(handle.result(), 20_000, 'the schedule to end')).toBe('cancelled');
  }, 120_000);
});

// Schedules and reserves driven by the sandbox clock over HTTP (not time skipping), on the stack `npm start` runs in
// sandbox mode: the embedded engine with --clock-control and its journal, the real worker whose activities read the
// one sandbox clock, the API's POST /sandbox/v1/clock/advance (the operator's: the admin token). A monthly schedule
// is charged when an advance reaches its due time and not before; a reserve executes once at its time while a
// revoked one never does.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { dueAt } from '../../src/schedules/rules.js';
import { formatTimestamp } from '../../src/platform/time.js';
import type { TestApp, TestProject } from '../helpers/app.js';
import { adminClock, openSandboxClockStack, type SandboxClockStack } from '../helpers/sandbox-clock-stack.js';
import { type JsonResponse, keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { eventually } from '../webhooks/fixtures.js';

const HOUR_S = 3600;
const DAY_S = 24 * HOUR_S;

describe('schedules and reserves on the sandbox clock', () => {
  let stack: SandboxClockStack;
  let t: TestApp;
  let _clock: SandboxClockStack['clock'];

  beforeAll(async () => {
    stack = await openSandboxClockStack('schedules-clock');
    t = stack.t;
    _clock = stack.clock;
  }, 120_000);

  afterAll(async () => {
    await stack?.close();
  });

  const call = async (project: TestProject, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) => {
    const res = await t.app.inject({
      method,
      url,
      headers: { authorization: project.basicAuth, ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}) },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers } as JsonResponse;
  };
  /** One advance over HTTP, the operator's (the admin token); it answers once the work it fired has settled. */
  const advance = async (body: { seconds: number } | { to: string }) => adminClock(t).advance(body);
  const sandboxNow = async (project: TestProject) =>
    new Date((await call(project, 'GET', '/sandbox/v1/clock')).body.now as string);
  const chargesOf = async (project: TestProject, id: string) =>
    (await call(project, 'GET', `/v2/subscribe/schedules/${id}/charges`)).body.list as Record<string, unknown>[];

  it('a monthly schedule is charged when an advance of one month reaches its due time, not before, once', async () => {
    const project = await t.createProject();
    const key = await keyInClient(t, project).issuedKey();
    const startAt = new Date(Math.ceil(((await sandboxNow(project)).getTime() + HOUR_S * 1000) / 60_000) * 60_000);
    const created = await call(project, 'POST', '/v2/subscribe/schedules', {
      billing_key: key,
      order_name: 'Monthly plan',
      price: 9_900,
      interval: 'month',
      start_at: startAt.toISOString(),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    const plan = { startAt: startAt.toISOString(), interval: 'month' as const, intervalCount: 1 };

    // period 1 at start_at: nothing a minute before, paid when the advance past it answers (the engine starts a
    // timer when the run's task completes, so it fires that task's latency after the due time: a minute covers it)
    await advance({ to: new Date(startAt.getTime() - 60_000).toISOString() });
    expect(await chargesOf(project, id)).toEqual([]);
    await advance({ to: new Date(startAt.getTime() + 60_000).toISOString() });
    expect((await chargesOf(project, id)).map((c) => [c.period, c.status])).toEqual([[1, 'paid']]);

    // one month: period 2 on the calendar's next due time, not an hour before it
    const second = dueAt(plan, 2);
    const before = await advance({ to: new Date(second.getTime() - HOUR_S * 1000).toISOString() });
    expect((await chargesOf(project, id)).filter((c) => c.status === 'paid')).toHaveLength(1);
    const after = await advance({ seconds: 2 * HOUR_S });
    expect(after.getTime() - before.getTime()).toBeGreaterThanOrEqual(2 * HOUR_S * 1000);
    let list = await chargesOf(project, id);
    expect(list.map((c) => [c.period, c.status, c.due_at])).toEqual([
      [1, 'paid', formatTimestamp(startAt)],
      [2, 'paid', formatTimestamp(second)],
    ]);
    // charged at its due time in the sandbox's time, by one PG execution per period
    const chargedAt = new Date(list[1]!.charged_at as string).getTime();
    expect(chargedAt).toBeGreaterThanOrEqual(second.getTime());
    expect(chargedAt).toBeLessThanOrEqual(after.getTime());
    for (const c of list) {
      expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, c.order_id as string))).toBe(
        1,
      );
    }
    const view = (await call(project, 'GET', `/v2/subscribe/schedules/${id}`)).body;
    expect(view).toMatchObject({ status: 'active', charges_made: 2, next_charge_at: formatTimestamp(dueAt(plan, 3)) });

    // a due time a few seconds past an advance's target comes in real time after it, not the wall-clock delay the
    // engine had armed before the jump (a month)
    const third = dueAt(plan, 3);
    await advance({ to: new Date(third.getTime() - 3000).toISOString() });
    list = await eventually(
      async () => {
        const charges = await chargesOf(project, id);
        return charges.length === 3 && charges[2]!.status === 'paid' ? charges : undefined;
      },
      'period 3 charged in real time after the advance',
      30_000,
    );
    expect(new Date(list[2]!.charged_at as string).getTime()).toBeGreaterThanOrEqual(third.getTime());

    // a day later nothing more is charged
    await advance({ seconds: DAY_S });
    expect(await chargesOf(project, id)).toHaveLength(3);
    expect((await call(project, 'GET', `/v2/subscribe/schedules/${id}`)).body.charges_made).toBe(3);
  }, 180_000);

  it('a reserve executes once at its time; a revoked one at the same time never does', async () => {
    const project = await t.createProject();
    const key = await keyInClient(t, project).issuedKey();
    const executeAt = new Date((await sandboxNow(project)).getTime() + 2 * HOUR_S * 1000);
    const reserve = async (orderId: string) => {
      const res = await call(project, 'POST', '/v2/subscribe/payment/reserve', {
        billing_key: key,
        order_id: orderId,
        order_name: 'Reserved plan',
        price: 12_000,
        reserve_execute_at: executeAt.toISOString(),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.reserve_id as string;
    };
    const kept = `kept-${randomUUID()}`;
    const revoked = `revoked-${randomUUID()}`;
    const keptId = await reserve(kept);
    const revokedId = await reserve(revoked);
    const revoke = await call(project, 'DELETE', `/v2/subscribe/payment/reserve/${revokedId}`);
    expect(revoke.body).toMatchObject({ reserve_id: revokedId, success: true });
    const statusOf = async (id: string) => (await call(project, 'GET', `/v2/subscribe/payment/reserve/${id}`)).body;

    await advance({ to: new Date(executeAt.getTime() - 60_000).toISOString() });
    expect((await statusOf(keptId)).status).toBe('reserved');
    await advance({ to: new Date(executeAt.getTime() + 60_000).toISOString() });
    const paid = await statusOf(keptId);
    expect(paid).toMatchObject({ status: 'paid', receipt_id: expect.any(String) });
    expect(new Date(paid.reserve_started_at as string).getTime()).toBeGreaterThanOrEqual(executeAt.getTime());
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, kept))).toBe(1);

    // a day on: still one charge of the kept reserve, none of the revoked one
    await advance({ seconds: DAY_S });
    expect(await statusOf(keptId)).toMatchObject({ status: 'paid', receipt_id: paid.receipt_id });
    const gone = await statusOf(revokedId);
    expect(gone.status).toBe('revoked');
    expect(gone.receipt_id).toBeUndefined();
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, kept))).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, revoked))).toBe(0);
    const receipts = await t.deps.database.db
      .selectFrom('receipts')
      .select('order_id')
      .where('application_id', '=', project.applicationId)
      .where('order_name', '=', 'Reserved plan')
      .execute();
    expect(receipts.map((r) => r.order_id)).toEqual([kept]);
  }, 180_000);
});

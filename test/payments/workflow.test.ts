// The reconcile workflow with stub activities (no database, no PG, no API): a charge or a cancel whose PG answer
// was lost is settled by asking until the answer is known (a live owner of the call, an outage: retried), then
// the merchant is told once; a request that settled it first leaves nothing to tell. Virtual time on the
// project's engine; payloads sealed by paygate's codec.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconcileActivities } from '../../src/activities/payments.js';
import {
  RECONCILE_WORKFLOW_TYPE,
  RECONCILED_EVENT,
  type ReconcileInput,
  type ReconcileNotice,
  reconcileCancelWorkflowId,
  reconcileChargeWorkflowId,
} from '../../src/payments/reconcile-contract.js';
import type { reconcileWorkflow } from '../../src/workflows/payments.js';
import { ActivityStubs, startWorkflowTestEnv, type WorkerScope, type WorkflowTestEnv } from '../helpers/workflow-env.js';

type Stubs = ActivityStubs<ReconcileActivities>;

const notice = (receiptId: string, operation: 'charge' | 'cancel', outcome: string): ReconcileNotice => ({
  applicationId: 'app-1',
  noticeKey: `${operation}\u0000${receiptId}`,
  tags: [receiptId, 'order-1'],
  payload: { webhook_type: RECONCILED_EVENT.webhookType, operation, outcome, receipt: { receipt_id: receiptId } },
  ...(operation === 'charge'
    ? {
        feedback: {
          url: 'https://merchant.example/feedback',
          contentType: 'application/json' as const,
          payload: { receipt_id: receiptId },
        },
      }
    : {}),
});

/** What the settling activity throws while another request still owns the call (see ReconcileLater). */
const ownedElsewhere = () => ApplicationFailure.retryable('the call is still owned by a live request', 'ReconcileLater');

describe('reconcile workflow (stub activities)', () => {
  let t: WorkflowTestEnv;
  beforeAll(async () => {
    t = await startWorkflowTestEnv();
  });
  afterAll(async () => {
    await t?.close();
  });

  const start = (scope: WorkerScope, args: ReconcileInput) =>
    scope.start<typeof reconcileWorkflow>(
      RECONCILE_WORKFLOW_TYPE,
      [args],
      args.kind === 'charge' ? reconcileChargeWorkflowId(args.receiptId) : reconcileCancelWorkflowId(args.cancelKey),
    );
  const stubsWith = (overrides: Partial<ReconcileActivities> = {}): Stubs =>
    new ActivityStubs<ReconcileActivities>({
      settleCharge: async ({ receiptId }) => ({ outcome: 'completed', notice: notice(receiptId, 'charge', 'completed') }),
      settleCancel: async ({ receiptId }) => ({ outcome: 'cancelled', notice: notice(receiptId, 'cancel', 'cancelled') }),
      notifyReconciled: async () => undefined,
      ...overrides,
    });

  it('a charge settled at the first ask: the merchant is told once, the outcome is the result', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const receiptId = `rcpt-${randomUUID()}`;
      const handle = await start(scope, { kind: 'charge', receiptId });
      expect(await handle.result()).toBe('completed');
      expect(stubs.names()).toEqual(['settleCharge', 'notifyReconciled']);
      expect(stubs.inputsOf('settleCharge')).toEqual([{ receiptId }]);
      expect(stubs.inputsOf('notifyReconciled')).toEqual([notice(receiptId, 'charge', 'completed')]);
    });
  });

  it('a charge whose answer is not known yet (a live owner, then a PG outage) is asked again on a backoff until it is', async () => {
    const stubs = stubsWith({
      settleCharge: async ({ receiptId }) => {
        const attempt = stubs.calls.filter((c) => c.name === 'settleCharge').length;
        if (attempt <= 3) throw ownedElsewhere();
        if (attempt <= 6) throw new Error('PG unreachable');
        return { outcome: 'failed', notice: notice(receiptId, 'charge', 'failed') };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const receiptId = `rcpt-${randomUUID()}`;
      const handle = await start(scope, { kind: 'charge', receiptId });
      expect(await handle.result()).toBe('failed');
      const settles = stubs.calls.filter((c) => c.name === 'settleCharge');
      expect(settles.map((c) => c.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(settles.every((c) => (c.input as { receiptId: string }).receiptId === receiptId)).toBe(true);
      // 1 s doubling, capped at 20 s
      const waits = settles.slice(1).map((c, i) => c.scheduledAtMs - settles[i]!.scheduledAtMs);
      [1, 2, 4, 8, 16, 20].forEach((seconds, i) => {
        expect(waits[i]).toBeGreaterThanOrEqual(seconds * 1000);
        expect(waits[i]).toBeLessThan(seconds * 1000 + 2_000);
      });
      expect(stubs.inputsOf('notifyReconciled')).toEqual([notice(receiptId, 'charge', 'failed')]);
    });
  });

  it('a cancel is settled by its cancel key: cancelled, or not cancelled, and told either way', async () => {
    const stubs = stubsWith({
      settleCancel: async ({ receiptId, cancelKey }) =>
        cancelKey.endsWith('-refused')
          ? { outcome: 'not_cancelled', notice: notice(receiptId, 'cancel', 'not_cancelled') }
          : { outcome: 'cancelled', notice: notice(receiptId, 'cancel', 'cancelled') },
    });
    await t.withWorker(stubs, async (scope) => {
      const receiptId = `rcpt-${randomUUID()}`;
      const cancelled = await start(scope, { kind: 'cancel', receiptId, cancelKey: `ck-${randomUUID()}` });
      const refused = await start(scope, { kind: 'cancel', receiptId, cancelKey: `ck-${randomUUID()}-refused` });
      expect(await cancelled.result()).toBe('cancelled');
      expect(await refused.result()).toBe('not_cancelled');
      expect(stubs.inputsOf('settleCancel').map((c) => c.receiptId)).toEqual([receiptId, receiptId]);
      expect(
        stubs
          .inputsOf('notifyReconciled')
          .map((n) => n.payload.outcome)
          .sort(),
      ).toEqual(['cancelled', 'not_cancelled']);
      expect(stubs.names()).not.toContain('settleCharge');
    });
  });

  it('a cancel still owned by its request is waited for, then settled', async () => {
    const stubs = stubsWith({
      settleCancel: async ({ receiptId }) => {
        if (stubs.calls.filter((c) => c.name === 'settleCancel').length < 3) throw ownedElsewhere();
        return { outcome: 'cancelled', notice: notice(receiptId, 'cancel', 'cancelled') };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const receiptId = `rcpt-${randomUUID()}`;
      const cancelKey = `ck-${randomUUID()}`;
      const handle = await start(scope, { kind: 'cancel', receiptId, cancelKey });
      expect(await handle.result()).toBe('cancelled');
      expect(stubs.calls.map((c) => [c.name, c.attempt])).toEqual([
        ['settleCancel', 1],
        ['settleCancel', 2],
        ['settleCancel', 3],
        ['notifyReconciled', 1],
      ]);
      expect(stubs.inputsOf('settleCancel')[0]).toEqual({ receiptId, cancelKey });
    });
  });

  it('settled by a request first: outcome none, nobody is told', async () => {
    const stubs = stubsWith({ settleCharge: async () => ({ outcome: 'none' }) });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { kind: 'charge', receiptId: `rcpt-${randomUUID()}` });
      expect(await handle.result()).toBe('none');
      expect(stubs.names()).toEqual(['settleCharge']);
    });
  });

  it('telling the merchant is retried until it is saved; the receipt is settled once', async () => {
    const stubs = stubsWith({
      notifyReconciled: async () => {
        if (stubs.calls.filter((c) => c.name === 'notifyReconciled').length < 3) throw new Error('database unavailable');
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { kind: 'charge', receiptId: `rcpt-${randomUUID()}` });
      expect(await handle.result()).toBe('completed');
      expect(stubs.calls.map((c) => [c.name, c.attempt])).toEqual([
        ['settleCharge', 1],
        ['notifyReconciled', 1],
        ['notifyReconciled', 2],
        ['notifyReconciled', 3],
      ]);
    });
  });
});

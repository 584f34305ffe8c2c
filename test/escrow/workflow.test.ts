// The escrow workflow's state machine with stub activities (no database, no PG, no API): shipping start (and its
// refusals and cap), the buyer's confirm / rejection / approval (the refund) / hold from PG notifications,
// duplicates and events that do not fit, and the reconcile timer whose wait doubles while the PG has nothing new.
// Virtual time on the project's engine; payloads sealed by paygate's codec.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EscrowActivities } from '../../src/activities/escrow.js';
import {
  ESCROW_WORKFLOW_TYPE,
  type EscrowInput,
  type EscrowTransition,
  escrowStatusQuery,
  escrowWorkflowId,
  MAX_SHIPPING_ATTEMPTS,
  type PgNotification,
  pgNotificationSignal,
  providerFollowUpSignal,
  type ShippingStartArgs,
  shippingStartUpdate,
} from '../../src/escrow/contract.js';
import type { ResolvedShipment } from '../../src/gateways/rules.js';
import { type BuyerEvent, EscrowStatus } from '../../src/escrow/status.js';
import { GATEWAY_DECLINED, type GatewayDeclinedDetails } from '../../src/gateways/declined.js';
import { UPDATE_NOT_AUTHORIZED } from '../../src/platform/temporal/messages.js';
import type { escrowWorkflow } from '../../src/workflows/escrow.js';
import {
  ActivityStubs,
  refusal,
  startWorkflowTestEnv,
  timerDurationsMs,
  type WorkerScope,
  type WorkflowTestEnv,
} from '../helpers/workflow-env.js';

const HOUR = 60 * 60 * 1000;
const SHIPMENT: ResolvedShipment = {
  trackingNumber: '1234567890',
  deliveryCorp: 'CJ',
  recipient: { name: '김구매', phone: '01011112222', address: '서울시 중구', zipcode: '04524' },
  sender: { name: '판매상점', phone: '0212345678', zipcode: '06236', addr1: '서울시 강남구', addr2: '1층' },
};
const CONFIRM_URL = 'https://escrow.example/confirm/1';

/** A promise and what settles it: a stub holds an activity on it, or tells the test it was reached. */
function latch(): [Promise<void>, () => void] {
  let open!: () => void;
  const settled = new Promise<void>((resolve) => {
    open = resolve;
  });
  return [settled, open];
}

type Stubs = ActivityStubs<EscrowActivities>;
type RecordInput = Parameters<EscrowActivities['recordEscrowEvent']>[0];

const shipping = (shipment: ResolvedShipment = SHIPMENT): ShippingStartArgs => ({ nonce: randomUUID(), shipment });
const declined = (pgErrorCode: string, pgMessage: string) =>
  ApplicationFailure.create({
    type: GATEWAY_DECLINED,
    message: pgMessage,
    nonRetryable: true,
    details: [{ pgErrorCode, pgMessage } satisfies GatewayDeclinedDetails],
  });

/** The recorded events as (event, source, from -> to, note) rows: what the order's history would show. */
const rows = (stubs: Stubs) =>
  stubs
    .inputsOf('recordEscrowEvent')
    .map(({ transition: e }: RecordInput) => [e.seq, e.event, e.source, e.fromStatus, e.toStatus ?? null, e.note ?? null]);

describe('escrow workflow (stub activities)', () => {
  let t: WorkflowTestEnv;
  beforeAll(async () => {
    t = await startWorkflowTestEnv();
  });
  afterAll(async () => {
    await t?.close();
  });

  const input = (overrides: Partial<EscrowInput> = {}): EscrowInput => ({
    receiptId: `rcpt-${randomUUID()}`,
    applicationId: 'app-1',
    pg: 'sandbox_escrow_a',
    gatewayTid: 'pg-tid-1',
    reconcileAfterHours: 2,
    ...overrides,
  });

  const stubsWith = (overrides: Partial<EscrowActivities> = {}): Stubs =>
    new ActivityStubs<EscrowActivities>({
      startEscrowShipping: async () => ({ confirmUrl: CONFIRM_URL }),
      recordEscrowEvent: async () => ({}),
      refundEscrowPayment: async () => ({ refunded: true }),
      inquireEscrowStatus: async () => EscrowStatus.ShippingStarted,
      ...overrides,
    });

  const start = (scope: WorkerScope, args: EscrowInput) =>
    scope.start<typeof escrowWorkflow>(ESCROW_WORKFLOW_TYPE, [args], escrowWorkflowId(args.receiptId));

  let notifications = 0;
  const notification = (event: BuyerEvent, extra: Partial<PgNotification> = {}): PgNotification => ({
    notificationId: `noti-${++notifications}`,
    event,
    occurredAt: '2030-01-02T03:04:05.000Z',
    ...extra,
  });

  it('shipping start moves 0 -> 3 with the tracking and the confirm URL; the buyer confirms (3 -> 1) and the run ends', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const args = input();
      const handle = await start(scope, args);
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.Waiting);
      const started = await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      expect(started).toEqual({ shippingStartedAt: expect.any(String) });
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.ShippingStarted);
      // the shipping start's PG call and record run as local activities, carrying the workflow's time (sandbox clock)
      expect(stubs.inputsOf('startEscrowShipping')).toEqual([
        {
          receiptId: args.receiptId,
          attempt: 1,
          pg: 'sandbox_escrow_a',
          gatewayTid: 'pg-tid-1',
          shipment: SHIPMENT,
          workflowTimeMs: expect.any(Number),
        },
      ]);
      expect(stubs.calls.map((c) => [c.name, c.local])).toEqual([
        ['startEscrowShipping', true],
        ['recordEscrowEvent', true],
      ]);
      expect(stubs.inputsOf('recordEscrowEvent')).toEqual([
        {
          workflowTimeMs: expect.any(Number),
          transition: {
            receiptId: args.receiptId,
            seq: 1,
            event: 'shipping_started',
            source: 'api',
            fromStatus: EscrowStatus.Waiting,
            toStatus: EscrowStatus.ShippingStarted,
            occurredAt: started.shippingStartedAt,
            confirmUrl: CONFIRM_URL,
          } satisfies EscrowTransition,
          tracking: { trackingNumber: '1234567890', deliveryCorp: 'CJ' },
        },
      ]);
      // a second shipping start is refused by the validator
      expect((await refusal(handle.executeUpdate(shippingStartUpdate, { args: [shipping()] }))).type).toBe('RC_ESCROW_NOT_READY');

      const confirmed = notification('purchase_confirmed');
      await handle.signal(pgNotificationSignal, confirmed);
      await handle.result();
      expect(stubs.inputsOf('recordEscrowEvent')[1]).toEqual({
        transition: {
          receiptId: args.receiptId,
          seq: 2,
          event: 'purchase_confirmed',
          source: 'pg_notification',
          fromStatus: EscrowStatus.ShippingStarted,
          toStatus: EscrowStatus.PurchaseConfirmed,
          occurredAt: confirmed.occurredAt,
          notificationId: confirmed.notificationId,
        },
      });
      expect(stubs.names()).toEqual(['startEscrowShipping', 'recordEscrowEvent', 'recordEscrowEvent']);
      expect(stubs.names()).not.toContain('refundEscrowPayment');
    });
  });

  it('a shipping start the PG refuses leaves the order waiting; a corrected one (its own attempt key) starts it', async () => {
    let starts = 0;
    const stubs = stubsWith({
      startEscrowShipping: async () => {
        if (++starts === 1) throw declined('E101', 'unknown courier');
        return {};
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input());
      const refused = await refusal(handle.executeUpdate(shippingStartUpdate, { args: [shipping()] }));
      expect(refused.type).toBe('RC_ESCROW_SHIPPING_START_FAILED');
      expect(refused.message).toBe('unknown courier');
      expect(refused.details?.[0]).toEqual({ pgErrorCode: 'E101' });
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.Waiting);
      expect(stubs.names()).toEqual(['startEscrowShipping']);

      const corrected = { ...SHIPMENT, deliveryCorp: 'HANJIN' };
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping(corrected)] });
      expect(stubs.inputsOf('startEscrowShipping').map((s) => [s.attempt, s.shipment.deliveryCorp])).toEqual([
        [1, 'CJ'],
        [2, 'HANJIN'],
      ]);
      // no confirm URL from this PG: none recorded
      expect(stubs.inputsOf('recordEscrowEvent')[0]?.transition).not.toHaveProperty('confirmUrl');
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.ShippingStarted);
    });
  });

  it('an unreachable PG fails the shipping start after its retries with 9502, not the refusal 2701; the next start asks the PG first', async () => {
    const pgStatus: number = EscrowStatus.Waiting;
    let reachable = false;
    const stubs = stubsWith({
      startEscrowShipping: async () => {
        if (!reachable) throw new Error('connect ECONNREFUSED');
        return { confirmUrl: CONFIRM_URL };
      },
      inquireEscrowStatus: async () => pgStatus,
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input());
      const [unreachable] = await Promise.all([
        refusal(handle.executeUpdate(shippingStartUpdate, { args: [shipping()] })),
        t.skipTime(10_000),
      ]);
      expect(unreachable.type).toBe('GATEWAY_UNAVAILABLE');
      expect(unreachable.message).toContain('Retry the same shipping start');
      expect(unreachable.details?.[0]).toEqual({});
      expect(stubs.calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.Waiting);

      // the PG did not register it: the retry asks, then sends a start of its own
      reachable = true;
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      expect(stubs.names().filter((n) => n === 'inquireEscrowStatus')).toHaveLength(1);
      expect(stubs.names().filter((n) => n === 'startEscrowShipping')).toHaveLength(4);
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.ShippingStarted);
    });
  });

  it('a shipping start registered under a lost answer is recorded from the PG on the retry, never sent again', async () => {
    let calls = 0;
    const stubs = stubsWith({
      // the PG registers the first attempt; its answer (and the retries' answers) never arrive
      startEscrowShipping: async () => {
        calls++;
        throw new Error('socket hang up');
      },
      inquireEscrowStatus: async () => (calls > 0 ? EscrowStatus.ShippingStarted : EscrowStatus.Waiting),
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input());
      const [lost] = await Promise.all([
        refusal(handle.executeUpdate(shippingStartUpdate, { args: [shipping()] })),
        t.skipTime(10_000),
      ]);
      expect(lost.type).toBe('GATEWAY_UNAVAILABLE');
      const again = await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      expect(again).toEqual({ shippingStartedAt: expect.any(String) });
      expect(calls).toBe(3);
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.ShippingStarted);
      const recorded = stubs
        .inputsOf('recordEscrowEvent')
        .map((i) => (i as { transition: { event: string; note?: string } }).transition);
      expect(recorded).toEqual([
        expect.objectContaining({ event: 'shipping_started', note: expect.stringContaining('answer was lost') }),
      ]);
      // a third start is the spec's repeated call: 2700, answered before anything reaches the PG
      const repeated = await refusal(handle.executeUpdate(shippingStartUpdate, { args: [shipping()] }));
      expect(repeated.type).toBe('RC_ESCROW_NOT_READY');
      expect(calls).toBe(3);
    });
  });

  it('a start in doubt that the merchant never sends again is recorded when the provider says the order moved on', async () => {
    let calls = 0;
    const stubs = stubsWith({
      startEscrowShipping: async () => {
        calls++;
        throw new Error('socket hang up');
      },
      // the PG registered the start, and the buyer has confirmed since
      inquireEscrowStatus: async () => (calls > 0 ? EscrowStatus.PurchaseConfirmed : EscrowStatus.Waiting),
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ reconcileAfterHours: 72 }));
      const [lost] = await Promise.all([
        refusal(handle.executeUpdate(shippingStartUpdate, { args: [shipping()] })),
        t.skipTime(10_000),
      ]);
      expect(lost.type).toBe('GATEWAY_UNAVAILABLE');
      // the provider's notification (the service signals a follow-up: paygate's order is at 0, the provider's beyond)
      await handle.signal(providerFollowUpSignal);
      await handle.result();
      expect(rows(stubs)).toEqual([
        [1, 'shipping_started', 'api', 0, 3, 'registered at the PG by an earlier shipping start whose answer was lost'],
        [2, 'purchase_confirmed', 'reconcile', 3, 1, null],
      ]);
      expect(calls).toBe(3);
    });
  });

  it(`at most ${MAX_SHIPPING_ATTEMPTS} shipping starts reach the PG; the next, and one without a fresh proof, are refused untried`, async () => {
    const stubs = stubsWith({
      startEscrowShipping: async () => {
        throw declined('E102', 'invalid tracking number');
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input());
      const noProof = await refusal(
        handle.executeUpdate(shippingStartUpdate, { args: [{ nonce: 'short', shipment: SHIPMENT }] }),
      );
      expect(noProof.type).toBe(UPDATE_NOT_AUTHORIZED);
      const reused = shipping();
      for (let i = 0; i < MAX_SHIPPING_ATTEMPTS; i++) {
        const refused = await refusal(handle.executeUpdate(shippingStartUpdate, { args: [i === 0 ? reused : shipping()] }));
        expect(refused.details?.[0]).toEqual({ pgErrorCode: 'E102' });
      }
      expect((await refusal(handle.executeUpdate(shippingStartUpdate, { args: [reused] }))).type).toBe(UPDATE_NOT_AUTHORIZED);
      const capped = await refusal(handle.executeUpdate(shippingStartUpdate, { args: [shipping()] }));
      expect(capped.type).toBe('RC_ESCROW_SHIPPING_START_FAILED');
      expect(capped.message).toContain(`At most ${MAX_SHIPPING_ATTEMPTS} shipping starts`);
      expect(stubs.inputsOf('startEscrowShipping').map((s) => s.attempt)).toEqual(
        Array.from({ length: MAX_SHIPPING_ATTEMPTS }, (_, i) => i + 1),
      );
    });
  });

  it('rejection (3 -> -2), then approval: the payment is refunded (retried until it is) before -3 is recorded', async () => {
    let refunds = 0;
    const stubs = stubsWith({
      refundEscrowPayment: async () => {
        if (++refunds === 1) throw new Error('database unavailable');
        return { refunded: true };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const args = input();
      const handle = await start(scope, args);
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      await handle.signal(pgNotificationSignal, notification('purchase_rejected'));
      await stubs.called('recordEscrowEvent', 2);
      await handle.signal(pgNotificationSignal, notification('rejection_approved'));
      await handle.result();
      expect(stubs.names()).toEqual([
        'startEscrowShipping',
        'recordEscrowEvent',
        'recordEscrowEvent',
        'refundEscrowPayment',
        'refundEscrowPayment',
        'recordEscrowEvent',
      ]);
      expect(stubs.inputsOf('refundEscrowPayment')).toEqual([
        { receiptId: args.receiptId, applicationId: 'app-1' },
        { receiptId: args.receiptId, applicationId: 'app-1' },
      ]);
      expect(rows(stubs)).toEqual([
        [1, 'shipping_started', 'api', 0, 3, null],
        [2, 'purchase_rejected', 'pg_notification', 3, -2, null],
        [3, 'rejection_approved', 'pg_notification', -2, -3, null],
      ]);
    });
  });

  it('a rejection approval whose payment the merchant had refunded already is recorded with a note', async () => {
    const stubs = stubsWith({ refundEscrowPayment: async () => ({ refunded: false }) });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input());
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      await handle.signal(pgNotificationSignal, notification('purchase_rejected'));
      await handle.signal(pgNotificationSignal, notification('rejection_approved'));
      await handle.result();
      expect(rows(stubs).at(-1)).toEqual([
        3,
        'rejection_approved',
        'pg_notification',
        -2,
        -3,
        'the payment was already refunded in full',
      ]);
    });
  });

  it('notifications that do not fit, and redeliveries, are recorded and ignored; settlement held from -2 ends the order', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input());
      // before shipping: nothing fits
      await handle.signal(pgNotificationSignal, notification('purchase_confirmed'));
      await stubs.called('recordEscrowEvent', 1);
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.Waiting);
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });

      const rejected = notification('purchase_rejected');
      await handle.signal(pgNotificationSignal, rejected);
      await handle.signal(pgNotificationSignal, rejected);
      // the service saw the id in the order's events already
      await handle.signal(pgNotificationSignal, notification('purchase_confirmed', { recorded: true }));
      await handle.signal(pgNotificationSignal, notification('purchase_confirmed'));
      await handle.signal(pgNotificationSignal, notification('settlement_held'));
      await handle.result();
      expect(rows(stubs)).toEqual([
        [1, 'purchase_confirmed', 'pg_notification', 0, null, 'does not fit escrow status 0'],
        [2, 'shipping_started', 'api', 0, 3, null],
        [3, 'purchase_rejected', 'pg_notification', 3, -2, null],
        [4, 'purchase_rejected', 'pg_notification', -2, null, 'duplicate notification'],
        [5, 'purchase_confirmed', 'pg_notification', -2, null, 'duplicate notification'],
        [6, 'purchase_confirmed', 'pg_notification', -2, null, 'does not fit escrow status -2'],
        [7, 'settlement_held', 'pg_notification', -2, -1, null],
      ]);
      expect(await handle.query(escrowStatusQuery)).toBe(EscrowStatus.SettlementHeld);
      expect(stubs.names()).not.toContain('refundEscrowPayment');
      expect(stubs.names()).not.toContain('inquireEscrowStatus');
    });
  });

  it('waiting for shipping runs no reconcile timer: days pass without asking the PG', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input());
      await t.skipTime(30 * 24 * HOUR);
      expect(stubs.names()).toEqual([]);
      expect(await timerDurationsMs(handle)).toEqual([]);
    });
  });

  it('silent for the reconcile hours, the PG is asked; its wait doubles while nothing is new (capped at 8x), then it applies what it learns', async () => {
    let inquiries = 0;
    const stubs = stubsWith({
      inquireEscrowStatus: async () => {
        inquiries++;
        // the fifth inquiry finds the PG unreachable on every retry: as good as nothing new
        if (inquiries >= 5 && inquiries <= 7) throw new Error('connect ECONNREFUSED');
        return inquiries < 8 ? EscrowStatus.ShippingStarted : EscrowStatus.PurchaseConfirmed;
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const args = input({ reconcileAfterHours: 2 });
      const handle = await start(scope, args);
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      const shippedAt = await t.now();
      await t.skipTime(2 * HOUR - 60_000);
      expect(stubs.names()).not.toContain('inquireEscrowStatus');
      await handle.result();
      expect(await timerDurationsMs(handle)).toEqual([2, 4, 8, 16, 16, 16].map((h) => h * HOUR));
      expect(stubs.inputsOf('inquireEscrowStatus')[0]).toEqual({
        receiptId: args.receiptId,
        pg: 'sandbox_escrow_a',
        gatewayTid: 'pg-tid-1',
      });
      expect(stubs.calls.filter((c) => c.name === 'inquireEscrowStatus').map((c) => c.attempt)).toEqual([1, 1, 1, 1, 1, 2, 3, 1]);
      expect(rows(stubs)).toEqual([
        [1, 'shipping_started', 'api', 0, 3, null],
        [2, 'purchase_confirmed', 'reconcile', 3, 1, null],
      ]);
      // 62 hours of timers and a few seconds of retries
      expect((await t.now()) - shippedAt).toBeGreaterThanOrEqual(62 * HOUR);
      expect((await t.now()) - shippedAt).toBeLessThan(63 * HOUR);
    });
  });

  it('a provider follow-up asks at once, and again after 5 s, 10 s while unanswered, instead of waiting the reconcile hours', async () => {
    let inquiries = 0;
    const stubs = stubsWith({
      inquireEscrowStatus: async () => {
        inquiries++;
        // the first two inquiries (three attempts each) find the provider down; the third learns the confirmation
        if (inquiries <= 6) throw new Error('connect ECONNREFUSED');
        return EscrowStatus.PurchaseConfirmed;
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ reconcileAfterHours: 72 }));
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      const shippedAt = await t.now();
      await handle.signal(providerFollowUpSignal);
      await handle.result();
      expect(inquiries).toBe(7);
      expect(rows(stubs)).toEqual([
        [1, 'shipping_started', 'api', 0, 3, null],
        [2, 'purchase_confirmed', 'reconcile', 3, 1, null],
      ]);
      // the follow-up's waits (5 s, 10 s) and the retries' seconds, not the 72 hours
      expect((await t.now()) - shippedAt).toBeLessThan(60_000);
      expect((await timerDurationsMs(handle)).filter((ms) => ms < HOUR)).toEqual([5_000, 10_000]);
    });
  });

  it('a follow-up or notification that arrives while the shipping start is at the PG is acted on once it ends', async () => {
    const [atPg, release] = latch();
    const [reachedPg, reached] = latch();
    const stubs = stubsWith({
      startEscrowShipping: async () => {
        reached();
        await atPg;
        return { confirmUrl: CONFIRM_URL };
      },
      inquireEscrowStatus: async () => EscrowStatus.ShippingStarted,
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ reconcileAfterHours: 72 }));
      const started = handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      await reachedPg;
      // the provider already shipped it (its notification came before the start's answer): a follow-up
      await handle.signal(providerFollowUpSignal);
      release();
      await started;
      await handle.signal(pgNotificationSignal, notification('purchase_confirmed'));
      await handle.result();
      expect(rows(stubs)).toEqual([
        [1, 'shipping_started', 'api', 0, 3, null],
        [2, 'purchase_confirmed', 'pg_notification', 3, 1, null],
      ]);
    });
  });

  it('a follow-up that arrives while the PG is asked for an earlier one is answered too: the PG is asked again', async () => {
    // the chaos suite's finding: B rejected (A's follow-up asked B: -2), then approved the rejection and refunded (-3)
    // while A was recording the -2; that second follow-up was cleared with the first, and A waited its reconcile hours
    let pgStatus: number = EscrowStatus.RejectionRequested;
    const [recordHeld, releaseRecord] = latch();
    const [recordingRejection, recording] = latch();
    const stubs = stubsWith({
      inquireEscrowStatus: async () => pgStatus,
      recordEscrowEvent: async (input: RecordInput) => {
        if (input.transition.event === 'purchase_rejected') {
          recording();
          await recordHeld;
        }
        return {};
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ reconcileAfterHours: 72 }));
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      const shippedAt = await t.now();
      await handle.signal(providerFollowUpSignal);
      await recordingRejection;
      // B moves on while A records what it learned; its notification could not be checked either: a follow-up
      pgStatus = EscrowStatus.RejectionApproved;
      await handle.signal(providerFollowUpSignal);
      releaseRecord();
      await handle.result();
      expect(rows(stubs)).toEqual([
        [1, 'shipping_started', 'api', 0, 3, null],
        [2, 'purchase_rejected', 'reconcile', 3, -2, null],
        [3, 'rejection_approved', 'reconcile', -2, -3, null],
      ]);
      expect(stubs.names()).toContain('refundEscrowPayment');
      // asked again at once, not after the 72 hours
      expect((await t.now()) - shippedAt).toBeLessThan(60_000);
    });
  });

  it('a notification resets the doubled wait to the reconcile hours', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ reconcileAfterHours: 3 }));
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      await t.skipTime(3 * HOUR + 6 * HOUR + HOUR);
      expect(stubs.names().filter((n) => n === 'inquireEscrowStatus')).toHaveLength(2);
      // a notification that does not fit 3 (nothing changes) still shows the PG is talking
      await handle.signal(pgNotificationSignal, notification('rejection_approved'));
      await stubs.called('recordEscrowEvent', 2);
      await t.skipTime(3 * HOUR + 60_000);
      expect(stubs.names().filter((n) => n === 'inquireEscrowStatus')).toHaveLength(3);
      // 3 h, 6 h, 12 h (interrupted by the notification), 3 h, then 6 h again
      expect(await timerDurationsMs(handle)).toEqual([3, 6, 12, 3, 6].map((h) => h * HOUR));
    });
  });

  it('a reconcile that finds the order refunded at the PG walks through -2 to -3 and refunds', async () => {
    const stubs = stubsWith({ inquireEscrowStatus: async () => EscrowStatus.RejectionApproved });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ reconcileAfterHours: 1 }));
      await handle.executeUpdate(shippingStartUpdate, { args: [shipping()] });
      await handle.result();
      expect(stubs.names()).toEqual([
        'startEscrowShipping',
        'recordEscrowEvent',
        'inquireEscrowStatus',
        'recordEscrowEvent',
        'refundEscrowPayment',
        'recordEscrowEvent',
      ]);
      expect(rows(stubs)).toEqual([
        [1, 'shipping_started', 'api', 0, 3, null],
        [2, 'purchase_rejected', 'reconcile', 3, -2, null],
        [3, 'rejection_approved', 'reconcile', -2, -3, null],
      ]);
      expect(await timerDurationsMs(handle)).toEqual([HOUR]);
    });
  });
});

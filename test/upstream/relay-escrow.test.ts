// paygate in front of a provider, escrow: A (the relay) in front of B (another paygate in sandbox mode, the provider),
// each with its engine and worker, listening on loopback. The payment is made at B (the provider's payment window);
// the merchant starts shipping at A, which looks the receipt up at B (ownership: B answers for the project's keys),
// starts its escrow workflow and forwards the shipping start. The buyer acts at B; B's ESCROW_STATUS_CHANGED reaches
// A's notification_url, A asks B and moves its order: confirmation, and rejection then approval with B's refund,
// each reaching A's merchant webhook once. A dropped notification is caught by A's reconcile timer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { BUYER, createEscrowProject, escrowClient, startEscrowApp } from '../escrow/fixtures.js';
import { eventually, type Receiver, startReceiver } from '../webhooks/fixtures.js';
import { routeToProvider } from './fixtures.js';
import { startHostileProvider } from './hostile-provider.js';

const SHIPMENT = { tracking_number: 'TRK-1', delivery_corp: 'CJ', user: { username: BUYER.username, phone: BUYER.phone } };

let a: TestApp;
let b: TestApp;
let atA: TestProject;
let atB: TestProject;
let merchantHook: Receiver;
let notificationUrl: string;
let atAApi: ReturnType<typeof escrowClient>;
let atBApi: ReturnType<typeof escrowClient>;

beforeAll(async () => {
  b = await startEscrowApp();
  // A's lookups may take 20 s, as a provider's slow receipt reads may be allowed to: a notification's own lookup is
  // bounded at 5 s whatever this says (the test below)
  a = await startEscrowApp({ UPSTREAM_DEADLINES_MS: 'lookup=20000' });
  merchantHook = await startReceiver('/merchant');
  atA = await createEscrowProject(a, { webhook_url: merchantHook.url, escrow_reconcile_hours: 1 });
  // the provider's project sends its notifications to A's notification_url
  notificationUrl = `http://127.0.0.1:${a.deps.config.port}/upstream/v1/notifications/${atA.applicationId}`;
  atB = await createEscrowProject(b, { webhook_url: notificationUrl });
  const configured = await routeToProvider(a, atA, { baseUrl: `http://127.0.0.1:${b.deps.config.port}`, project: atB }, [
    'sandbox_escrow_a',
  ]);
  expect(configured.notification_url).toBe(notificationUrl);
  atAApi = escrowClient(a, atA);
  atBApi = escrowClient(b, atB);
}, 180_000);
afterAll(async () => {
  await merchantHook?.close();
  await a?.close();
  await b?.close();
});

/** The ESCROW_STATUS_CHANGED deliveries A's merchant received for a receipt, by escrow status (distinct ids). */
const merchantEvents = (receiptId: string) => {
  const byStatus = new Map<number, Set<string>>();
  for (const r of merchantHook.requests) {
    const body = JSON.parse(r.body) as { receipt_id?: string; escrow_data?: { status: number } };
    if (body.receipt_id !== receiptId || body.escrow_data === undefined) continue;
    const seen = byStatus.get(body.escrow_data.status) ?? new Set<string>();
    seen.add(String(r.headers['webhook-id']));
    byStatus.set(body.escrow_data.status, seen);
  }
  return byStatus;
};
const escrowStatusAtA = async (receiptId: string) =>
  ((await atAApi.receipt(receiptId)).body.escrow_data as { status: number } | undefined)?.status;

/** The transitions A applied to its order (event, source, status), oldest first. */
const appliedAtA = async (receiptId: string) =>
  ((await atAApi.events(receiptId)).body.list as { event: string; source: string; to_status?: number; applied: boolean }[])
    .filter((e) => e.applied)
    .map(({ event, source, to_status }) => ({ event, source, to_status }));

async function paidAtB(): Promise<string> {
  const paid = await atBApi.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  return paid.body.receipt_id as string;
}

/**
 * A shop at A whose provider is B behind a hostile hop of the test's own (hostile-provider.ts), with a project of its
 * own at B that sends its notifications to the shop's notification_url (or nowhere: `notified: false`).
 */
async function shopBehindHostileHop(notified = true) {
  const hostile = await startHostileProvider(`http://127.0.0.1:${b.deps.config.port}`);
  const shop = await createEscrowProject(a, { webhook_url: merchantHook.url, escrow_reconcile_hours: 72 });
  const shopAtB = await createEscrowProject(b, {
    webhook_url: notified ? `http://127.0.0.1:${a.deps.config.port}/upstream/v1/notifications/${shop.applicationId}` : null,
  });
  await routeToProvider(a, shop, { baseUrl: hostile.url, project: shopAtB }, ['sandbox_escrow_a']);
  const shopApi = escrowClient(a, shop);
  const shopAtBApi = escrowClient(b, shopAtB);
  /** an escrow payment at B (its receipt_id) */
  const paid = async (): Promise<string> => {
    const payment = await shopAtBApi.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER });
    expect(payment.status, JSON.stringify(payment.body)).toBe(200);
    return payment.body.receipt_id as string;
  };
  return {
    hostile,
    shop,
    shopAtB,
    shopApi,
    shopAtBApi,
    paid,
    /** an escrow payment at B, shipped at A */
    async shipped(): Promise<string> {
      const receiptId = await paid();
      expect((await shopApi.ship(receiptId, SHIPMENT)).status).toBe(200);
      return receiptId;
    },
  };
}

describe('escrow relayed to the provider', () => {
  it('ships at A a payment made at B, under B’s receipt_id; the buyer’s confirmation at B reaches A’s merchant once', async () => {
    const receiptId = await paidAtB();
    // A has never seen it: a receipt of another project at B is not A's to ship
    const shipped = await atAApi.ship(receiptId, SHIPMENT);
    expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
    expect(shipped.body).toMatchObject({ receipt_id: receiptId, status: 1, escrow_data: { status: 3 } });
    expect(((await atBApi.receipt(receiptId)).body.escrow_data as { status: number }).status).toBe(3);

    expect((await atBApi.buyer(receiptId, { event: 'purchase_confirmed' })).status).toBe(202);
    await eventually(async () => ((await escrowStatusAtA(receiptId)) === 1 ? true : undefined), 'A’s order confirmed', 30_000);
    await eventually(async () => (merchantEvents(receiptId).get(1)?.size === 1 ? true : undefined), 'A’s merchant told');
    expect(merchantEvents(receiptId).get(3)?.size).toBe(1);
    // moved by B's notification, asked about at B
    expect(await appliedAtA(receiptId)).toEqual([
      { event: 'shipping_started', source: 'api', to_status: 3 },
      { event: 'purchase_confirmed', source: 'pg_notification', to_status: 1 },
    ]);
  }, 60_000);

  it('a rejection and its approval at B: A follows, B’s refund is recorded at A, no second refund is sent', async () => {
    const receiptId = await paidAtB();
    expect((await atAApi.ship(receiptId, SHIPMENT)).status).toBe(200);
    expect((await atBApi.buyer(receiptId, { event: 'purchase_rejected' })).status).toBe(202);
    await eventually(async () => ((await escrowStatusAtA(receiptId)) === -2 ? true : undefined), 'A’s order -2', 30_000);
    expect((await atBApi.buyer(receiptId, { event: 'rejection_approved' })).status).toBe(202);
    await eventually(async () => ((await escrowStatusAtA(receiptId)) === -3 ? true : undefined), 'A’s order -3', 30_000);
    const atAReceipt = (await atAApi.receipt(receiptId)).body;
    expect(atAReceipt).toMatchObject({ status: 20, cancelled_price: 10_000 });
    const atBReceipt = (await atBApi.receipt(receiptId)).body;
    expect(atBReceipt).toMatchObject({ status: 20, cancelled_price: 10_000 });
    await eventually(async () => (merchantEvents(receiptId).get(-3)?.size === 1 ? true : undefined), 'A’s merchant told of -3');
    expect(merchantEvents(receiptId).get(-2)?.size).toBe(1);
    // A recorded B's refund; its own cancel service sent none (A's events carry the note, A's receipt no cancel of its own)
    const rejected = (await atAApi.events(receiptId)).body.list as { event: string; note?: string; to_status?: number }[];
    expect(rejected.find((e) => e.to_status === -3)?.note).toBe('the payment was already refunded in full');
    const ownCancels = await a.deps.database.db
      .selectFrom('receipt_cancels')
      .innerJoin('receipts', 'receipts.receipt_id', 'receipt_cancels.receipt_id')
      .select('receipt_cancels.receipt_id')
      .where('receipts.provider_receipt_id', '=', receiptId)
      .execute();
    expect(ownCancels).toEqual([]);
  }, 60_000);

  it('a notification B never sends: A’s reconcile timer asks B and moves the order', async () => {
    const receiptId = await paidAtB();
    expect((await atAApi.ship(receiptId, SHIPMENT)).status).toBe(200);
    // B's notification to A is lost: the project at B sends nowhere for a while
    const off = await b.app.inject({
      method: 'PATCH',
      url: `/admin/v1/projects/${atB.applicationId}`,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      payload: { webhook_url: null },
    });
    expect(off.statusCode).toBe(200);
    expect((await atBApi.buyer(receiptId, { event: 'purchase_confirmed' })).status).toBe(202);
    await eventually(
      async () => (((await atBApi.receipt(receiptId)).body.escrow_data as { status: number }).status === 1 ? true : undefined),
      'B’s order confirmed',
    );
    expect(await escrowStatusAtA(receiptId)).toBe(3);
    // the project's escrow_reconcile_hours is 1: past it, A's workflow asks B
    await a.temporal!.skipTime(60 * 60 * 1000 + 5_000);
    await eventually(
      async () => ((await escrowStatusAtA(receiptId)) === 1 ? true : undefined),
      'A’s order confirmed by its reconcile',
      30_000,
    );
    await b.app.inject({
      method: 'PATCH',
      url: `/admin/v1/projects/${atB.applicationId}`,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      payload: { webhook_url: notificationUrl },
    });
  }, 60_000);

  it('a forged notification changes nothing: a status in the body B does not confirm', async () => {
    const receiptId = await paidAtB();
    expect((await atAApi.ship(receiptId, SHIPMENT)).status).toBe(200);
    const forged = await a.app.inject({
      method: 'POST',
      url: `/upstream/v1/notifications/${atA.applicationId}`,
      payload: {
        receipt_id: receiptId,
        escrow_webhook: true,
        webhook_type: 'ESCROW_STATUS_CHANGED',
        escrow_data: { status: -3 },
      },
    });
    expect(forged.statusCode).toBe(200);
    expect(forged.json()).toMatchObject({ outcome: 'unchanged' });
    expect(await escrowStatusAtA(receiptId)).toBe(3);
  });

  it('a shipping start whose answer was lost is taken as made when sent again: A ships, B started it once', async () => {
    const shop = await shopBehindHostileHop(false);
    const { hostile, shopApi, shopAtBApi } = shop;
    try {
      const receiptId = await shop.paid();
      // B starts shipping; its answer reaches A too slowly to wait for, and B keeps no Idempotency-Key on this PUT
      hostile.arm('PUT', '/v2/escrow/shipping/start/', { kind: 'trickle', byteEveryMs: 500 });
      const first = await shopApi.ship(receiptId, SHIPMENT);
      if (first.status !== 200) {
        // the merchant's retry: B answers "not waiting for shipping" (2700), and its receipt says it was shipped
        const again = await shopApi.ship(receiptId, SHIPMENT);
        expect(again.status, JSON.stringify(again.body)).toBe(200);
      }
      expect(hostile.cutTrickles).toBe(1);
      await eventually(
        async () => (((await shopApi.receipt(receiptId)).body.escrow_data as { status: number }).status === 3 ? true : undefined),
        "A's order shipped",
      );
      expect(((await shopAtBApi.receipt(receiptId)).body.escrow_data as { status: number }).status).toBe(3);
      expect(hostile.calls.filter((c) => c.startsWith('PUT ')).length).toBeGreaterThanOrEqual(2);
    } finally {
      await hostile.close();
    }
  }, 90_000);

  it('a shipping start whose every answer is lost is an outage (9502 with the receipt_id), not 2701; the retry asks B and ships once', async () => {
    const shop = await shopBehindHostileHop(false);
    const { hostile, shopApi, shopAtBApi } = shop;
    try {
      const receiptId = await shop.paid();
      // B starts shipping on the first attempt; A hears none of the step's three
      hostile.arm('PUT', '/v2/escrow/shipping/start/', { kind: 'hangUp' }, 3);
      const lost = await shopApi.ship(receiptId, SHIPMENT);
      expect(lost.status, JSON.stringify(lost.body)).toBe(502);
      expect(lost.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE', code: 9502, receipt_id: receiptId });
      expect(lost.body.message).toMatch(/Retry the same shipping start/);
      expect(hostile.hungUp).toBe(3);
      expect(((await shopApi.receipt(receiptId)).body.escrow_data as { status: number }).status).toBe(0);
      expect(((await shopAtBApi.receipt(receiptId)).body.escrow_data as { status: number }).status).toBe(3);

      const puts = hostile.calls.filter((c) => c.startsWith('PUT ')).length;
      const again = await shopApi.ship(receiptId, SHIPMENT);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body).toMatchObject({ receipt_id: receiptId, escrow_data: { status: 3 } });
      // asked, not sent again
      expect(hostile.calls.filter((c) => c.startsWith('PUT ')).length).toBe(puts);
      const events = (await shopApi.events(receiptId)).body.list as { event: string; applied: boolean; note?: string }[];
      expect(events.filter((e) => e.applied)).toEqual([
        expect.objectContaining({ event: 'shipping_started', note: expect.stringContaining('answer was lost') }),
      ]);
    } finally {
      await hostile.close();
    }
  }, 90_000);

  it('a notification A cannot ask B about (B unreachable then) is taken at once; the order asks B itself until it answers', async () => {
    const { hostile, shopAtB, shopApi, shopAtBApi, shipped } = await shopBehindHostileHop();
    try {
      const receiptId = await shipped();
      const deliveriesBefore = await b.deps.database.db
        .selectFrom('webhook_deliveries')
        .select('delivery_id')
        .where('application_id', '=', shopAtB.applicationId)
        .execute();

      // A cannot read B's receipt: not when B's notification comes, nor at the order's first inquiry (three attempts)
      hostile.arm('GET', '/v2/receipt/', { kind: 'hangUp' }, 4);
      expect((await shopAtBApi.buyer(receiptId, { event: 'purchase_confirmed' })).status).toBe(202);
      await eventually(
        async () => ((await shopApi.receipt(receiptId)).body.escrow_data as { status: number }).status === 1 || undefined,
        "A's order confirmed by its own follow-up",
        30_000,
      );
      expect(hostile.hungUp).toBe(4);
      const applied = ((await shopApi.events(receiptId)).body.list as { event: string; source: string; applied: boolean }[])
        .filter((e) => e.applied)
        .map(({ event, source }) => ({ event, source }));
      expect(applied).toEqual([
        { event: 'shipping_started', source: 'api' },
        { event: 'purchase_confirmed', source: 'reconcile' },
      ]);
      // B's notification was taken on its first attempt: nothing left on B's retry ladder
      const notified = await b.deps.database.db
        .selectFrom('webhook_deliveries')
        .select(['delivery_id', 'status'])
        .where('application_id', '=', shopAtB.applicationId)
        .where(
          'delivery_id',
          'not in',
          deliveriesBefore.map((d) => d.delivery_id),
        )
        .execute();
      expect(notified.length).toBeGreaterThanOrEqual(1);
      expect(notified.every((d) => d.status === 'done')).toBe(true);
      const attempts = await b.deps.database.db
        .selectFrom('webhook_attempts')
        .select('delivery_id')
        .where(
          'delivery_id',
          'in',
          notified.map((d) => d.delivery_id),
        )
        .execute();
      expect(attempts).toHaveLength(notified.length);
    } finally {
      await hostile.close();
    }
  }, 90_000);

  it("a rejection approved at B while A cannot read B's receipt: A's order reaches -3 only with B's refund recorded", async () => {
    // B notifies nowhere: each notification is sent by hand, so the reads of B's receipt come in a known order (B's
    // own notification of its refund would let A's receipt refresh record it outside the refund step)
    const { hostile, shop, shopApi, shopAtBApi, shipped } = await shopBehindHostileHop(false);
    /** once B's own order is at `status` (B's sandbox PG notifies B after answering the buyer), A hears of it */
    const notify = async (receiptId: string, status: number) => {
      await eventually(
        async () => ((await shopAtBApi.receipt(receiptId)).body.escrow_data as { status: number }).status === status || undefined,
        `B's order ${status}`,
        30_000,
      );
      const answered = await a.app.inject({
        method: 'POST',
        url: `/upstream/v1/notifications/${shop.applicationId}`,
        payload: { receipt_id: receiptId, webhook_type: 'ESCROW_STATUS_CHANGED' },
      });
      expect(answered.statusCode, answered.body).toBe(200);
    };
    try {
      const receiptId = await shipped();
      expect((await shopAtBApi.buyer(receiptId, { event: 'purchase_rejected' })).status).toBe(202);
      await notify(receiptId, -2);
      await eventually(
        async () => ((await shopApi.receipt(receiptId)).body.escrow_data as { status: number }).status === -2 || undefined,
        "A's order -2",
        30_000,
      );
      // the notification of -3 is read (A learns the approval), then the refund step's first two reads of B's receipt
      // go unanswered: the step must be asked again until B's refund is read, never pass with the record as it was
      hostile.arm('GET', '/v2/receipt/', { kind: 'hangUp' }, 2, 1);
      expect((await shopAtBApi.buyer(receiptId, { event: 'rejection_approved' })).status).toBe(202);
      await notify(receiptId, -3);
      const atDb = () =>
        a.deps.database.db
          .selectFrom('receipts')
          .select(['status', 'cancelled_price'])
          .where('provider_receipt_id', '=', receiptId)
          .executeTakeFirstOrThrow();
      await eventually(async () => ((await atDb()).status === 20 ? true : undefined), "B's refund recorded at A", 60_000);
      expect(hostile.hungUp).toBe(2);
      expect(await atDb()).toEqual({ status: 20, cancelled_price: 10_000 });
      // the refund recorded, the transition to -3 follows
      const orderStatus = async () =>
        (
          await a.deps.database.db
            .selectFrom('escrow_orders')
            .select('escrow_orders.status')
            .innerJoin('receipts', 'receipts.receipt_id', 'escrow_orders.receipt_id')
            .where('receipts.provider_receipt_id', '=', receiptId)
            .executeTakeFirstOrThrow()
        ).status;
      await eventually(async () => ((await orderStatus()) === -3 ? true : undefined), "A's order -3", 30_000);
    } finally {
      await hostile.close();
    }
  }, 120_000);

  it("a notification whose lookup at B is slow is answered within B's wait: 5 s at most, then the order follows up", async () => {
    // B notifies nowhere: the notification is sent by hand below
    const { hostile, shop, shopApi, shopAtBApi, shipped } = await shopBehindHostileHop(false);
    try {
      const receiptId = await shipped();
      expect((await shopAtBApi.buyer(receiptId, { event: 'purchase_confirmed' })).status).toBe(202);
      // B's notification (sent by hand here), whose lookup at B trickles its answer for far longer than B would wait
      hostile.arm('GET', '/v2/receipt/', { kind: 'trickle', byteEveryMs: 1_000 });
      const startedAt = Date.now();
      const answered = await a.app.inject({
        method: 'POST',
        url: `/upstream/v1/notifications/${shop.applicationId}`,
        payload: { receipt_id: receiptId, webhook_type: 'ESCROW_STATUS_CHANGED' },
      });
      const took = Date.now() - startedAt;
      expect(answered.statusCode, answered.body).toBe(200);
      expect(answered.json()).toMatchObject({ outcome: 'signalled' });
      expect(took).toBeLessThan(9_000);
      expect(hostile.cutTrickles).toBe(1);
      await eventually(
        async () => ((await shopApi.receipt(receiptId)).body.escrow_data as { status: number }).status === 1 || undefined,
        "A's order confirmed by its follow-up",
        30_000,
      );
    } finally {
      await hostile.close();
    }
  }, 90_000);
});

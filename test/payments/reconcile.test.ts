// Reconciliation (issue 13), over HTTP into the real app with the real worker: a charge or cancel whose PG
// answer is lost (the sandbox holds it past the adapter's timeout, or fails before doing anything) is
// settled by its reconcile workflow without the merchant, with exactly one PG execution, and the merchant is
// told through feedback_url and the project webhook. A process that died mid call is found by the sweep.
// A declined order_id's next attempt gets its own PG key; a "key reused" PG answer is never a card decline.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgChargeKey } from '../../src/payments/charges.js';
import { PG_CALL_WINDOW_MS, sweepUnsettled } from '../../src/payments/receipts.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { armSandboxFault, keyInClient, sandboxChargeExecutions, sandboxGet } from './key-in-fixtures.js';
import { eventually, type Receiver, startReceiver } from '../webhooks/fixtures.js';

let t: TestApp;
let project: TestProject;
let hook: Receiver;
let feedback: Receiver;
let client: ReturnType<typeof keyInClient>;
let billingKey: string;

beforeAll(async () => {
  t = await buildTestApp({ withTemporal: true });
  hook = await startReceiver('/payments');
  feedback = await startReceiver('/feedback');
  project = await t.createProject({ webhook_url: hook.url });
  client = keyInClient(t, project);
  billingKey = await client.issuedKey();
}, 120_000);
afterAll(async () => {
  await hook?.close();
  await feedback?.close();
  await t?.close();
});

const receiptRow = (orderId: string) =>
  t.deps.database.db
    .selectFrom('receipts')
    .selectAll()
    .where('application_id', '=', project.applicationId)
    .where('order_id', '=', orderId)
    .executeTakeFirst();

/** The PAYMENT_RECONCILED events the project's webhook_url received for a receipt. */
const reconciledEvents = (receiptId: string) =>
  hook.requests
    .map((r) => JSON.parse(r.body) as Record<string, unknown>)
    .filter((b) => b.webhook_type === 'PAYMENT_RECONCILED')
    .filter((b) => JSON.stringify(b).includes(receiptId));

/** No armed fault outlives its test. */
async function disarmFaults(): Promise<void> {
  const res = await fetch(`${t.sandboxUrl}/_sandbox/faults`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${TEST_SANDBOX_TOKEN}` },
    signal: AbortSignal.timeout(10_000),
  });
  expect(res.ok).toBe(true);
}

async function refundedAtPg(receiptId: string): Promise<number> {
  const row = await t.deps.database.db
    .selectFrom('receipts')
    .select('gateway_tid')
    .where('receipt_id', '=', receiptId)
    .executeTakeFirstOrThrow();
  const charge = await sandboxGet<{ cancelled_amount: number }>(t.sandboxUrl, `/_sandbox/charges/${row.gateway_tid ?? ''}`);
  return charge.cancelled_amount;
}

describe('a charge whose PG answer is lost', () => {
  it('settles to status 1 by itself with one PG execution; feedback_url and the webhook are told; the retry gets the receipt', async () => {
    const orderId = 'lost-answer-1';
    await armSandboxFault(t.sandboxUrl, 'charge', 'timeout');
    const body = { billing_key: billingKey, order_name: 'June', order_id: orderId, price: 4_200, feedback_url: feedback.url };
    const first = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'lost-1' });
    expect(first.status).toBe(502);
    const pending = await receiptRow(orderId);
    expect(pending?.status).toBe(0);
    const receiptId = pending!.receipt_id;
    // the error names the pending receipt, so the merchant can poll it
    expect(first.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE', code: 9502, receipt_id: receiptId });
    const polled = await client.get(`/v2/receipt/${first.body.receipt_id as string}`);
    expect(polled.status).toBe(200);
    expect(polled.body).toMatchObject({ receipt_id: receiptId, order_id: orderId });

    const settled = await eventually(async () => {
      const res = await client.get(`/v2/receipt/${receiptId}`);
      return res.body.status === 1 ? res.body : undefined;
    }, 'the receipt settled by its reconcile workflow');
    expect(settled).toMatchObject({ receipt_id: receiptId, order_id: orderId, price: 4_200, status: 1 });
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(1);

    const told = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(receiptId)),
      'the feedback_url delivery',
    );
    expect(JSON.parse(told.body)).toMatchObject({ receipt_id: receiptId, status: 1 });
    const [event] = await eventually(async () => {
      const events = reconciledEvents(receiptId);
      return events.length > 0 ? events : undefined;
    }, 'the PAYMENT_RECONCILED webhook');
    expect(event).toMatchObject({ operation: 'charge', outcome: 'completed', receipt: { receipt_id: receiptId, status: 1 } });

    // the request's answer was lost: its retry (same key, or the same charge) gets the receipt, nothing charged again
    const retried = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'lost-1' });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ receipt_id: receiptId, status: 1 });
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(1);
  }, 60_000);

  it('that the PG never executed is failed by itself: the order_id is free, nothing was charged', async () => {
    const orderId = 'never-executed-1';
    await armSandboxFault(t.sandboxUrl, 'charge', '500');
    const body = { billing_key: billingKey, order_name: 'June', order_id: orderId, price: 1_300 };
    const failed = await client.post('/v2/subscribe/payment', body);
    expect(failed.status).toBe(502);
    const receiptId = (await receiptRow(orderId))!.receipt_id;
    expect(failed.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE', receipt_id: receiptId });
    // "never received" is believed only once the call window has passed (the PG might still hold the request)
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await receiptRow(orderId))?.status).toBe(0);
    t.clock.advance(PG_CALL_WINDOW_MS);
    await eventually(async () => ((await receiptRow(orderId)) === undefined ? true : undefined), 'the pending receipt dropped');
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(0);
    const [event] = await eventually(async () => {
      const events = reconciledEvents(receiptId);
      return events.length > 0 ? events : undefined;
    }, 'the PAYMENT_RECONCILED webhook');
    expect(event).toMatchObject({ operation: 'charge', outcome: 'failed', receipt_id: receiptId, order_id: orderId });

    const again = await client.post('/v2/subscribe/payment', body);
    expect(again.status).toBe(200);
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(1);
  }, 60_000);
});

describe('a charge with a feedback_url: its completion and its feedback delivery are one transaction (an outbox)', () => {
  it('when the delivery cannot be written the charge is not recorded paid without it: its reconcile settles it and tells the feedback_url', async () => {
    const orderId = 'outbox-1';
    const refusedUrl = `${feedback.url}?outbox=refused`;
    const db = t.deps.database.db;
    // the database refuses this feedback delivery's row, as a full disk or a lost connection would at that statement
    await sql`create function refuse_outbox_row() returns trigger language plpgsql as $$
      begin
        if new.url like '%outbox=refused%' then raise exception 'test: this delivery row is refused'; end if;
        return new;
      end $$`.execute(db);
    await sql`create trigger refuse_outbox_row before insert on webhook_deliveries
      for each row execute function refuse_outbox_row()`.execute(db);
    let first: Awaited<ReturnType<typeof client.post>>;
    try {
      first = await client.post('/v2/subscribe/payment', {
        billing_key: billingKey,
        order_name: 'Outbox',
        order_id: orderId,
        price: 5_100,
        feedback_url: refusedUrl,
      });
    } finally {
      await sql`drop trigger refuse_outbox_row on webhook_deliveries`.execute(db);
      await sql`drop function refuse_outbox_row()`.execute(db);
    }
    // the PG charged and paygate could not record both: no receipt paid without its feedback; the answer names it
    const pending = await receiptRow(orderId);
    expect(pending?.status).toBe(0);
    expect(first.status, JSON.stringify(first.body)).toBe(500);
    expect(first.body).toMatchObject({ code: 9500, receipt_id: pending!.receipt_id });
    const receiptId = pending!.receipt_id;
    expect(await db.selectFrom('webhook_deliveries').select('delivery_id').where('url', '=', refusedUrl).execute()).toEqual([]);

    // its reconcile workflow asks the PG, records the charge and the feedback together: the merchant is told once
    const told = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(receiptId)),
      'the feedback_url delivery after the reconcile',
    );
    expect(JSON.parse(told.body)).toMatchObject({ receipt_id: receiptId, order_id: orderId, status: 1 });
    expect((await receiptRow(orderId))?.status).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(1);
    const rows = await db.selectFrom('webhook_deliveries').select('delivery_id').where('url', '=', refusedUrl).execute();
    expect(rows).toHaveLength(1);
  }, 60_000);
});

describe('a call the PG holds past the adapter timeout and executes later', () => {
  // The PG answers "never received" while it still holds the request: believing it at once would drop the
  // receipt (or forget the cancel) and leave the late execution with nothing in paygate.
  it('a charge is completed by its reconcile workflow once the PG has executed it, never dropped', async () => {
    const orderId = 'late-charge-1';
    await armSandboxFault(t.sandboxUrl, 'charge', 'late');
    const body = { billing_key: billingKey, order_name: 'June', order_id: orderId, price: 1_100 };
    expect((await client.post('/v2/subscribe/payment', body)).status).toBeGreaterThanOrEqual(500);
    const settled = await eventually(
      async () => {
        const row = await receiptRow(orderId);
        expect(row, 'the pending receipt was dropped while the PG held its charge').toBeDefined();
        return row?.status === 1 ? row : undefined;
      },
      'the late charge completed',
      90_000,
    );
    expect(settled.status).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(1);
  }, 150_000);

  it('a cancel is recorded by its reconcile workflow once the PG has made it, never forgotten', async () => {
    const paid = await client.charge(billingKey, { price: 4_000 });
    expect(paid.status).toBe(200);
    const receiptId = paid.body.receipt_id as string;
    await armSandboxFault(t.sandboxUrl, 'cancel', 'late');
    const cancel = { receipt_id: receiptId, cancel_id: 'late-cancel-1', cancel_price: 1_000 };
    expect((await client.cancel(cancel)).status).toBeGreaterThanOrEqual(500);
    const settled = await eventually(
      async () => {
        const res = await client.get(`/v2/receipt/${receiptId}`);
        return res.body.cancelled_price === 1_000 ? res.body : undefined;
      },
      'the late cancel recorded',
      90_000,
    );
    expect(settled).toMatchObject({ status: 1, cancelled_price: 1_000 });
    expect(await refundedAtPg(receiptId)).toBe(1_000);
  }, 150_000);
});

describe('a cancel whose PG answer is lost', () => {
  it('is recorded by itself, refunded once at the PG; a retry of its cancel_id gets the recorded answer', async () => {
    const paid = await client.charge(billingKey, { price: 5_000 });
    expect(paid.status).toBe(200);
    const receiptId = paid.body.receipt_id as string;
    await armSandboxFault(t.sandboxUrl, 'cancel', 'timeout');
    const cancel = { receipt_id: receiptId, cancel_id: 'lost-cancel-1', cancel_price: 1_500 };
    const lost = await client.cancel(cancel);
    expect(lost.status).toBe(502);
    expect(lost.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE', code: 9502, receipt_id: receiptId });

    const settled = await eventually(async () => {
      const res = await client.get(`/v2/receipt/${receiptId}`);
      return res.body.cancelled_price === 1_500 ? res.body : undefined;
    }, 'the cancel recorded by its reconcile workflow');
    expect(settled).toMatchObject({ status: 1, cancelled_price: 1_500 });
    expect(await refundedAtPg(receiptId)).toBe(1_500);
    const [event] = await eventually(async () => {
      const events = reconciledEvents(receiptId).filter((e) => e.operation === 'cancel');
      return events.length > 0 ? events : undefined;
    }, 'the PAYMENT_RECONCILED webhook');
    expect(event).toMatchObject({ outcome: 'cancelled', cancel: { cancel_id: 'lost-cancel-1', cancel_price: 1_500 } });

    const retried = await client.cancel(cancel);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ receipt_id: receiptId, cancelled_price: 1_500 });
    // the lease is free: the next cancel goes through
    expect((await client.cancel({ receipt_id: receiptId, cancel_price: 500 })).body.cancelled_price).toBe(2_000);
    expect(await refundedAtPg(receiptId)).toBe(2_000);
  }, 60_000);
});

describe('Idempotency-Key and a held cancel lease', () => {
  it('a 9409 (another cancel holds the receipt) is not stored: the same key after it finished gets the real answer', async () => {
    const paid = await client.charge(billingKey, { price: 3_000 });
    const receiptId = paid.body.receipt_id as string;
    await armSandboxFault(t.sandboxUrl, 'cancel', 'timeout');
    // the first cancel waits for the PG (and then for its reconcile) while holding the receipt
    const holding = client.cancel({ receipt_id: receiptId, cancel_id: 'holder', cancel_price: 1_000 });
    await eventually(
      async () => ((await receiptRow(paid.body.order_id as string))?.cancel_pending ? true : undefined),
      'the first cancel at the PG',
    );
    const cancel = { receipt_id: receiptId, cancel_id: 'second', cancel_price: 500 };
    const busy = await client.cancel(cancel, { 'idempotency-key': 'cancel-while-held' });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ error_code: 'IDEMPOTENCY_IN_PROGRESS', code: 9409 });
    expect((await holding).status).toBe(502);
    await eventually(async () => {
      const res = await client.get(`/v2/receipt/${receiptId}`);
      return res.body.cancelled_price === 1_000 ? true : undefined;
    }, 'the first cancel reconciled');

    const answered = await eventually(async () => {
      const res = await client.cancel(cancel, { 'idempotency-key': 'cancel-while-held' });
      return res.status === 409 && res.headers['idempotent-replayed'] !== 'true' ? undefined : res;
    }, 'the real answer');
    expect(answered.headers['idempotent-replayed']).toBeUndefined();
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ receipt_id: receiptId, cancelled_price: 1_500 });
    expect(await refundedAtPg(receiptId)).toBe(1_500);
  }, 60_000);
});

describe('a process that died in the middle of a charge', () => {
  it('leaves a pending receipt and an in-flight key the sweep hands over: settled, and the retry gets the receipt', async () => {
    // a second API process without an engine: it cannot start the reconcile workflow, as if it had died
    const other = await buildTestApp({
      database: t.deps.database,
      gateways: t.deps.gateways,
      wallClock: t.clock.now,
      businessClock: t.clock.now,
      ...(t.deps.keyring ? { keyring: t.deps.keyring } : {}),
    });
    try {
      const otherClient = keyInClient(other, project);
      const orderId = 'died-mid-call-1';
      await armSandboxFault(t.sandboxUrl, 'charge', 'timeout');
      const body = { billing_key: billingKey, order_name: 'June', order_id: orderId, price: 2_100 };
      expect((await otherClient.post('/v2/subscribe/payment', body, { 'idempotency-key': 'died-1' })).status).toBe(502);
    } finally {
      await other.close();
      await disarmFaults();
    }
    const orderId = 'died-mid-call-1';
    const pending = (await receiptRow(orderId))!;
    expect(pending.status).toBe(0);
    // what a kill -9 leaves: the key still in flight (no answer was written) and the call window running
    const db = t.deps.database.db;
    await db
      .insertInto('idempotency_keys')
      .values({
        application_id: project.applicationId,
        idempotency_key: 'died-1',
        request_hash: 'x',
        request_salt: 'y',
        state: 'in_flight',
        response_status: null,
        response_body: null,
        created_at: new Date(t.clock.now().getTime() - 5 * 60_000),
        expires_at: new Date(t.clock.now().getTime() + 60 * 60_000),
      })
      .execute();
    await db
      .updateTable('receipts')
      .set({ pg_call_until: new Date(t.clock.now().getTime() + 60_000) })
      .where('receipt_id', '=', pending.receipt_id)
      .execute();
    // the process's starter, as the worker's sweep uses it (the app's services are over the test engine's client)
    const reconcile = t.app.deps.services.reconcile!;
    const sweep = (now: Date) =>
      sweepUnsettled({ stores: t.app.deps.stores, reconcile, wallClock: () => now, businessClock: () => now });

    // the key's owner is gone (older than any request runs): released; the charge's call window still runs
    const early = await sweep(t.clock.now());
    expect(early.charges).toBe(0);
    expect(early.keys).toBeGreaterThanOrEqual(1);
    expect((await receiptRow(orderId))?.status).toBe(0);
    // the window ends (PG_CALL_WINDOW_MS after the call started): the charge is its reconcile workflow's
    await db
      .updateTable('receipts')
      .set({ pg_call_until: new Date(t.clock.now().getTime() - 1_000) })
      .where('receipt_id', '=', pending.receipt_id)
      .execute();
    expect(await sweep(t.clock.now())).toMatchObject({ charges: 1 });

    await eventually(async () => ((await receiptRow(orderId))?.status === 1 ? true : undefined), 'the swept charge settled');
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 0))).toBe(1);
    const retried = await client.post(
      '/v2/subscribe/payment',
      { billing_key: billingKey, order_name: 'June', order_id: orderId, price: 2_100 },
      { 'idempotency-key': 'died-1' },
    );
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ receipt_id: pending.receipt_id, status: 1 });
  }, 90_000);
});

describe('declines and PG keys', () => {
  it("a declined order_id's next attempt gets its own PG key and is charged (not the PG's 'key reused')", async () => {
    const refusing = await client.issuedKey({ card_no: '4000000000009995' });
    const orderId = 'declined-then-paid-1';
    const declined = await client.post('/v2/subscribe/payment', {
      billing_key: refusing,
      order_name: 'June',
      order_id: orderId,
      price: 900,
    });
    expect(declined.body).toMatchObject({ error_code: 'PAYMENT_DECLINED', pg_error_code: 'C204' });
    // a decline leaves no receipt to poll
    expect(declined.body).not.toHaveProperty('receipt_id');
    const paid = await client.post('/v2/subscribe/payment', {
      billing_key: billingKey,
      order_name: 'June',
      order_id: orderId,
      price: 900,
    });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ order_id: orderId, status: 1 });
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 1))).toBe(1);
  });

  it("a PG 'key reused' answer is an internal error logged as such, never a decline; the receipt heals by itself", async () => {
    const refusing = await client.issuedKey({ card_no: '4000000000009995' });
    const orderId = 'key-reused-1';
    const charge = (key: string) =>
      client.post('/v2/subscribe/payment', { billing_key: key, order_name: 'June', order_id: orderId, price: 700 });
    expect((await charge(refusing)).body).toMatchObject({ error_code: 'PAYMENT_DECLINED' });
    // a decline recorded before attempt numbers existed: the next attempt reuses the first key
    await t.deps.database.db.deleteFrom('order_declines').where('order_id', '=', orderId).execute();
    const reused = await charge(billingKey);
    expect(reused.status).toBe(500);
    expect(reused.body).toMatchObject({ error_code: 'PG_KEY_REUSED', code: 9475, receipt_id: expect.any(String) });
    expect(t.logs()).toMatch(/"level":50[^\n]*reused/);

    // its reconcile learns the PG refused that key: the order_id is freed under the next key
    await eventually(async () => ((await receiptRow(orderId)) === undefined ? true : undefined), 'the pending receipt dropped');
    const paid = await charge(billingKey);
    expect(paid.status).toBe(200);
    expect(await sandboxChargeExecutions(t.sandboxUrl, pgChargeKey(project.applicationId, orderId, 1))).toBe(1);
  }, 60_000);
});

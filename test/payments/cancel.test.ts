// POST /v2/cancel over HTTP: full and partial refunds, cancel_id idempotency, limits, PG failures.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/platform/errors.js';
import type { CancelRequest } from '../../src/payments/receipt-rules.js';
import { createServices } from '../../src/composition/services.js';
import type { Stores } from '../../src/composition/stores.js';
import type { ReceiptRow, ReceiptStore } from '../../src/payments/receipts-store.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { armSandboxFault, keyInClient, sandboxGet } from './key-in-fixtures.js';

let t: TestApp;
let project: TestProject;
let client: ReturnType<typeof keyInClient>;
let billingKey: string;

beforeAll(async () => {
  t = await buildTestApp();
  project = await t.createProject();
  client = keyInClient(t, project);
  billingKey = await client.issuedKey();
});
afterAll(async () => {
  await t?.close();
});

async function paidReceipt(price = 10_000, taxFree = 0): Promise<string> {
  const res = await client.charge(billingKey, { price, tax_free: taxFree });
  expect(res.status).toBe(200);
  return res.body.receipt_id as string;
}

/** What the sandbox PG itself recorded as refunded for the receipt's charge. */
async function refundedAtPg(receiptId: string): Promise<number> {
  const row = await t.deps.database.db
    .selectFrom('receipts')
    .select('gateway_tid')
    .where('receipt_id', '=', receiptId)
    .executeTakeFirstOrThrow();
  const charge = await sandboxGet<{ cancelled_amount: number }>(t.sandboxUrl, `/_sandbox/charges/${row.gateway_tid ?? ''}`);
  return charge.cancelled_amount;
}

describe('POST /v2/cancel', () => {
  it('cancels the whole payment when cancel_price is omitted', async () => {
    const receiptId = await paidReceipt(10_000, 2_000);
    const res = await client.cancel({ receipt_id: receiptId, cancel_message: 'customer request' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      receipt_id: receiptId,
      price: 10_000,
      cancelled_price: 10_000,
      cancelled_tax_free: 2_000,
      status: 20,
      status_locale: '결제취소완료',
    });
    expect(res.body.cancelled_at).toEqual(expect.any(String));
    expect((await client.get(`/v2/receipt/${receiptId}`)).body).toEqual(res.body);
    expect(await refundedAtPg(receiptId)).toBe(10_000);
  });

  it('cancels partly, then the rest', async () => {
    const receiptId = await paidReceipt(10_000);
    const part = await client.cancel({ receipt_id: receiptId, cancel_price: 3_000 });
    expect(part.body).toMatchObject({ cancelled_price: 3_000, status: 1, status_locale: '결제완료' });
    const rest = await client.cancel({ receipt_id: receiptId });
    expect(rest.body).toMatchObject({ cancelled_price: 10_000, status: 20 });
    expect(await refundedAtPg(receiptId)).toBe(10_000);
  });

  it('refuses more than remains and cancels of a finished receipt', async () => {
    const receiptId = await paidReceipt(5_000);
    const tooMuch = await client.cancel({ receipt_id: receiptId, cancel_price: 5_001 });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body).toMatchObject({ error_code: 'CANCEL_PRICE_EXCEEDED', code: 9424 });
    expect((await client.cancel({ receipt_id: receiptId, cancel_price: 4_000 })).status).toBe(200);
    expect((await client.cancel({ receipt_id: receiptId, cancel_price: 1_001 })).body).toMatchObject({
      error_code: 'CANCEL_PRICE_EXCEEDED',
    });
    expect((await client.cancel({ receipt_id: receiptId })).status).toBe(200);
    const again = await client.cancel({ receipt_id: receiptId });
    expect(again.body).toMatchObject({ error_code: 'RECEIPT_NOT_CANCELLABLE', code: 9425 });
    expect(await refundedAtPg(receiptId)).toBe(5_000);
  });

  it('returns the first result for a repeated cancel_id instead of refunding twice', async () => {
    const receiptId = await paidReceipt(8_000);
    const first = await client.cancel({ receipt_id: receiptId, cancel_price: 1_000, cancel_id: 'c-1' });
    const second = await client.cancel({ receipt_id: receiptId, cancel_price: 1_000, cancel_id: 'c-1' });
    expect(first.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const third = await client.cancel({ receipt_id: receiptId, cancel_price: 1_000, cancel_id: 'c-2' });
    expect(third.body.cancelled_price).toBe(2_000);
    expect(await refundedAtPg(receiptId)).toBe(2_000);
  });

  it('a cancel_id reused with a different cancel_price or cancel_tax_free -> 9422, nothing refunded', async () => {
    const receiptId = await paidReceipt(8_000, 4_000);
    const first = await client.cancel({ receipt_id: receiptId, cancel_price: 1_000, cancel_tax_free: 500, cancel_id: 'r-1' });
    expect(first.status).toBe(200);
    for (const changed of [
      { cancel_price: 2_000, cancel_tax_free: 500 },
      { cancel_price: 1_000, cancel_tax_free: 0 },
      { cancel_price: 1_000 }, // the least tax-free part of 1,000 is 0, not the 500 the first cancel refunded
      {}, // everything that remained then (8,000), not 1,000
    ]) {
      const res = await client.cancel({ receipt_id: receiptId, cancel_id: 'r-1', ...changed });
      expect(res.status, JSON.stringify(changed)).toBe(422);
      expect(res.body).toMatchObject({ error_code: 'IDEMPOTENCY_KEY_REUSED', code: 9422 });
    }
    expect(await refundedAtPg(receiptId)).toBe(1_000);
    // the same parameters still replay the first result, after other cancels moved the receipt on
    expect((await client.cancel({ receipt_id: receiptId, cancel_price: 2_000, cancel_id: 'r-2' })).status).toBe(200);
    const replay = await client.cancel({ receipt_id: receiptId, cancel_price: 1_000, cancel_tax_free: 500, cancel_id: 'r-1' });
    expect(replay.body).toEqual(first.body);
    expect(await refundedAtPg(receiptId)).toBe(3_000);
  });

  it('a full cancel by cancel_id replays for the same request (amounts omitted or spelled out), and 9422 otherwise', async () => {
    const receiptId = await paidReceipt(6_000, 1_000);
    const partial = await client.cancel({ receipt_id: receiptId, cancel_price: 2_000 });
    expect(partial.status).toBe(200);
    const full = await client.cancel({ receipt_id: receiptId, cancel_id: 'all' });
    expect(full.body).toMatchObject({ status: 20, cancelled_price: 6_000 });
    expect((await client.cancel({ receipt_id: receiptId, cancel_id: 'all' })).body).toEqual(full.body);
    const spelled = await client.cancel({ receipt_id: receiptId, cancel_id: 'all', cancel_price: 4_000, cancel_tax_free: 1_000 });
    expect(spelled.body).toEqual(full.body);
    const smaller = await client.cancel({ receipt_id: receiptId, cancel_id: 'all', cancel_price: 3_000 });
    expect(smaller.body).toMatchObject({ error_code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await refundedAtPg(receiptId)).toBe(6_000);
  });

  it('never refunds the same won twice under concurrent cancels', async () => {
    const receiptId = await paidReceipt(3_000);
    const results = await Promise.all([1, 2, 3, 4].map(() => client.cancel({ receipt_id: receiptId, cancel_price: 1_000 })));
    const succeeded = results.filter((r) => r.status === 200).length;
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(['IDEMPOTENCY_IN_PROGRESS', 'CANCEL_PRICE_EXCEEDED', 'RECEIPT_NOT_CANCELLABLE']).toContain(r.body.error_code);
    }
    expect(succeeded).toBeGreaterThanOrEqual(1);
    expect(await refundedAtPg(receiptId)).toBe(succeeded * 1_000);
    expect((await client.get(`/v2/receipt/${receiptId}`)).body.cancelled_price).toBe(succeeded * 1_000);
  });

  /**
   * The race the concurrent test can hit: B finds A's cancel pending under B's own PG key and takes it over, then A
   * records before B goes on (and `meanwhile` runs, as another cancel would). Returns A's response and B's outcome.
   */
  async function takeOverWhileRecorded(request: CancelRequest, meanwhile: () => Promise<void> = async () => {}) {
    const stores: Stores = t.deps.stores;
    const gate = () => {
      let open = () => {};
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      return { open, opened };
    };
    const aAtRecord = gate();
    const bAcquired = gate();
    const aRecorded = gate();
    // the cancel service as the composition builds it without an engine (no reconcile hand-over), over a receipt
    // store whose recordCancel the test holds
    const withReceipts = (receipts: ReceiptStore) =>
      createServices({
        stores: { ...stores, receipts },
        gateways: t.deps.gateways,
        wallClock: t.deps.wallClock,
        businessClock: t.deps.businessClock,
      }).cancels;
    const serviceA = withReceipts({
      ...stores.receipts,
      async recordCancel(cancel, render) {
        aAtRecord.open();
        await bAcquired.opened;
        const recorded = await stores.receipts.recordCancel(cancel, render);
        aRecorded.open();
        return recorded;
      },
    });
    const serviceB = withReceipts({
      ...stores.receipts,
      async acquireCancelLease(...args) {
        const acquired = await stores.receipts.acquireCancelLease(...args);
        expect(acquired?.cancel_pending).not.toBeNull(); // B took A's cancel over
        bAcquired.open();
        await aRecorded.opened;
        await meanwhile();
        return acquired;
      },
    });
    const log = { info: () => {}, warn: () => {} };
    const a = serviceA.cancel(project.project, request, log);
    await aAtRecord.opened;
    const b = serviceB.cancel(project.project, request, log).catch((err: unknown) => {
      if (err instanceof ApiError) return err.errorCode;
      throw err;
    });
    return { a: await a, b: await b, stores };
  }
  const cancelOf = (receiptId: string, cancelId?: string): CancelRequest => ({
    receiptId,
    cancelPrice: 1_000,
    cancelTaxFree: undefined,
    cancelId,
    cancelMessage: undefined,
  });

  it('a cancel that took over a pending one, which is recorded meanwhile, sends nothing and answers 9409', async () => {
    // sending B's key again would replay A's refund, and B would count it a second time
    const receiptId = await paidReceipt(3_000);
    const { a, b, stores } = await takeOverWhileRecorded(cancelOf(receiptId));
    expect(a).toMatchObject({ cancelled_price: 1_000 });
    expect(b).toBe('IDEMPOTENCY_IN_PROGRESS');
    expect(await refundedAtPg(receiptId)).toBe(1_000);
    const row = await stores.receipts.find(receiptId);
    expect(row).toMatchObject({ cancelled_price: 1_000, cancel_pending: null, cancel_locked_until: null });
    // and the receipt cancels on from what remains
    expect((await client.cancel({ receipt_id: receiptId, cancel_price: 1_000 })).body).toMatchObject({ cancelled_price: 2_000 });
    expect(await refundedAtPg(receiptId)).toBe(2_000);
  });

  it('a retry of a cancel_id that took the cancel over answers its first result, and frees no lease taken since', async () => {
    const receiptId = await paidReceipt(3_000);
    let leaseTakenSince: Date | undefined;
    const { a, b, stores } = await takeOverWhileRecorded(cancelOf(receiptId, 'c-race'), async () => {
      const now = t.deps.businessClock();
      const taken = await t.deps.stores.receipts.acquireCancelLease(receiptId, now, new Date(now.getTime() + 45_000));
      leaseTakenSince = taken?.cancel_locked_until ?? undefined;
    });
    expect(b).toEqual(a);
    expect(a).toMatchObject({ cancelled_price: 1_000 });
    expect(await refundedAtPg(receiptId)).toBe(1_000);
    expect(leaseTakenSince).toBeInstanceOf(Date);
    expect((await stores.receipts.find(receiptId))?.cancel_locked_until).toEqual(leaseTakenSince);
    await stores.receipts.releaseCancelLease(receiptId);
  });

  it('a cancel whose receipt moved between its read and its lease plans again from what remains', async () => {
    // A (the whole rest) reads the receipt, then B's cancel is recorded before A takes its lease with the cancel
    // noted: A's plan (3,000) would refund B's 2,000 again, so A leases on the usual path and plans the 1,000 left
    const receiptId = await paidReceipt(3_000);
    const stores: Stores = t.deps.stores;
    let noted: Array<ReceiptRow | undefined> = [];
    const serviceA = createServices({
      stores: {
        ...stores,
        receipts: {
          ...stores.receipts,
          async acquireCancelLeaseNoted(...args) {
            expect((await client.cancel({ receipt_id: receiptId, cancel_price: 2_000 })).status).toBe(200);
            const leased = await stores.receipts.acquireCancelLeaseNoted(...args);
            noted = [...noted, leased];
            return leased;
          },
        },
      },
      gateways: t.deps.gateways,
      wallClock: t.deps.wallClock,
      businessClock: t.deps.businessClock,
    }).cancels;
    const a = await serviceA.cancel(
      project.project,
      { ...cancelOf(receiptId), cancelPrice: undefined },
      { info: () => {}, warn: () => {} },
    );
    expect(noted).toEqual([undefined]); // the receipt had moved: no lease taken on the stale plan
    expect(a).toMatchObject({ cancelled_price: 3_000, status: 20 });
    expect(await refundedAtPg(receiptId)).toBe(3_000);
    expect(await stores.receipts.find(receiptId)).toMatchObject({ cancel_pending: null, cancel_locked_until: null });
  });

  it('a cancel refused before its lease (nothing left to refund) leaves the receipt unleased', async () => {
    const receiptId = await paidReceipt(1_000);
    expect((await client.cancel({ receipt_id: receiptId })).status).toBe(200);
    const again = await client.cancel({ receipt_id: receiptId, cancel_price: 500 });
    expect(again.body).toMatchObject({ error_code: 'RECEIPT_NOT_CANCELLABLE' });
    expect(await t.deps.stores.receipts.find(receiptId)).toMatchObject({ cancel_pending: null, cancel_locked_until: null });
  });

  it('changes nothing when the PG is unreachable, and a retry refunds once', async () => {
    const receiptId = await paidReceipt(4_000);
    await armSandboxFault(t.sandboxUrl, 'cancel', '500');
    const failed = await client.cancel({ receipt_id: receiptId, cancel_price: 1_500 });
    expect(failed.status).toBe(502);
    expect(failed.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE' });
    expect((await client.get(`/v2/receipt/${receiptId}`)).body.cancelled_price).toBe(0);
    const retried = await client.cancel({ receipt_id: receiptId, cancel_price: 1_500 });
    expect(retried.body.cancelled_price).toBe(1_500);
    expect(await refundedAtPg(receiptId)).toBe(1_500);
  });

  it('refunds the tax-free part as asked, within what remains', async () => {
    const receiptId = await paidReceipt(10_000, 4_000);
    const part = await client.cancel({ receipt_id: receiptId, cancel_price: 5_000, cancel_tax_free: 3_000 });
    expect(part.body).toMatchObject({ cancelled_price: 5_000, cancelled_tax_free: 3_000, status: 1 });
    // 1,000 tax-free would be left on 5,000: asking for more tax-free than remains is refused
    const tooMuch = await client.cancel({ receipt_id: receiptId, cancel_price: 2_000, cancel_tax_free: 1_500 });
    expect(tooMuch.body).toMatchObject({ error_code: 'CANCEL_PRICE_EXCEEDED' });
    const rest = await client.cancel({ receipt_id: receiptId });
    expect(rest.body).toMatchObject({ cancelled_price: 10_000, cancelled_tax_free: 4_000, status: 20 });
  });

  it('answers 9409 while another cancel holds the receipt, until its lease runs out', async () => {
    const receiptId = await paidReceipt(2_000);
    const held = new Date(t.clock.now().getTime() + 60_000);
    await t.deps.database.db
      .updateTable('receipts')
      .set({ cancel_locked_until: held })
      .where('receipt_id', '=', receiptId)
      .execute();
    const blocked = await client.cancel({ receipt_id: receiptId, cancel_price: 500 });
    expect(blocked.status).toBe(409);
    expect(blocked.body).toMatchObject({ error_code: 'IDEMPOTENCY_IN_PROGRESS', code: 9409 });
    expect(await refundedAtPg(receiptId)).toBe(0);
    // a lease left behind by a crashed process expires
    t.clock.advance(61_000);
    const after = await client.cancel({ receipt_id: receiptId, cancel_price: 500 });
    expect(after.body).toMatchObject({ cancelled_price: 500 });
    expect(await refundedAtPg(receiptId)).toBe(500);
  });

  it('validates the body', async () => {
    expect((await client.cancel({})).body).toMatchObject({ error_code: 'RC_NOT_FOUND', code: 2000 });
    expect((await client.cancel({ receipt_id: 'ffffffffffffffffffffffff' })).body).toMatchObject({ code: 2000 });
    const receiptId = await paidReceipt(1_000);
    for (const bad of [{ cancel_price: 0 }, { cancel_price: -1 }, { cancel_price: '100' }, { cancel_id: 5 }, { refund: 'x' }]) {
      const res = await client.cancel({ receipt_id: receiptId, ...bad });
      expect(res.status).toBe(400);
      expect(res.body.error_code).toBe('INVALID_REQUEST');
    }
    expect((await client.get(`/v2/receipt/${receiptId}`)).body.cancelled_price).toBe(0);
  });

  it("refuses another project's receipt with 1225", async () => {
    const receiptId = await paidReceipt(1_000);
    const stranger = keyInClient(t, await t.createProject({ name: 'stranger' }));
    const res = await stranger.cancel({ receipt_id: receiptId });
    expect(res.body).toMatchObject({ error_code: 'APP_KEY_CHAIN_SESSION_INVALID', code: 1225 });
    expect((await client.get(`/v2/receipt/${receiptId}`)).body.cancelled_price).toBe(0);
  });
});

describe('the receipts store records a cancel in one statement', () => {
  /** A paid receipt of the test project, leased and with its cancel noted as pending, as a cancel holds it. */
  async function leasedWithPending(price: number, cancelKey: string) {
    const receipts = t.deps.stores.receipts;
    const receiptId = await paidReceipt(price);
    const now = t.clock.now();
    const receipt = await receipts.acquireCancelLease(receiptId, now, new Date(now.getTime() + 60_000), undefined);
    expect(receipt).toBeDefined();
    const pending = {
      cancel_key: cancelKey,
      cancel_id: null,
      pg_key: `pg-${cancelKey}`,
      amount: 300,
      tax_free: 0,
      fully_cancelled: false,
      reason: 'test',
    };
    expect(await receipts.markCancelPending(receiptId, pending, null)).toBe(true);
    return {
      receipt: receipt!,
      cancel: (key: string) => ({
        cancelKey: key,
        receipt: receipt!,
        cancelId: undefined,
        plan: { amount: 300, taxFree: 0, fullyCancelled: false },
        gatewayCancelTid: `tid-${key}`,
        cancelledAt: t.clock.now(),
      }),
    };
  }
  const render = (row: { order_name: string; cancelled_price: number; status: number }) => ({
    order_name: row.order_name,
    cancelled_price: row.cancelled_price,
    status: row.status,
  });
  const recorded = (cancelKey: string) =>
    t.deps.database.db.selectFrom('receipt_cancels').selectAll().where('cancel_key', '=', cancelKey).executeTakeFirst();

  it('applies the cancel and records it with the response the updated receipt renders', async () => {
    const { receipt, cancel } = await leasedWithPending(1_000, 'ck-one-statement');
    const response = await t.deps.stores.receipts.recordCancel(cancel('ck-one-statement'), render);
    expect(response).toEqual({ order_name: receipt.order_name, cancelled_price: 300, status: receipt.status });
    expect((await recorded('ck-one-statement'))?.response).toEqual(response);
    const after = await t.deps.stores.receipts.findNamed(project.applicationId, receipt.receipt_id);
    expect(after).toMatchObject({ cancelled_price: 300, cancel_pending: null, cancel_locked_until: null });
  });

  it('records nothing and changes nothing when the cancel is not the pending one', async () => {
    const { receipt, cancel } = await leasedWithPending(1_000, 'ck-the-pending-one');
    expect(await t.deps.stores.receipts.recordCancel(cancel('ck-another-one'), render)).toBeUndefined();
    expect(await recorded('ck-another-one')).toBeUndefined();
    const after = await t.deps.stores.receipts.findNamed(project.applicationId, receipt.receipt_id);
    expect(after).toMatchObject({ cancelled_price: 0 });
    expect(after?.cancel_pending?.cancel_key).toBe('ck-the-pending-one');
  });

  it('records what the receipt really shows when a rendered column moved after the lease', async () => {
    const { receipt, cancel } = await leasedWithPending(1_000, 'ck-moved');
    await t.deps.database.db
      .updateTable('receipts')
      .set({ order_name: 'renamed meanwhile' })
      .where('receipt_id', '=', receipt.receipt_id)
      .execute();
    const response = await t.deps.stores.receipts.recordCancel(cancel('ck-moved'), render);
    expect(response).toEqual({ order_name: 'renamed meanwhile', cancelled_price: 300, status: receipt.status });
    expect((await recorded('ck-moved'))?.response).toEqual(response);
  });
});

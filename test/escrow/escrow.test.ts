// Escrow over HTTP through the real worker, engine and sandbox PGs: sandbox payments, shipping start with
// every error code and both PGs' wire bodies, buyer events as signed PG notifications, transitions with the
// refund on -3, duplicates and out-of-order notifications, ESCROW_STATUS_CHANGED webhooks (api 2.4 / 2.5)
// and the events history; a dropped notification reconciled after the timer (time skipping).
import { readFile } from 'node:fs/promises';
import { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escrowWorkflowId, MAX_SHIPPING_ATTEMPTS } from '../../src/escrow/contract.js';
import { createKeyring, type Keyring, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { paygateWorkerOptions } from '../../src/platform/temporal/worker.js';
import type { TestApp } from '../helpers/app.js';
import { activitiesRun, bounded, eventTypeNames, type HistoryEvent, paygateWorkflowBundle } from '../helpers/temporal.js';
import { type HistoryCapsStack, openHistoryCapsStack } from '../helpers/history-caps-stack.js';
import { TEST_ADMIN_TOKEN, TEST_SANDBOX_TOKEN } from '../helpers/app.js';
import { BUYER, createEscrowProject, escrowClient, MERCHANT, sendSignedNotification, startEscrowApp } from './fixtures.js';
import { eventually, expectApiError, type Receiver, startReceiver } from '../webhooks/fixtures.js';

const ISO_KST = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+09:00$/;

function hasNoNull(value: unknown): boolean {
  if (value === null) return false;
  if (typeof value === 'object') return Object.values(value as object).every(hasNoNull);
  return true;
}

describe('escrow', () => {
  let t: TestApp;
  let hook: Receiver;
  beforeAll(async () => {
    t = await startEscrowApp();
    hook = await startReceiver();
  }, 120_000);
  afterAll(async () => {
    await hook?.close();
    await t?.close();
  });

  const escrowStatus = async (api: ReturnType<typeof escrowClient>, receiptId: string) =>
    ((await api.receipt(receiptId)).body.escrow_data as { status: number }).status;
  const untilStatus = (api: ReturnType<typeof escrowClient>, receiptId: string, status: number) =>
    eventually(async () => ((await escrowStatus(api, receiptId)) === status ? true : undefined), `escrow status ${status}`);

  describe('sandbox payments', () => {
    it('a retry under the same Idempotency-Key whose first request stored the payment and died gets it; another key gets 9410', async () => {
      const project = await createEscrowProject(t);
      const api = escrowClient(t, project);
      const body = { pg: 'sandbox_escrow_b', escrow: true, price: 12_000, order_id: 'died-after-pay', order_name: 'Goods' };
      const post = (key: string | undefined) =>
        t.app.inject({
          method: 'POST',
          url: '/sandbox/v1/payments',
          headers: { authorization: project.basicAuth, ...(key ? { 'idempotency-key': key } : {}) },
          payload: body,
        });
      const first = await post('pay-1');
      expect(first.statusCode, first.body).toBe(200);
      const receiptId = first.json().receipt_id as string;
      // what an API killed after storing the payment and before its answer leaves once the key is released
      await t.deps.database.db.deleteFrom('idempotency_keys').where('application_id', '=', project.applicationId).execute();

      const retried = await post('pay-1');
      expect(retried.statusCode, retried.body).toBe(200);
      expect(retried.json()).toMatchObject({ receipt_id: receiptId, status: 1, order_id: 'died-after-pay' });
      expect(((await api.pgRequests(receiptId)).body.list as unknown[]).length).toBe(1);
      for (const key of ['pay-2', undefined]) {
        const other = await post(key);
        expect(other.statusCode).toBe(409);
        expect(other.json()).toMatchObject({ error_code: 'ORDER_ID_DUPLICATED', code: 9410 });
      }
    });

    it('an escrow payment is a complete receipt with escrow_data 0; a plain one has none; the PG saw the payment', async () => {
      const project = await createEscrowProject(t);
      const api = escrowClient(t, project);
      const paid = await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER, metadata: { sku: 'A1' } });
      expect(paid.status, JSON.stringify(paid.body)).toBe(200);
      expect(paid.body).toMatchObject({ status: 1, price: 10_000, pg: 'sandbox_escrow_a', metadata: { sku: 'A1' } });
      expect(paid.body.escrow_data).toEqual({ status: 0, status_locale: '에스크로대기' });
      expect(hasNoNull(paid.body)).toBe(true);
      const receiptId = paid.body.receipt_id as string;
      expect((await api.receipt(receiptId)).body.escrow_data).toEqual({ status: 0, status_locale: '에스크로대기' });
      // the buyer is stored sealed, never in plain text
      const row = await t.deps.database.db
        .selectFrom('escrow_orders')
        .selectAll()
        .where('receipt_id', '=', receiptId)
        .executeTakeFirstOrThrow();
      expect(row.buyer_sealed).not.toContain(BUYER.phone);

      const plain = await api.pay({ pg: 'sandbox_card' });
      expect(plain.status).toBe(200);
      expect(plain.body.escrow_data).toBeUndefined();

      const wire = await api.pgRequests(receiptId);
      expect(wire.status).toBe(200);
      const list = wire.body.list as { pg: string; operation: string; body: Record<string, unknown> }[];
      expect(list[0]).toMatchObject({ pg: 'sandbox_escrow_a', operation: 'payment', body: { amount: 10_000, escrow: true } });
      expect(list[0]!.body.notify_url).toMatch(/\/pg\/v1\/escrow\/notifications\/sandbox_escrow_a$/);

      const duplicate = await api.pay({ pg: 'sandbox_escrow_a', escrow: true, order_id: paid.body.order_id });
      expectApiError(duplicate, 409, 9410, 'ORDER_ID_DUPLICATED');
      expectApiError(await api.pay({ pg: 'sandbox_identity' }), 404, 2001, 'RC_PG_NOT_FOUND');
    });
  });

  describe('shipping start errors', () => {
    it('answers every error code with its HTTP status, in the spec order, without moving the order', async () => {
      const project = await createEscrowProject(t);
      const api = escrowClient(t, project);
      const pay = async (body: Record<string, unknown>) => (await api.pay(body)).body.receipt_id as string;
      const ok = { tracking_number: '1234567890', delivery_corp: 'CJ대한통운' };

      expectApiError(await api.ship('0123456789abcdef01234567', ok), 404, 2000, 'RC_NOT_FOUND');
      expectApiError(await api.ship('not-an-id', ok), 404, 2000, 'RC_NOT_FOUND');
      expectApiError(await api.ship(await pay({ pg: 'sandbox_escrow_a' }), ok), 400, 2703, 'RC_NOT_ESCROW');

      const cancelled = await pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER });
      const cancel = await api.send('POST', '/v2/cancel', { receipt_id: cancelled });
      expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
      expectApiError(await api.ship(cancelled, ok), 400, 2069, 'RC_NOT_CONFIRMED');

      const order = await pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER });
      expectApiError(await api.ship(order, { delivery_corp: 'CJ대한통운' }), 400, 2706, 'RC_TRACKING_NUMBER_BLANK');
      expectApiError(await api.ship(order, { tracking_number: ' ', delivery_corp: '' }), 400, 2706, 'RC_TRACKING_NUMBER_BLANK');
      expectApiError(await api.ship(order, { tracking_number: '1' }), 400, 2707, 'RC_DELIVERY_CORP_BLANK');

      const cardEscrow = await pay({ pg: 'sandbox_card', escrow: true });
      expectApiError(await api.ship(cardEscrow, ok), 404, 2702, 'RC_ESCROW_SHIPPING_NO_METHOD');

      const failed = await api.ship(order, { tracking_number: 'FAIL-PG', delivery_corp: 'CJ대한통운' });
      expectApiError(failed, 500, 2701, 'RC_ESCROW_SHIPPING_START_FAILED');
      expect(failed.body.pg_error_code).toBe('EA31');
      expect(failed.body.message).toContain('invalid invoice number');
      expect(await escrowStatus(api, order)).toBe(0);

      const shipped = await api.ship(order, ok);
      expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
      // a repeated call: 2700, answered before anything reaches the PG
      const before = ((await api.pgRequests(order)).body.list as unknown[]).length;
      expectApiError(await api.ship(order, ok), 400, 2700, 'RC_ESCROW_NOT_READY');
      expect(((await api.pgRequests(order)).body.list as unknown[]).length).toBe(before);
    });

    it(`at most ${MAX_SHIPPING_ATTEMPTS} shipping starts reach the PG per order; the next is 2701 without a PG call or history`, async () => {
      const api = escrowClient(t, await createEscrowProject(t));
      const order = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
      for (let i = 0; i < MAX_SHIPPING_ATTEMPTS; i++) {
        const failed = await api.ship(order, { tracking_number: 'FAIL-PG', delivery_corp: 'DHL' });
        expectApiError(failed, 500, 2701, 'RC_ESCROW_SHIPPING_START_FAILED');
        expect(failed.body.pg_error_code).toBeDefined();
      }
      const handle = t.temporal!.client.workflow.getHandle(escrowWorkflowId(order));
      const events = (await handle.fetchHistory()).events?.length;
      const calls = ((await api.pgRequests(order)).body.list as unknown[]).length;
      const capped = await api.ship(order, { tracking_number: '1', delivery_corp: 'DHL' });
      expectApiError(capped, 500, 2701, 'RC_ESCROW_SHIPPING_START_FAILED');
      expect(capped.body.message).toContain(`At most ${MAX_SHIPPING_ATTEMPTS} shipping starts`);
      expect(((await api.pgRequests(order)).body.list as unknown[]).length).toBe(calls);
      expect((await handle.fetchHistory()).events?.length).toBe(events);
      expect(await escrowStatus(api, order)).toBe(0);
    });

    it('the first escrow PG checks the merchant registration (2708-2712) whatever company says, then the recipient (2713-2716)', async () => {
      const fields = ['company_name', 'addr1', 'addr2', 'zipcode', 'phone'] as const;
      const codes = [2708, 2709, 2710, 2711, 2712];
      const names = [
        'RC_PROVIDER_NAME_BLANK',
        'RC_PROVIDER_ADDR1_BLANK',
        'RC_PROVIDER_ADDR2_BLANK',
        'RC_PROVIDER_ZIP_BLANK',
        'RC_PROVIDER_PHONE_BLANK',
      ];
      const company = { name: 'Given', phone: '021111', zipcode: '11111', addr1: 'a1', addr2: 'a2' };
      for (const [i, field] of fields.entries()) {
        const project = await createEscrowProject(t, { merchant: { ...MERCHANT, [field]: '' } });
        const api = escrowClient(t, project);
        const order = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER })).body.receipt_id as string;
        expectApiError(
          await api.ship(order, { tracking_number: '1', delivery_corp: '한진택배', company }),
          400,
          codes[i]!,
          names[i]!,
        );
      }

      const project = await createEscrowProject(t);
      const api = escrowClient(t, project);
      const ship = { tracking_number: '1', delivery_corp: '한진택배' };
      const noBuyer = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true })).body.receipt_id as string;
      expectApiError(await api.ship(noBuyer, ship), 400, 2713, 'RC_USER_NAME_BLANK');
      expectApiError(await api.ship(noBuyer, { ...ship, user: { username: 'R' } }), 400, 2714, 'RC_USER_PHONE_BLANK');
      expectApiError(
        await api.ship(noBuyer, { ...ship, user: { username: 'R', phone: '010' } }),
        400,
        2715,
        'RC_USER_ADDRESS_BLANK',
      );
      expectApiError(
        await api.ship(noBuyer, { ...ship, user: { username: 'R', phone: '010', address: 'addr' } }),
        400,
        2716,
        'RC_USER_ZIPCODE_BLANK',
      );
      // address and zipcode fall back only to the same keys saved at payment
      const partial = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: { username: 'B', phone: '010' } })).body
        .receipt_id as string;
      expectApiError(await api.ship(partial, ship), 400, 2715, 'RC_USER_ADDRESS_BLANK');
      expect(await escrowStatus(api, partial)).toBe(0);
    });

    it('seller projects only (600); the scope or a Bearer token (1222 HTTP 401 without)', async () => {
      const ship = { tracking_number: '1', delivery_corp: '한진택배' };
      const buyer = await createEscrowProject(t, { seller: false });
      const nonSeller = escrowClient(t, buyer);
      const order = (await nonSeller.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
      expectApiError(await nonSeller.ship(order, ship), 403, 600, 'API_ONLY_SELLER');

      const narrow = await createEscrowProject(t, { scopes: ['subscribe_payment', 'receipt'] });
      const api = escrowClient(t, narrow);
      const own = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
      expectApiError(await api.ship(own, ship), 401, 1222, 'API_SCOPE_INVALID');
      const token = await t.app.inject({
        method: 'POST',
        url: '/v2/request/token',
        payload: { application_id: narrow.applicationId, private_key: narrow.privateKey },
      });
      const bearer = `Bearer ${token.json().access_token as string}`;
      const shipped = await api.ship(own, ship, bearer);
      expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
    });
  });

  describe('wire bodies', () => {
    it('sandbox_escrow_a gets every field: mapped carrier (unknown 9999), day 5, SH, the registered zipcode, fallbacks', async () => {
      const project = await createEscrowProject(t);
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER })).body.receipt_id as string;
      const shipped = await api.ship(order, {
        receipt_id: 'ignored',
        receipt_url: 'ignored',
        tracking_number: 'T-100',
        delivery_corp: 'CJ대한통운',
        shipping_prepayment: false,
        user: { phone: '01099998888' },
        company: { name: 'Override Co', zipcode: '99999' },
      });
      expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
      expect(shipped.body.status).toBe(1);
      const data = shipped.body.escrow_data as Record<string, unknown>;
      expect(data.status).toBe(3);
      expect(data.status_locale).toBe('배송시작');
      expect(data.shipping_started_at).toMatch(ISO_KST);
      expect(data.escrow_confirm_url).toMatch(/^https:\/\//);
      expect(hasNoNull(shipped.body)).toBe(true);

      const list = (await api.pgRequests(order)).body.list as { operation: string; body: Record<string, unknown> }[];
      expect(list[0]!.operation).toBe('escrow.ship');
      expect(list[0]!.body).toMatchObject({
        invoice_no: 'T-100',
        dlv_company_code: '04',
        prepay: 'SH',
        dlv_day: 5,
        rcv_name: BUYER.username,
        rcv_tel: '01099998888',
        rcv_addr: BUYER.address,
        rcv_zip: BUYER.zipcode,
        snd_name: 'Override Co',
        snd_zip: MERCHANT.zipcode,
        snd_addr1: MERCHANT.addr1,
      });

      const other = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER })).body.receipt_id as string;
      expect((await api.ship(other, { tracking_number: 'T-2', delivery_corp: 'Unknown Parcel', shipping_day: 2 })).status).toBe(
        200,
      );
      const otherBody = ((await api.pgRequests(other)).body.list as { body: Record<string, unknown> }[])[0]!.body;
      expect(otherBody).toMatchObject({ dlv_company_code: '9999', dlv_day: 2 });
    });

    it('sandbox_escrow_b gets only TID, invoice and courier (unknown ETC), with no merchant or recipient checks', async () => {
      const project = await createEscrowProject(t, { merchant: {} });
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
      const shipped = await api.ship(order, {
        tracking_number: 'B-1',
        delivery_corp: 'FedEx',
        shipping_day: 3,
        user: { username: 'x' },
      });
      expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
      const data = shipped.body.escrow_data as Record<string, unknown>;
      expect(data.status).toBe(3);
      expect(data.escrow_confirm_url).toBeUndefined();
      const list = (await api.pgRequests(order)).body.list as { body: Record<string, unknown> }[];
      expect(Object.keys(list[0]!.body).sort()).toEqual(['COURIER', 'INVOICE_NO', 'TID']);
      expect(list[0]!.body).toMatchObject({ INVOICE_NO: 'B-1', COURIER: 'FEDEX' });

      const other = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
      expect((await api.ship(other, { tracking_number: 'B-2', delivery_corp: '호남택배' })).status).toBe(200);
      expect(((await api.pgRequests(other)).body.list as { body: Record<string, unknown> }[])[0]!.body.COURIER).toBe('ETC');
      const refused = await api.ship((await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string, {
        tracking_number: 'FAIL-PG',
        delivery_corp: 'DHL',
      });
      expectApiError(refused, 500, 2701, 'RC_ESCROW_SHIPPING_START_FAILED');
      expect(refused.body.pg_error_code).toBe('B422');
    });
  });

  describe('buyer events, transitions and webhooks', () => {
    const hookRequests = (receiptId: string) =>
      hook.requests.filter((r) => (JSON.parse(r.body) as { receipt_id?: string }).receipt_id === receiptId);

    it('3 -> 1 sends one signed ESCROW_STATUS_CHANGED per change (api 2.5), the history names each delivery', async () => {
      const project = await createEscrowProject(t, { webhook_url: hook.url, api_version: '2.5' });
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER })).body.receipt_id as string;
      expect((await api.ship(order, { tracking_number: '1', delivery_corp: '우체국택배' })).status).toBe(200);
      const accepted = await api.buyer(order, { event: 'purchase_confirmed' });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
      await untilStatus(api, order, 1);
      const receipt = (await api.receipt(order)).body;
      const data = receipt.escrow_data as Record<string, unknown>;
      expect(data.receipt_confirmed_at).toMatch(ISO_KST);
      expect(data.escrow_confirm_url).toBeUndefined();

      await eventually(async () => (hookRequests(order).length >= 2 ? true : undefined), 'two webhooks');
      const bodies = hookRequests(order).map((r) => JSON.parse(r.body) as Record<string, unknown>);
      expect(bodies.map((b) => (b.escrow_data as { status: number }).status)).toEqual([3, 1]);
      for (const b of bodies) {
        expect(b).toMatchObject({
          webhook_type: 'ESCROW_STATUS_CHANGED',
          application_id: project.applicationId,
          escrow_webhook: true,
          billing_key: null,
          status: 1,
          receipt_id: order,
        });
      }
      for (const r of hookRequests(order)) {
        const at = new Date(Number(r.headers['webhook-timestamp']) * 1000);
        expect(r.headers['webhook-signature']!.split(' ')).toContain(
          new Webhook(project.webhookSecret!).sign(r.headers['webhook-id']!, at, r.body),
        );
      }
      const events = (await api.events(order)).body.list as Record<string, unknown>[];
      expect(events.map((e) => [e.event, e.source, e.to_status])).toEqual([
        ['shipping_started', 'api', 3],
        ['purchase_confirmed', 'pg_notification', 1],
      ]);
      expect(events.map((e) => e.delivery_id)).toEqual(hookRequests(order).map((r) => r.headers['webhook-id']));
    });

    it('3 -> -2 -> -3 refunds through the cancel service; api 2.4 sends webhook_type null', async () => {
      const project = await createEscrowProject(t, { webhook_url: hook.url, api_version: '2.4' });
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true, price: 33_000 })).body.receipt_id as string;
      expect((await api.ship(order, { tracking_number: '1', delivery_corp: 'UPS' })).status).toBe(200);
      expect((await api.buyer(order, { event: 'purchase_rejected' })).status).toBe(202);
      await untilStatus(api, order, -2);
      expect(((await api.receipt(order)).body.escrow_data as Record<string, unknown>).receipt_revoked_at).toMatch(ISO_KST);
      expect((await api.buyer(order, { event: 'rejection_approved' })).status).toBe(202);
      await untilStatus(api, order, -3);
      const receipt = (await api.receipt(order)).body;
      expect(receipt).toMatchObject({ status: 20, cancelled_price: 33_000 });

      await eventually(async () => (hookRequests(order).length >= 3 ? true : undefined), 'three webhooks');
      const bodies = hookRequests(order).map((r) => JSON.parse(r.body) as Record<string, unknown>);
      expect(bodies.map((b) => (b.escrow_data as { status: number }).status)).toEqual([3, -2, -3]);
      for (const b of bodies) {
        expect('webhook_type' in b).toBe(true);
        expect(b.webhook_type).toBeNull();
        expect(b.escrow_webhook).toBe(true);
      }
      expect(bodies[2]).toMatchObject({ status: 20, cancelled_price: 33_000 });
    });

    it('settlement held from -2; duplicates and events out of order are recorded and ignored; unknown names 9400', async () => {
      const project = await createEscrowProject(t, { webhook_url: hook.url });
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER })).body.receipt_id as string;
      expectApiError(await api.buyer(order, { event: 'purchase_exploded' }), 400, 9400, 'INVALID_REQUEST');
      // a notification before shipping does not fit state 0
      expect((await api.buyer(order, { event: 'purchase_confirmed' })).status).toBe(202);
      await eventually(
        async () => (((await api.events(order)).body.list as unknown[]).length === 1 ? true : undefined),
        'ignored',
      );
      expect((await api.ship(order, { tracking_number: '1', delivery_corp: '롯데택배' })).status).toBe(200);
      expect((await api.buyer(order, { event: 'rejection_approved' })).status).toBe(202);
      expect((await api.buyer(order, { event: 'purchase_rejected', duplicate: true })).status).toBe(202);
      await untilStatus(api, order, -2);
      expect((await api.buyer(order, { event: 'settlement_held' })).status).toBe(202);
      await untilStatus(api, order, -1);
      const events = await eventually(async () => {
        const list = (await api.events(order)).body.list as Record<string, unknown>[];
        return list.length === 6 ? list : undefined;
      }, 'six events');
      expect(events.map((e) => [e.event, e.applied, e.note ?? null])).toEqual([
        ['purchase_confirmed', false, 'does not fit escrow status 0'],
        ['shipping_started', true, null],
        ['rejection_approved', false, 'does not fit escrow status 3'],
        ['purchase_rejected', true, null],
        ['purchase_rejected', false, 'duplicate notification'],
        ['settlement_held', true, null],
      ]);
      await eventually(async () => (hookRequests(order).length >= 3 ? true : undefined), 'three webhooks');
      await new Promise((r) => setTimeout(r, 300));
      expect(
        hookRequests(order).map((r) => (JSON.parse(r.body) as { escrow_data: { status: number } }).escrow_data.status),
      ).toEqual([3, -2, -1]);
    });

    it('a notification after the order has ended is recorded as ignored: nothing changes, no webhook', async () => {
      const project = await createEscrowProject(t, { webhook_url: hook.url });
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
      expect((await api.ship(order, { tracking_number: '1', delivery_corp: 'DHL' })).status).toBe(200);
      expect((await api.buyer(order, { event: 'purchase_confirmed' })).status).toBe(202);
      await untilStatus(api, order, 1);
      const handle = t.temporal!.client.workflow.getHandle(escrowWorkflowId(order));
      await eventually(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), 'the run to end');
      await eventually(async () => (hookRequests(order).length === 2 ? true : undefined), 'two webhooks');
      const before = await api.receipt(order);

      // the PG sends more (the buyer acts again, redelivered): no run to signal, so the API records them
      expect((await api.buyer(order, { event: 'settlement_held', duplicate: true })).status).toBe(202);
      const ignored = await eventually(async () => {
        const list = (await api.events(order)).body.list as Record<string, unknown>[];
        return list.length === 4 ? list.slice(2) : undefined;
      }, 'two ignored notifications');
      for (const e of ignored) {
        expect(e).toMatchObject({
          event: 'settlement_held',
          source: 'pg_notification',
          from_status: 1,
          applied: false,
          note: 'the order has ended',
        });
        expect(e).not.toHaveProperty('to_status');
        expect(e).not.toHaveProperty('delivery_id');
      }
      expect(ignored[0]!.notification_id).toBe(ignored[1]!.notification_id);
      expect((await api.receipt(order)).body).toEqual(before.body);
      // the ignored notifications were recorded before the PG got its answer, and no delivery was saved for them
      const deliveries = await t.deps.database.db
        .selectFrom('webhook_deliveries')
        .select('delivery_id')
        .where('application_id', '=', project.applicationId)
        .execute();
      expect(deliveries).toHaveLength(2);
      expect(hookRequests(order)).toHaveLength(2);
    });

    it("a PG's redeliveries of one notification reach the workflow at most twice: its history and the events stop growing", async () => {
      const project = await createEscrowProject(t);
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
      expect((await api.ship(order, { tracking_number: '1', delivery_corp: 'DHL' })).status).toBe(200);
      await untilStatus(api, order, 3);
      const handle = t.temporal!.client.workflow.getHandle(escrowWorkflowId(order));
      const copy = { notificationId: `ntf_redelivered_${order}`, event: 'rejection_approved' };
      const rowsOf = async () =>
        ((await api.events(order)).body.list as Record<string, unknown>[]).filter(
          (e) => e.notification_id === copy.notificationId,
        );
      // the first copy is handled (it does not fit 3), the second is recorded as a duplicate
      for (const n of [1, 2]) {
        expect(await sendSignedNotification(t, 'sandbox_escrow_b', order, copy)).toBe(200);
        await eventually(async () => ((await rowsOf()).length === n ? true : undefined), `copy ${n} recorded`);
      }
      // the history once the duplicate's task is done (the run waits on its reconcile timer again)
      const settled = () =>
        eventually(async () => {
          const events = (await handle.fetchHistory()).events ?? [];
          return eventTypeNames(events).at(-1) === 'TIMER_STARTED' ? events.length : undefined;
        }, 'the run to wait again');
      const events = await settled();
      for (let i = 0; i < 25; i++) expect(await sendSignedNotification(t, 'sandbox_escrow_b', order, copy)).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      expect(await settled()).toBe(events);
      expect((await rowsOf()).map((e) => e.note)).toEqual(['does not fit escrow status 3', 'duplicate notification']);
      // the order goes on
      expect((await api.buyer(order, { event: 'purchase_confirmed' })).status).toBe(202);
      await untilStatus(api, order, 1);
    });

    it('the events history of an unknown, foreign, malformed or non-escrow receipt is refused', async () => {
      const owner = await createEscrowProject(t);
      const ownerApi = escrowClient(t, owner);
      const order = (await ownerApi.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER })).body.receipt_id as string;
      const plain = (await ownerApi.pay({ pg: 'sandbox_escrow_a' })).body.receipt_id as string;
      expect((await ownerApi.events(order)).status).toBe(200);
      const stranger = escrowClient(t, await createEscrowProject(t));
      expectApiError(await stranger.events(order), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
      expectApiError(await ownerApi.events('0123456789abcdef01234567'), 404, 2000, 'RC_NOT_FOUND');
      expectApiError(await ownerApi.events('not-a-receipt'), 404, 2000, 'RC_NOT_FOUND');
      expectApiError(await ownerApi.events(plain), 400, 2703, 'RC_NOT_ESCROW');
    });

    it('a notification without the PG signature is refused (9432, HTTP 401) and changes nothing', async () => {
      const body = JSON.stringify({
        notification_id: 'n1',
        tid: 'x',
        merchant_ref: 'y',
        event: 'purchase_confirmed',
        occurred_at: new Date().toISOString(),
      });
      const res = await t.app.inject({
        method: 'POST',
        url: '/pg/v1/escrow/notifications/sandbox_escrow_a',
        headers: { 'content-type': 'application/json', 'x-sandbox-signature': `t=${Date.now()},v1=${'0'.repeat(64)}` },
        payload: body,
      });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe(9432);
    });
  });

  describe('reconcile', () => {
    it('a dropped notification: after the reconcile hours the workflow asks the PG and applies what it learns', async () => {
      const project = await createEscrowProject(t);
      const api = escrowClient(t, project);
      const order = (await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER })).body.receipt_id as string;
      expect((await api.ship(order, { tracking_number: '1', delivery_corp: '로젠택배' })).status).toBe(200);
      const arm = await fetch(new URL('/_sandbox/faults', t.sandboxUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_SANDBOX_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ operation: 'escrow.notify', fault: 'drop', count: 1 }),
      });
      expect(arm.status).toBe(200);
      const sent = await api.buyer(order, { event: 'purchase_confirmed' });
      expect(sent.body).toMatchObject({ sent: false });
      await new Promise((r) => setTimeout(r, 500));
      expect(await escrowStatus(api, order)).toBe(3);

      await t.temporal!.skipTime(73 * 60 * 60 * 1000);
      await untilStatus(api, order, 1);
      const events = (await api.events(order)).body.list as Record<string, unknown>[];
      expect(events.at(-1)).toMatchObject({ event: 'purchase_confirmed', source: 'reconcile', to_status: 1, applied: true });
      const inquiries = ((await api.pgRequests(order)).body.list as { operation: string }[]).filter(
        (r) => r.operation === 'escrow.status',
      );
      expect(inquiries.length).toBeGreaterThanOrEqual(1);
    });

    it("the project's escrow_reconcile_hours (admin API) sets the timer: 2 hours reconciles, 72 still waits", async () => {
      const quick = await createEscrowProject(t);
      const patched = await t.app.inject({
        method: 'PATCH',
        url: `/admin/v1/projects/${quick.applicationId}`,
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        payload: { escrow_reconcile_hours: 2 },
      });
      expect(patched.json()).toMatchObject({ escrow_reconcile_hours: 2 });
      const slow = await createEscrowProject(t);
      const orders: { api: ReturnType<typeof escrowClient>; order: string }[] = [];
      for (const project of [quick, slow]) {
        const api = escrowClient(t, project);
        const order = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
        expect((await api.ship(order, { tracking_number: '1', delivery_corp: 'DHL' })).status).toBe(200);
        orders.push({ api, order });
      }
      const arm = await fetch(new URL('/_sandbox/faults', t.sandboxUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_SANDBOX_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ operation: 'escrow.notify', fault: 'drop', count: 2 }),
      });
      expect(arm.status).toBe(200);
      for (const { api, order } of orders) {
        expect((await api.buyer(order, { event: 'purchase_confirmed' })).body).toMatchObject({ sent: false });
      }

      await t.temporal!.skipTime(3 * 60 * 60 * 1000);
      const [fast, waiting] = orders as [(typeof orders)[0], (typeof orders)[0]];
      await untilStatus(fast.api, fast.order, 1);
      expect(((await fast.api.events(fast.order)).body.list as Record<string, unknown>[]).at(-1)).toMatchObject({
        source: 'reconcile',
        to_status: 1,
      });
      // the 72-hour order has not asked its PG: no inquiry, still shipped
      expect(await escrowStatus(waiting.api, waiting.order)).toBe(3);
      const asked = ((await waiting.api.pgRequests(waiting.order)).body.list as { operation: string }[]).filter(
        (r) => r.operation === 'escrow.status',
      );
      expect(asked).toHaveLength(0);
    });
  });
});

async function replay(history: proto.api.history.v1.IHistory, keyring: Keyring, id: string): Promise<void> {
  await bounded(
    Worker.runReplayHistory({ workflowBundle: await paygateWorkflowBundle(), ...paygateWorkerOptions(keyring) }, history, id),
    30_000,
    'replay',
  );
}

describe('escrow: replay of a history recorded before continue-as-new and the caps', () => {
  // Recorded on the workflow code before them: an order shipped, then 8 notifications that did not fit and 3
  // redeliveries of the first (each recorded as a duplicate) in one run, on an engine suggesting continue-as-new
  // at 40 events, sealed with the key below. The new code would continue as new at the suggestion; on this
  // history patched() answers false, so it replays as recorded.
  const FIXTURE_KEYRING = `replay-fixture:${Buffer.alloc(32, 7).toString('base64')}`;

  it('replays: the run went past the suggestion without continuing as new', async () => {
    const encoded = await readFile(new URL('./escrow-history-before-caps.b64', import.meta.url), 'utf8');
    const history = proto.api.history.v1.History.decode(Buffer.from(encoded.trim(), 'base64'));
    const events = history.events ?? [];
    const names = eventTypeNames(events);
    expect(names.filter((n) => n === 'WORKFLOW_EXECUTION_SIGNALED')).toHaveLength(11);
    expect(names).not.toContain('MARKER_RECORDED');
    expect(names).not.toContain('WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    expect(events.some((e) => e.workflowTaskStartedEventAttributes?.suggestContinueAsNew)).toBe(true);
    await replay(history, createKeyring(parseKeyringSpec(FIXTURE_KEYRING)), 'escrow:pre-caps');
  });
});

describe('escrow: replay of a history recorded before the shipping start ran in its workflow task', () => {
  // Recorded on the workflow code before SHIPPING_IN_TASK: an order paid and shipped (the PG's registration and its
  // record each an activity task, three workflow tasks for the update), waiting for its buyer; sealed with the key
  // below for its workflow id. patched() answers false on it, so the shipping start replays as it ran.
  const FIXTURE_KEYRING = `replay-fixture:${Buffer.alloc(32, 7).toString('base64')}`;

  it('replays: the shipping start was two activity tasks', async () => {
    const encoded = await readFile(new URL('./escrow-history-before-local-shipping.b64', import.meta.url), 'utf8');
    const history = proto.api.history.v1.History.decode(Buffer.from(encoded.trim(), 'base64'));
    expect(activitiesRun(history.events ?? [])).toEqual(['startEscrowShipping', 'recordEscrowEvent']);
    await replay(history, createKeyring(parseKeyringSpec(FIXTURE_KEYRING)), 'escrow:302bda10e79fd09b36823ce5');
  });
});

// The engine suggests continue-as-new at SUGGEST_AT events here (Temporal's default is 4,096): an order waiting
// weeks for its buyer, sent many notifications, continues as new with its state instead of growing one history.
describe('escrow: a long-lived order keeps each run bounded', () => {
  const SUGGEST_AT = 40;
  // one notification (about 12 events) past the suggestion, and a completion refused because a signal landed
  // on the closing task (a failed task and its retry)
  const RUN_BOUND = SUGGEST_AT + 30;
  let stack: HistoryCapsStack;
  beforeAll(async () => {
    stack = await openHistoryCapsStack({ suggestAtEvents: SUGGEST_AT });
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('25 notifications that do not fit: >= 3 runs under the bound, every event recorded once in order, then the buyer confirms', async () => {
    const { t } = stack;
    const api = escrowClient(t, await createEscrowProject(t));
    const order = (await api.pay({ pg: 'sandbox_escrow_b', escrow: true })).body.receipt_id as string;
    expect((await api.ship(order, { tracking_number: '1', delivery_corp: 'DHL' })).status).toBe(200);
    const handle = t.deps.temporal!.client.workflow.getHandle(escrowWorkflowId(order));
    const firstRun = (await handle.describe()).runId;
    // Each notification is sent once the latest run waits on its timer again, never while a task (perhaps the
    // one continuing as new) is in flight: the engine answers a completion it refused for a signal that landed
    // meanwhile as a success, so the worker keeps its finished run and the signal is lost (reported to the lead).
    const idle = () =>
      eventually(async () => {
        const d = await handle.describe();
        if (d.status.name !== 'RUNNING') return undefined;
        const events = (await handle.fetchHistory()).events ?? [];
        return eventTypeNames(events).at(-1) === 'TIMER_STARTED' ? true : undefined;
      }, 'the run to wait on its timer');
    for (let i = 1; i <= 25; i++) {
      await idle();
      const notificationId = `ntf_${i}_${order}`;
      expect(await sendSignedNotification(t, 'sandbox_escrow_b', order, { notificationId, event: 'rejection_approved' })).toBe(
        200,
      );
      // handled before the next (so the events are in order)
      await eventually(
        async () => (((await api.events(order)).body.list as unknown[]).length === i + 1 ? true : undefined),
        `event ${i}`,
      );
    }
    // a redelivery of an id from an earlier run (the service tells it is known): a duplicate, not applied
    await idle();
    expect(
      await sendSignedNotification(t, 'sandbox_escrow_b', order, {
        notificationId: `ntf_1_${order}`,
        event: 'rejection_approved',
      }),
    ).toBe(200);
    const list = await eventually(async () => {
      const rows = (await api.events(order)).body.list as Record<string, unknown>[];
      return rows.length === 27 ? rows : undefined;
    }, '27 events');
    expect(list.map((e) => e.seq)).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
    expect(list.slice(1, 26).every((e) => e.note === 'does not fit escrow status 3')).toBe(true);
    expect(list[26]).toMatchObject({ notification_id: `ntf_1_${order}`, note: 'duplicate notification', applied: false });

    const client = t.deps.temporal!.client;
    const runs: number[] = [];
    for (let runId = (await handle.describe()).runId; runId; ) {
      const events: HistoryEvent[] =
        (await client.workflow.getHandle(escrowWorkflowId(order), runId).fetchHistory()).events ?? [];
      runs.push(events.length);
      runId = runId === firstRun ? '' : (events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? '');
    }
    expect(runs.length).toBeGreaterThanOrEqual(3);
    for (const length of runs) expect(length).toBeLessThanOrEqual(RUN_BOUND);
    const first = await client.workflow.getHandle(escrowWorkflowId(order), firstRun).fetchHistory();
    expect(eventTypeNames(first.events ?? [])).toContain('MARKER_RECORDED');
    // replayed under its workflow id: its payloads are sealed for it
    await replay(first, t.deps.keyring!, escrowWorkflowId(order));

    // the order goes on in its latest run: the buyer confirms, the run completes
    await idle();
    expect(
      await sendSignedNotification(t, 'sandbox_escrow_b', order, {
        notificationId: `ntf_ok_${order}`,
        event: 'purchase_confirmed',
      }),
    ).toBe(200);
    await eventually(
      async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined),
      'the order to end',
      20_000,
    );
    expect(((await api.receipt(order)).body.escrow_data as { status: number }).status).toBe(1);
  }, 120_000);
});

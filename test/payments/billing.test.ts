// Key-in billing over HTTP: the real app, the real database, the real sandbox card PG.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { startSandboxGateways } from '../../src/sandbox/server.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import {
  armSandboxFault,
  KEY_IN_METHOD,
  keyInClient,
  sandboxChargeExecutions,
  sandboxGet,
  TEST_CARD,
} from './key-in-fixtures.js';

const KEY_IN = KEY_IN_METHOD;
const CARD = TEST_CARD;
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

let t: TestApp;
let project: TestProject;
let other: TestProject;

beforeAll(async () => {
  t = await buildTestApp();
  project = await t.createProject();
  other = await t.createProject({ name: 'other project' });
});
afterAll(async () => {
  await t?.close();
});

const as = (p: TestProject) => keyInClient(t, p);
const post = (url: string, body: unknown, auth?: TestProject) => as(auth ?? project).post(url, body);
const get = (url: string, auth?: TestProject) => as(auth ?? project).get(url);
const issue = (overrides: Record<string, unknown> = {}, auth?: TestProject) => as(auth ?? project).issue(overrides);
const issuedKey = (overrides: Record<string, unknown> = {}) => as(project).issuedKey(overrides);
let orderSeq = 0;
function charge(billingKey: string, overrides: Record<string, unknown> = {}) {
  orderSeq += 1;
  return post('/v2/subscribe/payment', {
    billing_key: billingKey,
    order_name: 'June',
    order_id: `order-${orderSeq}`,
    price: 1000,
    ...overrides,
  });
}

describe('POST /v2/request/subscribe', () => {
  it('issues a billing key with every field of the issuance response', async () => {
    const res = await issue();
    expect(res.status).toBe(200);
    const body = res.body;
    expect(body).toMatchObject({
      subscription_id: 'sub-001',
      status: 11,
      status_locale: '빌링키발급완료',
      pg: 'sandbox_card',
      method: KEY_IN,
      method_symbol: 'card_rebill_rest',
      method_origin: KEY_IN,
      method_origin_symbol: 'card_rebill_rest',
    });
    expect(body.billing_key).toMatch(/^[0-9a-f]{24}$/);
    expect(body.receipt_id).toMatch(/^[0-9a-f]{24}$/);
    for (const field of ['published_at', 'requested_at', 'billing_expire_at']) expect(body[field]).toMatch(ISO_WITH_OFFSET);
    // the card expires 12/30: valid through the last second of that month
    expect(body.billing_expire_at).toBe('2030-12-31T23:59:59+09:00');
    const billingData = body.billing_data as Record<string, string>;
    expect(billingData.card_no).toBe('411111******1111');
    expect(billingData.card_company).toEqual(expect.any(String));
    expect(billingData.card_company_code).toEqual(expect.any(String));
    expect(['credit', 'check']).toContain(billingData.card_type);
    // no verification charge happens, so no receipt_data; and no nulls anywhere
    expect(body).not.toHaveProperty('receipt_data');
    expect(JSON.stringify(body)).not.toContain('null');
    // the gateway's own key never leaves the server
    expect(JSON.stringify(body)).not.toMatch(/bkey|gateway/i);
  });

  it.each([
    [{ pg: undefined }, 'SUBSCRIBE_NEED_PG_METHOD', 2300],
    [{ pg: '' }, 'SUBSCRIBE_NEED_PG_METHOD', 2300],
    [{ method: undefined }, 'RC_ONLY_REST_API', 2058],
    [{ method: '카드자동' }, 'RC_ONLY_REST_API', 2058],
    [{ pg: 'no_such_pg' }, 'RC_PG_NOT_FOUND', 2001],
    [{ pg: 'sandbox_noauto' }, 'RC_NOT_SUBSCRIBE', 2057],
    [{ pg: 'sandbox_identity' }, 'RC_NOT_SUBSCRIBE', 2057],
    [{ card_no: '' }, 'SUBSCRIBE_CARD_NO_BLANK', 2311],
    [{ card_pw: '' }, 'SUBSCRIBE_CARD_PW_BLANK', 2312],
    [{ card_identity_no: ' ' }, 'SUBSCRIBE_CARD_IDENTITY_BLANK', 2313],
    [{ card_expire_year: undefined }, 'SUBSCRIBE_CARD_EX_YEAR_BLANK', 2314],
    [{ card_expire_month: '' }, 'SUBSCRIBE_CARD_EX_MONTH_BLANK', 2315],
    [{ order_name: '' }, 'RC_NAME_BLANK', 2003],
    [{ subscription_id: '' }, 'RC_O_ID_BLANK', 2005],
    [{ card_expire_month: '13' }, 'RC_INVALID_EXP_MONTH', 2084],
    [{ card_no: '4111111111111112' }, 'SUBSCRIBE_PUBLISH_FAILED', 2304],
    [{ card_no: '4111-1111-1111-1111' }, 'SUBSCRIBE_PUBLISH_FAILED', 2304],
    [{ card_expire_year: '20' }, 'SUBSCRIBE_PUBLISH_FAILED', 2304],
  ])('refuses %j with %s', async (overrides, errorCode, code) => {
    const res = await issue(overrides);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body).toMatchObject({ error_code: errorCode, code });
    // a local refusal carries no pg_error_code: no PG was asked
    expect(res.body).not.toHaveProperty('pg_error_code');
  });

  it('checks pg and method before anything else', async () => {
    const res = await post('/v2/request/subscribe', { method: KEY_IN });
    expect(res.body.error_code).toBe('SUBSCRIBE_NEED_PG_METHOD');
    const res2 = await post('/v2/request/subscribe', { pg: 'sandbox_card', card_no: '' });
    expect(res2.body.error_code).toBe('RC_ONLY_REST_API');
  });

  it('refuses a PG not enabled for the project with 2001', async () => {
    const limited = await t.createProject({ name: 'identity only', pgs: ['sandbox_identity'] });
    const res = await issue({}, limited);
    expect(res.body).toMatchObject({ error_code: 'RC_PG_NOT_FOUND', code: 2001 });
  });

  it('passes a PG refusal on as 2304 with pg_error_code and the PG reason', async () => {
    const res = await issue({ card_no: '4000000000000002' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'SUBSCRIBE_PUBLISH_FAILED', code: 2304, pg_error_code: 'C103' });
    expect(res.body.message).toMatch(/^The PG refused the billing key issuance: .+/);
  });

  it('answers 2301 with the cause when the PG is unreachable', async () => {
    const res = await post('/v2/request/subscribe', CARD);
    expect(res.status).toBe(200);
    await armSandboxFault(t.sandboxUrl, 'billing_key.issue', '500');
    const failed = await issue();
    expect(failed.status).toBe(500);
    expect(failed.body).toMatchObject({ error_code: 'SUBSCRIBE_REQUEST_FAILED', code: 2301 });
    expect(failed.body.message).toMatch(/^The billing key request failed: .*HTTP 500/);
  });

  it('runs a refunded verification charge when extra.subscribe_test_payment is true (receipt_data)', async () => {
    const res = await issue({ subscription_id: 'verified', extra: { subscribe_test_payment: true } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 11, subscription_id: 'verified' });
    const receiptData = res.body.receipt_data as Record<string, unknown>;
    expect(receiptData).toMatchObject({
      price: 100,
      cancelled_price: 100,
      status: 20,
      status_locale: '결제취소완료',
      pg: 'sandbox_card',
    });
    expect((receiptData.card_data as Record<string, string>).card_no).toBe('411111******1111');
    // the verification receipt is a real receipt, and the PG refunded it
    const gatewayTid = await t.deps.database.db
      .selectFrom('receipts')
      .select('gateway_tid')
      .where('receipt_id', '=', receiptData.receipt_id as string)
      .executeTakeFirstOrThrow();
    const atPg = await sandboxGet<{ amount: number; cancelled_amount: number }>(
      t.sandboxUrl,
      `/_sandbox/charges/${gatewayTid.gateway_tid ?? ''}`,
    );
    expect(atPg).toMatchObject({ amount: 100, cancelled_amount: 100 });
    // the key works; lookups show the issuance without receipt_data
    expect((await charge(res.body.billing_key as string)).status).toBe(200);
    const lookup = await get(`/v2/billing_key/${res.body.billing_key as string}`);
    expect(lookup.body).not.toHaveProperty('receipt_data');
    // without the option there is no verification charge
    expect((await issue()).body).not.toHaveProperty('receipt_data');
  });

  it('fails the issuance with 2304 and destroys the key when the verification charge is refused', async () => {
    const res = await issue({
      card_no: '4000000000009995',
      subscription_id: 'unverified',
      extra: { subscribe_test_payment: true },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'SUBSCRIBE_PUBLISH_FAILED', code: 2304, pg_error_code: 'C204' });
    const keys = await t.deps.database.db
      .selectFrom('billing_keys')
      .select('destroyed_at')
      .where('subscription_id', '=', 'unverified')
      .execute();
    expect(keys).toHaveLength(1);
    expect(keys[0]?.destroyed_at).not.toBeNull();
  });

  it('refuses a malformed extra', async () => {
    expect((await issue({ extra: 'x' })).body.error_code).toBe('INVALID_REQUEST');
    expect((await issue({ extra: { subscribe_test_payment: 'yes' } })).body.error_code).toBe('INVALID_REQUEST');
  });

  it('accepts a legacy Bearer access token', async () => {
    const token = await t.app.inject({
      method: 'POST',
      url: '/v2/request/token',
      payload: { application_id: project.applicationId, private_key: project.privateKey },
    });
    expect(token.statusCode).toBe(200);
    const accessToken = (token.json() as { access_token: string }).access_token;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/request/subscribe',
      headers: { authorization: `Bearer ${accessToken}` },
      payload: CARD,
    });
    expect(res.statusCode).toBe(200);
    expect((res.json() as { status: number }).status).toBe(11);
  });

  it('checks the key-in scopes of the key', async () => {
    const receiptsOnly = await t.createProject({ name: 'receipts only', scopes: ['receipt'] });
    expect((await issue({}, receiptsOnly)).body).toMatchObject({ error_code: 'API_SCOPE_INVALID', code: 1222 });
    const key = await issuedKey();
    const charged = await post(
      '/v2/subscribe/payment',
      { billing_key: key, order_name: 'x', order_id: 'scoped-1', price: 100 },
      receiptsOnly,
    );
    expect(charged.body).toMatchObject({ error_code: 'API_SCOPE_INVALID', code: 1222 });
    const billingOnly = await t.createProject({ name: 'billing only', scopes: ['billing_key'] });
    expect((await issue({}, billingOnly)).status).toBe(200);
    const noScopes = await t.createProject({ name: 'no scopes', scopes: [] });
    expect((await issue({}, noScopes)).body).toMatchObject({ error_code: 'API_ROLE_NOT_SUPPORT', code: 1221 });
  });

  it('requires authentication', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/request/subscribe', payload: CARD });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error_code: 'APP_AT_AUTHORIZE_HEADER_BLANK', code: 1206 });
  });
});

describe('billing key lookup and destroy', () => {
  it('looks a key up by its issuance receipt and by the key itself', async () => {
    const issued = await issue({ subscription_id: 'sub-lookup' });
    const byReceipt = await get(`/v2/subscribe/billing_key/${issued.body.receipt_id as string}`);
    expect(byReceipt.status).toBe(200);
    expect(byReceipt.body).toEqual(issued.body);
    const byKey = await get(`/v2/billing_key/${issued.body.billing_key as string}`);
    expect(byKey.body).toEqual(issued.body);
  });

  it("answers 2309 for unknown keys and 1225 for another project's key", async () => {
    expect((await get('/v2/billing_key/000000000000000000000000')).body).toMatchObject({
      error_code: 'SUBSCRIBE_BK_NOT_FOUND',
      code: 2309,
    });
    expect((await get('/v2/subscribe/billing_key/000000000000000000000000')).body).toMatchObject({ code: 2309 });
    const key = await issuedKey();
    expect((await get(`/v2/billing_key/${key}`, other)).body).toMatchObject({ error_code: 'APP_KEY_CHAIN_SESSION_INVALID' });
    const res = await post(
      '/v2/subscribe/payment',
      { billing_key: key, order_name: 'x', order_id: 'steal-1', price: 100 },
      other,
    );
    expect(res.body).toMatchObject({ error_code: 'APP_KEY_CHAIN_SESSION_INVALID' });
  });

  it('destroys a key; charging or looking it up afterwards fails', async () => {
    const key = await issuedKey();
    expect((await charge(key)).status).toBe(200);
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/v2/subscribe/billing_key/${key}`,
      headers: { authorization: project.basicAuth },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ billing_key: key });
    const after = await charge(key);
    expect(after.status).toBe(400);
    expect(after.body).toMatchObject({ error_code: 'BILLING_KEY_DESTROYED', code: 9423 });
    expect((await get(`/v2/billing_key/${key}`)).body).toMatchObject({ error_code: 'BILLING_KEY_DESTROYED' });
    const again = await t.app.inject({
      method: 'DELETE',
      url: `/v2/subscribe/billing_key/${key}`,
      headers: { authorization: project.basicAuth },
    });
    expect(again.json()).toMatchObject({ error_code: 'BILLING_KEY_DESTROYED' });
  });
});

describe('POST /v2/subscribe/payment', () => {
  it('charges a billing key and returns the payment receipt', async () => {
    const key = await issuedKey();
    const res = await charge(key, {
      order_id: 'pay-1',
      price: 15_000,
      tax_free: 1_000,
      card_quota: '3',
      metadata: { plan: 'pro' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      order_id: 'pay-1',
      order_name: 'June',
      price: 15_000,
      tax_free: 1_000,
      cancelled_price: 0,
      cancelled_tax_free: 0,
      status: 1,
      status_locale: '결제완료',
      pg: 'sandbox_card',
      method: KEY_IN,
      method_symbol: 'card_rebill_rest',
      sandbox: true,
      currency: 'KRW',
      metadata: { plan: 'pro' },
    });
    expect(res.body.purchased_at).toMatch(ISO_WITH_OFFSET);
    expect(res.body.requested_at).toMatch(ISO_WITH_OFFSET);
    expect(res.body).not.toHaveProperty('cancelled_at');
    const cardData = res.body.card_data as Record<string, string>;
    expect(cardData).toMatchObject({ card_no: '411111******1111', card_quota: '03' });
    expect(cardData.card_approve_no).toEqual(expect.any(String));
    const lookup = await get(`/v2/receipt/${res.body.receipt_id as string}`);
    expect(lookup.body).toEqual(res.body);
  });

  it('charges the same key repeatedly (recurring)', async () => {
    const key = await issuedKey();
    const first = await charge(key);
    const second = await charge(key);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.body.receipt_id).not.toBe(second.body.receipt_id);
  });

  it('keeps order_id unique per project, not across projects', async () => {
    const key = await issuedKey();
    expect((await charge(key, { order_id: 'dup-1' })).status).toBe(200);
    const dup = await charge(key, { order_id: 'dup-1', price: 2000 });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ error_code: 'ORDER_ID_DUPLICATED', code: 9410 });
    const otherIssued = await issue({}, other);
    const otherCharge = await post(
      '/v2/subscribe/payment',
      { billing_key: otherIssued.body.billing_key, order_name: 'x', order_id: 'dup-1', price: 500 },
      other,
    );
    expect(otherCharge.status).toBe(200);
  });

  it('lets one of concurrent different charges with one order_id through', async () => {
    const key = await issuedKey();
    const results = await Promise.all(
      [700, 701, 702].map((price) =>
        post('/v2/subscribe/payment', { billing_key: key, order_name: 'x', order_id: 'race-1', price }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.body.error_code === 'ORDER_ID_DUPLICATED')).toHaveLength(2);
  });

  it('charges concurrent identical requests once and answers each with the one receipt', async () => {
    const key = await issuedKey();
    const body = { billing_key: key, order_name: 'x', order_id: 'race-2', price: 800 };
    const results = await Promise.all([1, 2, 3].map(() => post('/v2/subscribe/payment', body)));
    for (const r of results) {
      // a request that finds the charge still pending re-drives it; one that finds it complete is a duplicate
      expect([200, 409]).toContain(r.status);
    }
    const receiptIds = new Set(results.filter((r) => r.status === 200).map((r) => r.body.receipt_id));
    expect(receiptIds.size).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, 'race-2'))).toBe(1);
  });

  it('passes a PG decline on with pg_error_code and records nothing', async () => {
    const key = await issuedKey({ card_no: '4000000000009995' });
    const res = await charge(key, { order_id: 'declined-1' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'PAYMENT_DECLINED', code: 9430, pg_error_code: 'C204' });
    const rows = await t.deps.database.db
      .selectFrom('receipts')
      .select('receipt_id')
      .where('order_id', '=', 'declined-1')
      .execute();
    expect(rows).toHaveLength(0);
  });

  it('keeps the receipt pending after a PG timeout; the retry completes it without charging twice', async () => {
    const sandbox = await startSandboxGateways({ host: '127.0.0.1', port: 0, token: TEST_SANDBOX_TOKEN });
    const registry = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: 500 });
    const slow = await buildTestApp({ gateways: registry });
    try {
      const p = await slow.createProject();
      const c = keyInClient(slow, p);
      const key = await c.issuedKey();
      await armSandboxFault(sandbox.url, 'charge', 'timeout');
      const body = { billing_key: key, order_name: 'x', order_id: 'timeout-1', price: 990 };
      const first = await c.post('/v2/subscribe/payment', body);
      expect(first.status).toBe(502);
      expect(first.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE', code: 9502 });
      const pending = await slow.deps.database.db
        .selectFrom('receipts')
        .selectAll()
        .where('order_id', '=', 'timeout-1')
        .executeTakeFirstOrThrow();
      expect((await c.get(`/v2/receipt/${pending.receipt_id}`)).body).toMatchObject({ status: 0, status_locale: '결제대기' });
      // a different charge cannot take the pending order_id
      expect((await c.post('/v2/subscribe/payment', { ...body, price: 991 })).body.error_code).toBe('ORDER_ID_DUPLICATED');

      const retry = await c.post('/v2/subscribe/payment', body);
      expect(retry.status).toBe(200);
      expect(retry.body).toMatchObject({ receipt_id: pending.receipt_id, status: 1 });
      expect(await sandboxChargeExecutions(sandbox.url, chargeIdempotencyKey(p.applicationId, 'timeout-1'))).toBe(1);
      expect((await c.post('/v2/subscribe/payment', body)).body.error_code).toBe('ORDER_ID_DUPLICATED');
    } finally {
      await slow.close();
      await registry.close();
      await sandbox.close();
    }
  });

  it.each([
    [{ billing_key: '' }, 'SUBSCRIBE_BK_NOT_FOUND'],
    [{ billing_key: 'nope' }, 'SUBSCRIBE_BK_NOT_FOUND'],
    [{ order_name: '' }, 'RC_NAME_BLANK'],
    [{ order_id: '' }, 'RC_O_ID_BLANK'],
    [{ price: 0 }, 'INVALID_REQUEST'],
    [{ price: -5 }, 'INVALID_REQUEST'],
    [{ price: '1000' }, 'INVALID_REQUEST'],
    [{ tax_free: 5000 }, 'INVALID_REQUEST'],
    [{ card_quota: 'x' }, 'INVALID_REQUEST'],
  ])('refuses %j with %s', async (overrides, errorCode) => {
    const key = await issuedKey();
    const res = await charge(key, overrides);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.error_code).toBe(errorCode);
  });
});

describe('the gateway billing key at rest', () => {
  it('is stored sealed and bound to its row, yet charges and destroys work through it', async () => {
    const billingKey = await issuedKey();
    const row = await t.deps.database.db
      .selectFrom('billing_keys')
      .select(['billing_key', 'gateway_billing_key'])
      .where('billing_key', '=', billingKey)
      .executeTakeFirstOrThrow();
    expect(row.gateway_billing_key).toMatch(/^v1\.[A-Za-z0-9._-]+\.[A-Za-z0-9+/=]+$/);

    const charged = await charge(billingKey);
    expect(charged.status).toBe(200);

    // A sealed value copied onto another row cannot be opened: the charge fails instead of using it.
    const other = await issuedKey();
    await t.deps.database.db
      .updateTable('billing_keys')
      .set({ gateway_billing_key: row.gateway_billing_key })
      .where('billing_key', '=', other)
      .execute();
    const moved = await charge(other);
    expect(moved.status).toBe(500);
    expect(moved.body.error_code).toBe('INTERNAL_ERROR');

    const destroyed = await as(project).send('DELETE', `/v2/subscribe/billing_key/${billingKey}`);
    expect(destroyed.status).toBe(200);
  });
});

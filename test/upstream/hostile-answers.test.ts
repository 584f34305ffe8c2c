// A provider on its worst day, in front of a real one (B): what B did is real, only what A hears is changed
// (./hostile-provider.ts).
// - It trickles its answer (issue 36, item 1): A cuts the call at the charge's deadline, answers the merchant at once
//   with a JSON catalog error that says how to learn the outcome, and its reconcile workflow settles the charge under
//   the same key: charged once at B, the receipt at A as B made it, and the merchant's retry under the same
//   Idempotency-Key gets the receipt (not 9409).
// - Its answer is not what was asked (item 2): A records what the provider says happened, never the request's values
//   as if they were the answer, marks the receipt for attention, and answers 9480 naming the provider's receipt_id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONNECTION_IDLE_TIMEOUT_MS } from '../../src/api/app.js';
import { MAX_UPSTREAM_DEADLINE_MS, parseConfig } from '../../src/platform/config/index.js';
import { pgChargeKey } from '../../src/payments/charges.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { eventually } from '../webhooks/fixtures.js';
import { dashboardSignIn, routeToProvider } from './fixtures.js';
import { type HostileProvider, startHostileProvider } from './hostile-provider.js';

const CHARGE_DEADLINE_MS = 1_500;

let a: TestApp;
let b: TestApp;
let atA: TestProject;
let atB: TestProject;
let aUrl: string;
let provider: HostileProvider;

beforeAll(async () => {
  b = await buildTestApp();
  const bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
  atB = await b.createProject();
  provider = await startHostileProvider(bUrl);
  a = await buildTestApp({
    withTemporal: true,
    env: { UPSTREAM_DEADLINES_MS: `charge=${CHARGE_DEADLINE_MS},cancel=${CHARGE_DEADLINE_MS}` },
  });
  aUrl = await a.app.listen({ host: '127.0.0.1', port: 0 });
  atA = await a.createProject();
  await routeToProvider(a, atA, { baseUrl: provider.url, project: atB }, ['sandbox_card']);
}, 120_000);
afterAll(async () => {
  await a?.close();
  await provider?.close();
  await b?.close();
});

/** The merchant's request over a real socket (what a connection timeout would cut), its body parsed as JSON. */
async function merchantPost(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${aUrl}${path}`, {
    method: 'POST',
    headers: { authorization: atA.basicAuth, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body: JSON.parse(text) as Record<string, unknown>,
  };
}

describe('a provider that trickles its answer', () => {
  it('cuts the charge at its deadline, answers JSON saying how to learn the outcome, and settles it once', async () => {
    const key = await keyInClient(a, atA).issuedKey({ subscription_id: 'sub-trickle' });
    // B's whole answer would take minutes at this pace: only a deadline on the whole call ends it
    provider.arm('POST', '/v2/subscribe/payment', { kind: 'trickle', byteEveryMs: 400 });
    const body = { billing_key: key, order_name: 'June', order_id: 'trickle-1', price: 4_400 };
    const first = await merchantPost('/v2/subscribe/payment', body, { 'idempotency-key': 'trickle-key-1' });

    expect(first.contentType).toContain('application/json');
    expect(first.status).toBe(504);
    expect(first.body).toMatchObject({ error_code: 'GATEWAY_TIMEOUT', code: 9504 });
    expect(first.body.message).toMatch(/same order_id/);
    // and the receipt to poll: pending under paygate's own id until the reconcile settles it
    const pendingId = first.body.receipt_id as string;
    expect(pendingId).toEqual(expect.any(String));
    // A hung up on the trickle: its answer came from the deadline, not from B's last byte
    await eventually(async () => (provider.cutTrickles === 1 ? true : undefined), 'the trickle cut by A');
    expect(provider.finishedTrickles).toBe(0);

    const receiptOf = () =>
      a.deps.database.db
        .selectFrom('receipts')
        .selectAll()
        .where('application_id', '=', atA.applicationId)
        .where('order_id', '=', 'trickle-1')
        .executeTakeFirst();
    const settled = await eventually(async () => {
      const row = await receiptOf();
      return row?.status === 1 ? row : undefined;
    }, 'the charge settled by its reconcile workflow');
    expect(await sandboxChargeExecutions(b.sandboxUrl, pgChargeKey(atB.applicationId, 'trickle-1', 0))).toBe(1);
    const providerId = settled.provider_receipt_id as string;
    const atBReceipt = await keyInClient(b, atB).get(`/v2/receipt/${providerId}`);
    expect(atBReceipt.body).toMatchObject({ order_id: 'trickle-1', price: 4_400, status: 1 });
    // the id the 504 named finds the settled receipt, under the provider's id
    expect((await keyInClient(a, atA).get(`/v2/receipt/${pendingId}`)).body).toMatchObject({
      receipt_id: providerId,
      status: 1,
    });

    // the merchant's retry under the same Idempotency-Key: the settled receipt, not "in progress", not charged again
    const retried = await merchantPost('/v2/subscribe/payment', body, { 'idempotency-key': 'trickle-key-1' });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ receipt_id: providerId, order_id: 'trickle-1', status: 1 });
    expect(await sandboxChargeExecutions(b.sandboxUrl, pgChargeKey(atB.applicationId, 'trickle-1', 0))).toBe(1);
  }, 90_000);

  it('cuts a cancel at its deadline too, and the cancel is applied once', async () => {
    const client = keyInClient(a, atA);
    const key = await client.issuedKey({ subscription_id: 'sub-trickle-cancel' });
    const paid = await client.post('/v2/subscribe/payment', {
      billing_key: key,
      order_name: 'July',
      order_id: 'trickle-2',
      price: 6_000,
    });
    expect(paid.status).toBe(200);
    const receiptId = paid.body.receipt_id as string;
    provider.arm('POST', '/v2/cancel', { kind: 'trickle', byteEveryMs: 400 });
    const cut = await merchantPost('/v2/cancel', { receipt_id: receiptId, cancel_price: 1_000, cancel_id: 'tc-1' });
    expect(cut.contentType).toContain('application/json');
    expect(cut.status).toBe(504);
    expect(cut.body).toMatchObject({ error_code: 'GATEWAY_TIMEOUT', code: 9504 });
    await eventually(async () => {
      const seen = await client.get(`/v2/receipt/${receiptId}`);
      return seen.body.cancelled_price === 1_000 ? true : undefined;
    }, 'the cancel settled');
    const again = await merchantPost('/v2/cancel', { receipt_id: receiptId, cancel_price: 1_000, cancel_id: 'tc-1' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ cancelled_price: 1_000 });
    expect((await keyInClient(b, atB).get(`/v2/receipt/${receiptId}`)).body).toMatchObject({ cancelled_price: 1_000 });
  }, 90_000);
});

describe('the deadlines and the server timeouts', () => {
  it('refuses a deadline the API could not wait for, and an unknown operation', () => {
    expect(() => parseConfig({ UPSTREAM_DEADLINE_MS: String(MAX_UPSTREAM_DEADLINE_MS + 1) })).toThrow(/UPSTREAM_DEADLINE_MS/);
    expect(() => parseConfig({ UPSTREAM_DEADLINES_MS: 'charg=5000' })).toThrow(/UPSTREAM_DEADLINES_MS/);
    expect(parseConfig({ UPSTREAM_DEADLINES_MS: 'charge=20000, lookup=5000' }).upstreamDeadlines).toEqual({
      defaultMs: 15_000,
      byOperation: { charge: 20_000, lookup: 5_000 },
    });
  });

  it('keeps two provider calls in a row under the socket idle timeout', () => {
    expect(2 * MAX_UPSTREAM_DEADLINE_MS).toBeLessThan(CONNECTION_IDLE_TIMEOUT_MS);
  });
});

describe('a provider whose answer is not what was asked', () => {
  it('records what the provider says it charged, marks the receipt, and answers 9480 with its receipt_id every time', async () => {
    const client = keyInClient(a, atA);
    const key = await client.issuedKey({ subscription_id: 'sub-mismatch' });
    // B charges 1,000 won for mismatch-1; A hears 999,999,999 for someone else's order
    provider.arm('POST', '/v2/subscribe/payment', {
      kind: 'rewrite',
      rewrite: (receipt) => ({ ...receipt, price: 999_999_999, order_id: 'someone-elses' }),
    });
    const body = { billing_key: key, order_name: 'June', order_id: 'mismatch-1', price: 1_000 };
    const first = await merchantPost('/v2/subscribe/payment', body, { 'idempotency-key': 'mismatch-key-1' });
    expect(first.status).toBe(502);
    expect(first.body).toMatchObject({ error_code: 'UPSTREAM_ANSWER_MISMATCH', code: 9480 });
    expect(first.body.message).toContain('price: asked 1000, answered 999999999');
    expect(first.body.message).toContain('order_id: asked mismatch-1, answered someone-elses');
    const receiptId = first.body.receipt_id as string;
    expect(receiptId).toEqual(expect.any(String));

    // the receipt is the provider's, with the provider's amount: the money that moved is never hidden
    const atBReceipt = await keyInClient(b, atB).get(`/v2/receipt/${receiptId}`);
    expect(atBReceipt.body).toMatchObject({ order_id: 'mismatch-1', price: 1_000, status: 1 });
    const seen = await client.get(`/v2/receipt/${receiptId}`);
    expect(seen.body).toMatchObject({ receipt_id: receiptId, order_id: 'mismatch-1', price: 999_999_999, status: 1 });
    const row = await a.deps.database.db
      .selectFrom('receipts')
      .selectAll()
      .where('application_id', '=', atA.applicationId)
      .where('order_id', '=', 'mismatch-1')
      .executeTakeFirstOrThrow();
    expect(row.attention).toMatchObject({
      kind: 'answer_mismatch',
      operation: 'charge',
      fields: { price: { asked: 1_000, answered: 999_999_999 }, order_id: { asked: 'mismatch-1', answered: 'someone-elses' } },
    });
    expect(a.logs()).toContain("the upstream provider's answer does not match the charge asked for");
    const metrics = await a.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    expect(metrics.body).toMatch(/paygate_charges_total\{[^}]*outcome="answer_mismatch"[^}]*\} 1/);

    // the dashboard says what disagreed, on the receipt's page and in the list
    const dashboard = await dashboardSignIn(a, { client_key: atA.clientKey, secret_key: atA.secretKey });
    const page = await a.app.inject({ url: `/dashboard/receipts/${receiptId}`, headers: { cookie: dashboard } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Needs attention');
    expect(page.body).toMatch(/<code>price<\/code><\/td><td>1000<\/td><td>999999999<\/td>/);
    const list = await a.app.inject({ url: '/dashboard/receipts?q=mismatch-1', headers: { cookie: dashboard } });
    expect(list.body).toContain('badge attention');

    // asked again (same key, or the same order without one): the same 9480, never a plain receipt, nothing charged again
    for (const headers of [{ 'idempotency-key': 'mismatch-key-1' }, {}] as Record<string, string>[]) {
      const again = await merchantPost('/v2/subscribe/payment', body, headers);
      expect(again.status).toBe(502);
      expect(again.body).toMatchObject({ error_code: 'UPSTREAM_ANSWER_MISMATCH', receipt_id: receiptId });
    }
    expect(await sandboxChargeExecutions(b.sandboxUrl, pgChargeKey(atB.applicationId, 'mismatch-1', 0))).toBe(1);

    // the merchant can look and cancel it at the provider
    const cancelled = await client.cancel({ receipt_id: receiptId, cancel_price: 1_000, cancel_id: 'mismatch-cancel' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect((await keyInClient(b, atB).get(`/v2/receipt/${receiptId}`)).body).toMatchObject({ cancelled_price: 1_000 });
  }, 90_000);

  it('a well-made answer is recorded as it is, with nothing to attend to', async () => {
    const client = keyInClient(a, atA);
    const key = await client.issuedKey({ subscription_id: 'sub-honest' });
    const paid = await client.post('/v2/subscribe/payment', {
      billing_key: key,
      order_name: 'June',
      order_id: 'honest-1',
      price: 2_000,
      tax_free: 500,
    });
    expect(paid.status).toBe(200);
    const row = await a.deps.database.db
      .selectFrom('receipts')
      .selectAll()
      .where('application_id', '=', atA.applicationId)
      .where('order_id', '=', 'honest-1')
      .executeTakeFirstOrThrow();
    expect(row.attention).toBeNull();
    expect(row).toMatchObject({ price: 2_000, tax_free: 500 });
  });
});

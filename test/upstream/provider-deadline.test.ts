// A provider that trickles its answer (issue 36, item 1): B charges, and its answer reaches A one byte at a time. A
// cuts the call at the charge's deadline, answers the merchant at once with a JSON catalog error that says how to
// learn the outcome, and its reconcile workflow settles the charge under the same key: charged once at B, the
// receipt at A as B made it, and the merchant's retry under the same Idempotency-Key gets the receipt (not 9409).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONNECTION_IDLE_TIMEOUT_MS } from '../../src/api/app.js';
import { MAX_UPSTREAM_DEADLINE_MS, parseConfig } from '../../src/platform/config/index.js';
import { pgChargeKey } from '../../src/payments/charges.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { eventually } from '../webhooks/fixtures.js';
import { routeToProvider } from './fixtures.js';
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
    const atBReceipt = await keyInClient(b, atB).get(`/v2/receipt/${settled.receipt_id}`);
    expect(atBReceipt.body).toMatchObject({ order_id: 'trickle-1', price: 4_400, status: 1 });

    // the merchant's retry under the same Idempotency-Key: the settled receipt, not "in progress", not charged again
    const retried = await merchantPost('/v2/subscribe/payment', body, { 'idempotency-key': 'trickle-key-1' });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ receipt_id: settled.receipt_id, order_id: 'trickle-1', status: 1 });
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

// The ids a provider assigns are unique at that provider for one account, not across the projects of this
// installation (issue 36, item 3). A hostile provider of the test's own (node:http on loopback, just enough of the
// provider API) gives every project the same billing_key and receipt_ids: two projects of A routed to it each get
// their own records under those ids, each merchant sees and changes only its own, and nothing is left pending. A
// provider that repeats a receipt_id within one project: the second charge is recorded under paygate's own id and
// marked for attention (9480), the first record untouched.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient } from '../payments/key-in-fixtures.js';
import { routeToProvider } from './fixtures.js';

// the provider's ids, shaped like paygate's own (a provider in front of which paygate runs may well be paygate)
const SAME_BILLING_KEY = '5a5a5a5a5a5a5a5a5a5a5a01';
const SAME_ISSUANCE_RECEIPT = '5a5a5a5a5a5a5a5a5a5a5a02';
const SAME_CHARGE_RECEIPT = '5a5a5a5a5a5a5a5a5a5a5a03';

const card = { card_no: '411111******1111', card_company: 'Test', card_company_code: '01', card_type: 'credit' };

/** A provider that answers every project with the same ids (it stands for two accounts at two providers). */
function startRepeatingProvider(): Promise<{ server: Server; url: string; cancels: string[] }> {
  const cancels: string[] = [];
  const readBody = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  };
  const receipt = (extra: Record<string, unknown> = {}) => ({
    receipt_id: SAME_CHARGE_RECEIPT,
    order_id: 'whatever-the-provider-says',
    order_name: 'June',
    price: 1000,
    tax_free: 0,
    status: 1,
    pg: 'sandbox_card',
    purchased_at: '2025-01-01T00:00:00+09:00',
    card_data: { ...card, card_quota: '00', card_approve_no: '12345678' },
    ...extra,
  });
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      const path = req.url ?? '';
      if (req.method === 'POST' && path === '/v2/request/subscribe') {
        return answer(200, {
          billing_key: SAME_BILLING_KEY,
          receipt_id: SAME_ISSUANCE_RECEIPT,
          billing_data: card,
          billing_expire_at: '2030-12-31T00:00:00+09:00',
          published_at: '2025-01-01T00:00:00+09:00',
          status: 11,
        });
      }
      if (req.method === 'POST' && path === '/v2/subscribe/payment') return answer(200, receipt({ order_id: body.order_id }));
      if (req.method === 'GET' && path.startsWith('/v2/receipt/')) return answer(200, receipt());
      if (req.method === 'POST' && path === '/v2/cancel') {
        cancels.push(String(body.receipt_id));
        return answer(200, receipt({ status: 20, cancelled_price: 1000, cancelled_at: '2025-01-02T00:00:00+09:00' }));
      }
      if (req.method === 'DELETE' && path.startsWith('/v2/subscribe/billing_key/')) {
        return answer(200, { billing_key: SAME_BILLING_KEY });
      }
      answer(404, { error_code: 'RC_NOT_FOUND', message: 'not found', code: 2000 });
    })().catch(() => res.destroy());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, cancels }),
    ),
  );
}

let a: TestApp;
let provider: Awaited<ReturnType<typeof startRepeatingProvider>>;
let first: TestProject;
let second: TestProject;
// the provider's "project": only its keys' shape matters to it
let atProvider: TestProject;

beforeAll(async () => {
  provider = await startRepeatingProvider();
  a = await buildTestApp({ withTemporal: true });
  first = await a.createProject();
  second = await a.createProject();
  atProvider = await a.createProject();
  await routeToProvider(a, first, { baseUrl: provider.url, project: atProvider }, ['sandbox_card']);
  await routeToProvider(a, second, { baseUrl: provider.url, project: atProvider }, ['sandbox_card']);
}, 120_000);
afterAll(async () => {
  await a?.close();
  await new Promise((resolve) => provider?.server.close(resolve));
});

const pendingOf = async (applicationId: string) =>
  a.deps.database.db
    .selectFrom('receipts')
    .select('receipt_id')
    .where('application_id', '=', applicationId)
    .where('status', '=', 0)
    .execute();

describe('two projects given the same ids by their providers', () => {
  it('issues both billing keys, each merchant seeing the provider’s ids and only its own key', async () => {
    const one = keyInClient(a, first);
    const two = keyInClient(a, second);
    const issuedOne = await one.issue({ subscription_id: 'sub-first' });
    const issuedTwo = await two.issue({ subscription_id: 'sub-second' });
    expect(issuedOne.status, JSON.stringify(issuedOne.body)).toBe(200);
    expect(issuedTwo.status, JSON.stringify(issuedTwo.body)).toBe(200);
    for (const issued of [issuedOne, issuedTwo]) {
      expect(issued.body).toMatchObject({ billing_key: SAME_BILLING_KEY, receipt_id: SAME_ISSUANCE_RECEIPT });
    }
    expect((await one.get(`/v2/billing_key/${SAME_BILLING_KEY}`)).body).toMatchObject({ subscription_id: 'sub-first' });
    expect((await two.get(`/v2/billing_key/${SAME_BILLING_KEY}`)).body).toMatchObject({ subscription_id: 'sub-second' });
    const byReceipt = await two.get(`/v2/subscribe/billing_key/${SAME_ISSUANCE_RECEIPT}`);
    expect(byReceipt.status).toBe(200);
    expect(byReceipt.body).toMatchObject({ billing_key: SAME_BILLING_KEY, subscription_id: 'sub-second' });
  });

  it('records both charges under the same provider receipt_id; each merchant gets its own; nothing pending', async () => {
    const one = keyInClient(a, first);
    const two = keyInClient(a, second);
    const paidOne = await one.charge(SAME_BILLING_KEY, { order_id: 'scoped-1', order_name: 'first’s order' });
    const paidTwo = await two.charge(SAME_BILLING_KEY, { order_id: 'scoped-2', order_name: 'second’s order' });
    expect(paidOne.status, JSON.stringify(paidOne.body)).toBe(200);
    expect(paidTwo.status, JSON.stringify(paidTwo.body)).toBe(200);
    expect(paidOne.body).toMatchObject({ receipt_id: SAME_CHARGE_RECEIPT, order_id: 'scoped-1', status: 1 });
    expect(paidTwo.body).toMatchObject({ receipt_id: SAME_CHARGE_RECEIPT, order_id: 'scoped-2', status: 1 });
    expect((await one.get(`/v2/receipt/${SAME_CHARGE_RECEIPT}`)).body).toMatchObject({ order_id: 'scoped-1' });
    expect((await two.get(`/v2/receipt/${SAME_CHARGE_RECEIPT}`)).body).toMatchObject({ order_id: 'scoped-2' });
    // both recorded at once: no receipt left pending for a reconcile
    expect(await pendingOf(first.applicationId)).toEqual([]);
    expect(await pendingOf(second.applicationId)).toEqual([]);
  });

  it('a cancel by one merchant refunds its own receipt only, at the provider under the provider’s id', async () => {
    const one = keyInClient(a, first);
    const two = keyInClient(a, second);
    const cancelled = await one.cancel({ receipt_id: SAME_CHARGE_RECEIPT, cancel_id: 'scoped-cancel' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body).toMatchObject({ receipt_id: SAME_CHARGE_RECEIPT, order_id: 'scoped-1', status: 20 });
    expect(provider.cancels).toEqual([SAME_CHARGE_RECEIPT]);
    expect((await two.get(`/v2/receipt/${SAME_CHARGE_RECEIPT}`)).body).toMatchObject({
      order_id: 'scoped-2',
      status: 1,
      cancelled_price: 0,
    });
  });

  it('a project naming an id only another project has still gets 1225', async () => {
    const third = await a.createProject();
    const other = keyInClient(a, third);
    expect((await other.get(`/v2/receipt/${SAME_CHARGE_RECEIPT}`)).body).toMatchObject({ code: 1225 });
    expect((await other.get(`/v2/billing_key/${SAME_BILLING_KEY}`)).body).toMatchObject({ code: 1225 });
  });

  it('a destroy by one merchant destroys its own key only', async () => {
    const one = keyInClient(a, first);
    const two = keyInClient(a, second);
    const destroyed = await one.send('DELETE', `/v2/subscribe/billing_key/${SAME_BILLING_KEY}`);
    expect(destroyed.status, JSON.stringify(destroyed.body)).toBe(200);
    expect(destroyed.body).toMatchObject({ billing_key: SAME_BILLING_KEY });
    expect((await one.get(`/v2/billing_key/${SAME_BILLING_KEY}`)).body).toMatchObject({ code: 9423 });
    expect((await two.get(`/v2/billing_key/${SAME_BILLING_KEY}`)).status).toBe(200);
  });
});

describe('a provider that repeats a receipt_id within one project', () => {
  it('records the second charge under its own id, marked for attention (9480), and leaves the first receipt as it was', async () => {
    const own = await a.createProject();
    await routeToProvider(a, own, { baseUrl: provider.url, project: atProvider }, ['sandbox_card']);
    const merchant = keyInClient(a, own);
    const key = await merchant.issuedKey();
    const paid = await merchant.charge(key, { order_id: 'repeat-1', price: 1000 });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const before = await merchant.get(`/v2/receipt/${SAME_CHARGE_RECEIPT}`);

    const repeated = await merchant.charge(key, { order_id: 'repeat-2', price: 1000 });
    expect(repeated.status, JSON.stringify(repeated.body)).toBe(502);
    expect(repeated.body).toMatchObject({ code: 9480, error_code: 'UPSTREAM_ANSWER_MISMATCH' });
    expect(repeated.body.message).toContain(`receipt_id: asked a receipt_id of its own, answered ${SAME_CHARGE_RECEIPT}`);
    // the provider says it charged: recorded under paygate's own id, which the merchant can look up; nothing pending
    const ownId = repeated.body.receipt_id as string;
    expect(ownId).not.toBe(SAME_CHARGE_RECEIPT);
    expect((await merchant.get(`/v2/receipt/${ownId}`)).body).toMatchObject({
      receipt_id: ownId,
      order_id: 'repeat-2',
      status: 1,
    });
    expect(await pendingOf(own.applicationId)).toHaveLength(0);
    // the first receipt is untouched
    const after = await merchant.get(`/v2/receipt/${SAME_CHARGE_RECEIPT}`);
    expect(after.body).toEqual(before.body);
    expect(after.body).toMatchObject({ order_id: 'repeat-1', status: 1 });
    // the merchant's retry of the same order gets the same answer, and changes nothing either
    const retried = await merchant.charge(key, { order_id: 'repeat-2', price: 1000 });
    expect(retried.body).toMatchObject({ code: 9480, receipt_id: ownId });
    expect((await merchant.get(`/v2/receipt/${SAME_CHARGE_RECEIPT}`)).body).toEqual(before.body);
  });

  it('answers a second billing key with the same provider ids 9482 and keeps the first', async () => {
    const own = await a.createProject();
    await routeToProvider(a, own, { baseUrl: provider.url, project: atProvider }, ['sandbox_card']);
    const merchant = keyInClient(a, own);
    expect((await merchant.issue({ subscription_id: 'kept' })).status).toBe(200);
    const again = await merchant.issue({ subscription_id: 'refused' });
    expect(again.status).toBe(502);
    expect(again.body).toMatchObject({ code: 9482 });
    expect((await merchant.get(`/v2/billing_key/${SAME_BILLING_KEY}`)).body).toMatchObject({ subscription_id: 'kept' });
  });
});

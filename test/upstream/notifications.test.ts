// The provider's notifications at A (POST /upstream/v1/notifications/{application_id}), over real HTTP from B's
// answers: never trusted as sent. A asks B about the receipt with the project's keys and acts on B's answer: a lost
// charge is handed to its reconcile workflow and settled, a refund made at B shows at A, a duplicate changes
// nothing; a forged one (unknown receipt, another merchant's receipt, a changed status in the body) changes nothing.
// A is two apps on one database: `charging` has no engine (a lost answer stays pending, as when a process died
// before its reconcile started), `notified` runs the engine and worker and takes the notifications.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/platform/db/db.js';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { buildTestApp, openTestPGlite, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient } from '../payments/key-in-fixtures.js';
import { eventually } from '../webhooks/fixtures.js';
import { armProviderFault, routeToProvider } from './fixtures.js';

let b: TestApp;
let charging: TestApp;
let notified: TestApp;
let database: Database;
let atB: TestProject;
let otherAtB: TestProject;
let shop: TestProject;
let billingKey: string;

beforeAll(async () => {
  b = await buildTestApp();
  const bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
  atB = await b.createProject();
  otherAtB = await b.createProject({ name: 'another merchant at B' });
  database = await openTestPGlite();
  const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('test')));
  charging = await buildTestApp({ database, keyring });
  notified = await buildTestApp({ database, keyring, withTemporal: true });
  shop = await charging.createProject();
  await routeToProvider(charging, shop, { baseUrl: bUrl, project: atB }, ['sandbox_card']);
  billingKey = await keyInClient(charging, shop).issuedKey();
}, 120_000);
afterAll(async () => {
  await notified?.close();
  await charging?.close();
  await database?.close();
  await b?.close();
});

const notify = (applicationId: string, payload: unknown, contentType = 'application/json') =>
  notified.app.inject({
    method: 'POST',
    url: `/upstream/v1/notifications/${applicationId}`,
    headers: { 'content-type': contentType },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
const receiptAtA = (orderId: string) =>
  database.db
    .selectFrom('receipts')
    .selectAll()
    .where('application_id', '=', shop.applicationId)
    .where('order_id', '=', orderId)
    .executeTakeFirst();

describe('POST /upstream/v1/notifications/{application_id}', () => {
  let receiptId: string;

  it("settles a charge whose answer was lost: A asks B, hands the charge to its reconcile, which takes B's receipt", async () => {
    await armProviderFault(b, 'charge', 'lost_response');
    const lost = await keyInClient(charging, shop).post('/v2/subscribe/payment', {
      billing_key: billingKey,
      order_name: 'June',
      order_id: 'notified-1',
      price: 4_400,
    });
    expect(lost.status).toBe(502);
    expect((await receiptAtA('notified-1'))?.status).toBe(0);
    // B knows the payment (it charged; its own answer was lost too): B's receipt of that order
    const atBRow = await b.deps.database.db
      .selectFrom('receipts')
      .select('receipt_id')
      .where('application_id', '=', atB.applicationId)
      .where('order_id', '=', 'notified-1')
      .executeTakeFirstOrThrow();
    receiptId = atBRow.receipt_id;

    const res = await notify(shop.applicationId, { receipt_id: receiptId, status: 1, webhook_type: null });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ received: true, receipt_id: receiptId, outcome: 'reconciling' });
    const settled = await eventually(async () => {
      const row = await receiptAtA('notified-1');
      return row?.status === 1 ? row : undefined;
    }, 'the charge settled by its reconcile');
    // B's receipt_id is kept beside A's own id (the one the charge was pending under)
    expect(settled.provider_receipt_id).toBe(receiptId);
  }, 60_000);

  it('a duplicate changes nothing; a refund made at B shows at A (a form body too)', async () => {
    const again = await notify(shop.applicationId, { receipt_id: receiptId });
    expect(again.json()).toEqual({ received: true, receipt_id: receiptId, outcome: 'unchanged' });
    const refunded = await keyInClient(b, atB).cancel({ receipt_id: receiptId, cancel_price: 1_400, cancel_id: 'console' });
    expect(refunded.status).toBe(200);
    const form = await notify(shop.applicationId, `receipt_id=${receiptId}&status=1`, 'application/x-www-form-urlencoded');
    expect(form.json()).toEqual({ received: true, receipt_id: receiptId, outcome: 'refreshed' });
    expect((await receiptAtA('notified-1'))?.cancelled_price).toBe(1_400);
  });

  it('a forged one changes nothing: a changed status in the body, an unknown receipt, another merchant’s receipt', async () => {
    const before = await receiptAtA('notified-1');
    const claimed = await notify(shop.applicationId, { receipt_id: receiptId, status: 20, cancelled_price: 4_400 });
    expect(claimed.json()).toMatchObject({ outcome: 'unchanged' });
    expect(await receiptAtA('notified-1')).toEqual(before);

    const unknown = await notify(shop.applicationId, { receipt_id: '0123456789abcdef01234567' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error_code: 'RC_NOT_FOUND', code: 2000 });

    const otherKey = await keyInClient(b, otherAtB).issuedKey();
    const others = await keyInClient(b, otherAtB).post('/v2/subscribe/payment', {
      billing_key: otherKey,
      order_name: 'June',
      order_id: 'notified-1',
      price: 4_400,
    });
    expect(others.status).toBe(200);
    const foreign = await notify(shop.applicationId, { receipt_id: others.body.receipt_id });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toMatchObject({ code: 2000 });
    expect(await receiptAtA('notified-1')).toEqual(before);
  });

  it('answers 9477 for a project without a provider, 9400 without a receipt_id, 9400 for a malformed id', async () => {
    const local = await charging.createProject();
    expect((await notify(local.applicationId, { receipt_id: receiptId })).json()).toMatchObject({ code: 9477 });
    expect((await notify(shop.applicationId, { status: 1 })).json()).toMatchObject({ code: 9400 });
    expect((await notify('not-an-application', { receipt_id: receiptId })).json()).toMatchObject({ code: 9400 });
  });
});

// Merchant ids and amounts at the edge: control, invisible and full-width look-alike characters are refused in
// every id a merchant chooses (9400, the field named) and in the resource ids of paths and bodies (their
// not-found code); a price above the documented maximum is refused before any PG is asked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeIdempotencyKey, MAX_PRICE_WON } from '../../src/payments/billing-rules.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient, sandboxChargeExecutions } from './key-in-fixtures.js';
import { verificationBody } from '../verification/fixtures.js';

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

/** One of each kind: C0, DEL, C1, LRM/RLM, the embeddings and overrides, the isolates, BOM, line separator. */
const UNSAFE = [
  '\u0001',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u200e',
  '\u200f',
  '\u202a',
  '\u202e',
  '\u2066',
  '\u2069',
  '\ufeff',
  '\u2028',
  // look-alikes: a soft hyphen, a combining grapheme joiner, a Hangul filler, a full-width letter
  '\u00ad',
  '\u034f',
  '\u3164',
  '\uff2f',
];

const countReceipts = async () =>
  Number(
    (
      await t.deps.database.db
        .selectFrom('receipts')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

function expectRefused(res: { status: number; body: Record<string, unknown> }, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body).toMatchObject({
    error_code: 'INVALID_REQUEST',
    code: 9400,
    payload: { message: `${field} must not contain control, invisible formatting or full-width characters.` },
  });
}

describe('control, invisible and full-width characters in merchant ids', () => {
  it.each(UNSAFE.map((c) => [`U+${c.codePointAt(0)!.toString(16).padStart(4, '0')}`, c]))(
    'order_id with %s -> 9400 and nothing charged',
    async (_name, c) => {
      const before = await countReceipts();
      expectRefused(await client.charge(billingKey, { order_id: `order-${c}-gnp.exe` }), 'order_id');
      expect(await countReceipts()).toBe(before);
    },
  );

  it('subscription_id with U+202E -> 9400, no key issued', async () => {
    const before = await countReceipts();
    expectRefused(await client.issue({ subscription_id: 'sub-\u202egnp.exe' }), 'subscription_id');
    expect(await countReceipts()).toBe(before);
  });

  it('cancel_id with U+202E or a C1 control -> 9400, nothing refunded', async () => {
    const paid = await client.charge(billingKey, { price: 5_000 });
    expect(paid.status).toBe(200);
    const receiptId = paid.body.receipt_id as string;
    for (const c of ['\u202e', '\u0085', '\u2067']) {
      expectRefused(await client.cancel({ receipt_id: receiptId, cancel_id: `refund-${c}1` }), 'cancel_id');
    }
    expect((await client.get(`/v2/receipt/${receiptId}`)).body).toMatchObject({ cancelled_price: 0, status: 1 });
  });

  it('authentication_id with U+202E -> 9400 before any workflow or PG call', async () => {
    const res = await client.post('/v2/request/authentication', verificationBody({ authentication_id: 'auth-\u202e1' }));
    expectRefused(res, 'authentication_id');
  });

  it('receipt_id and billing_key with such characters name nothing: their not-found codes', async () => {
    const hidden = encodeURIComponent('\u202e000000000000000000000000');
    expect((await client.get(`/v2/receipt/${hidden}`)).body.error_code).toBe('RC_NOT_FOUND');
    expect((await client.get(`/v2/billing_key/${hidden}`)).body.error_code).toBe('SUBSCRIBE_BK_NOT_FOUND');
    expect((await client.get(`/v2/subscribe/billing_key/${hidden}`)).body.error_code).toBe('SUBSCRIBE_BK_NOT_FOUND');
    expect((await client.cancel({ receipt_id: `${billingKey.slice(0, 23)}\u202e` })).body.error_code).toBe('RC_NOT_FOUND');
    expect((await client.charge(`${billingKey}\u200f`)).body.error_code).toBe('SUBSCRIBE_BK_NOT_FOUND');
  });

  it('ordinary Unicode in ids (Hangul, emoji) is still accepted', async () => {
    const res = await client.charge(billingKey, { order_id: `주문-${project.applicationId}-💳` });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

describe('ids are keyed in Unicode NFC', () => {
  // 'café' composed (U+00E9) and decomposed (e + U+0301): one id, two spellings
  const nfc = (tag: string) => `caf\u00e9-${tag}-${project.applicationId}`;
  const nfd = (tag: string) => `cafe\u0301-${tag}-${project.applicationId}`;
  const receiptsOf = (orderId: string) =>
    t.deps.database.db
      .selectFrom('receipts')
      .select('order_id')
      .where('order_id', 'in', [orderId, orderId.normalize('NFD')])
      .execute();

  it('the NFD spelling of a charged order_id is the same order: 9410, no second charge', async () => {
    expect(nfc('a')).not.toBe(nfd('a'));
    const first = await client.charge(billingKey, { order_id: nfc('a'), price: 1_000 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await client.charge(billingKey, { order_id: nfd('a'), price: 1_000 });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error_code: 'ORDER_ID_DUPLICATED', code: 9410 });
    expect(await receiptsOf(nfc('a'))).toEqual([{ order_id: nfc('a') }]);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, nfc('a')))).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, nfd('a')))).toBe(0);
  });

  it('an order_id sent in NFD is stored and echoed in NFC', async () => {
    const res = await client.charge(billingKey, { order_id: nfd('b'), price: 1_000 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.order_id).toBe(nfc('b'));
    expect(await receiptsOf(nfc('b'))).toEqual([{ order_id: nfc('b') }]);
  });

  it('a cancel_id repeated in the other spelling is the same cancel: refunded once', async () => {
    const paid = await client.charge(billingKey, { price: 5_000 });
    const receiptId = paid.body.receipt_id as string;
    const first = await client.cancel({ receipt_id: receiptId, cancel_id: nfd('refund'), cancel_price: 1_000 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await client.cancel({ receipt_id: receiptId, cancel_id: nfc('refund'), cancel_price: 1_000 });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect((await client.get(`/v2/receipt/${receiptId}`)).body).toMatchObject({ cancelled_price: 1_000 });
  });
});

describe('the maximum price', () => {
  it(`accepts exactly ${MAX_PRICE_WON} won and refuses one won more, or 2^53-1, before any PG call`, async () => {
    expect(MAX_PRICE_WON).toBe(10_000_000_000);
    const before = await countReceipts();
    for (const price of [MAX_PRICE_WON + 1, Number.MAX_SAFE_INTEGER]) {
      const res = await client.charge(billingKey, { price });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error_code: 'INVALID_REQUEST', message: `price must be at most ${MAX_PRICE_WON} won.` });
    }
    expect(await countReceipts()).toBe(before);
    const max = await client.charge(billingKey, { price: MAX_PRICE_WON, tax_free: MAX_PRICE_WON });
    expect(max.status, JSON.stringify(max.body)).toBe(200);
    expect(max.body).toMatchObject({ price: MAX_PRICE_WON, tax_free: MAX_PRICE_WON, status: 1 });
  });
});

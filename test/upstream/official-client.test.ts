// The API family's official Node client (@bootpay/backend-js, unchanged), pointed once at the provider B and once at
// A in front of B with only its base URL (and its keys) changed: the same calls give the same answers, ids aside.
// Key-in billing (token, billing key issuance and lookups, a charge, the receipt, a partial cancel, an unknown
// receipt's error, the billing key's destruction), identity verification (request, a wrong OTP, a resend, the
// confirm, the certificate) and escrow (shipping start of a payment made at B, a second one refused).
import { Bootpay } from '@bootpay/backend-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { TEST_CARD } from '../payments/key-in-fixtures.js';
import { BUYER, MERCHANT } from '../escrow/fixtures.js';
import { freshPhone, verificationClient } from '../verification/fixtures.js';
import { routeToProvider } from './fixtures.js';

let a: TestApp;
let b: TestApp;
let aUrl: string;
let bUrl: string;
let atA: TestProject;
let atB: TestProject;

beforeAll(async () => {
  b = await buildTestApp({ withTemporal: true });
  bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
  atB = await b.createProject({ merchant: MERCHANT });
  a = await buildTestApp({ withTemporal: true });
  aUrl = await a.app.listen({ host: '127.0.0.1', port: 0 });
  atA = await a.createProject({ merchant: MERCHANT });
  await routeToProvider(a, atA, { baseUrl: bUrl, project: atB }, ['sandbox_card', 'sandbox_identity', 'sandbox_escrow_a']);
}, 180_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
});

type Outcome = { readonly ok: true; readonly body: Record<string, unknown> } | { readonly ok: false; readonly body: unknown };

/** One call of the client: its answer, or what it rejected with (the server's error body). */
async function outcome(call: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, body: (await call()) as Record<string, unknown> };
  } catch (err) {
    return { ok: false, body: err };
  }
}

/** The answer without what differs between two servers by nature: ids and times. */
function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(comparable);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, v]) => [
      key,
      /(_id|_key|_at|_url|^tid|^card_approve_no|^message)$/.test(key) ? typeof v : comparable(v),
    ]),
  );
}

/** The client's key-in billing calls against one server, as a merchant backend makes them. */
async function scenario(baseUrl: string, project: TestProject, orderPrefix: string, phone: string) {
  // only the base URL changes: the client's production entry point, which the merchant would not touch at all
  (Bootpay as unknown as { API_ENTRYPOINTS: Record<string, string> }).API_ENTRYPOINTS.production = `${baseUrl}/v2`;
  Bootpay.setConfiguration({ client_key: project.clientKey, secret_key: project.secretKey } as never);
  const steps: Record<string, Outcome> = {};
  steps.token = await outcome(() => Bootpay.getAccessToken());
  steps.issue = await outcome(() =>
    Bootpay.requestSubscribeBillingKey({
      pg: 'sandbox_card',
      method: TEST_CARD.method,
      order_name: 'Monthly plan',
      subscription_id: `${orderPrefix}-sub`,
      card_no: TEST_CARD.card_no,
      card_pw: TEST_CARD.card_pw,
      card_identity_no: TEST_CARD.card_identity_no,
      card_expire_year: TEST_CARD.card_expire_year,
      card_expire_month: TEST_CARD.card_expire_month,
      extra: {},
      user: {},
    } as never),
  );
  const billingKey = String(steps.issue.body && (steps.issue.body as Record<string, unknown>).billing_key);
  const issuanceReceipt = String(steps.issue.body && (steps.issue.body as Record<string, unknown>).receipt_id);
  steps.lookupKey = await outcome(() => Bootpay.lookupBillingKey(billingKey));
  steps.lookupByReceipt = await outcome(() => Bootpay.lookupSubscribeBillingKey(issuanceReceipt));
  steps.charge = await outcome(() =>
    Bootpay.requestSubscribePayment({ billing_key: billingKey, order_name: 'June', price: 10_000, order_id: `${orderPrefix}-1` }),
  );
  const receiptId = String((steps.charge.body as Record<string, unknown>).receipt_id);
  steps.receipt = await outcome(() => Bootpay.receiptPayment(receiptId));
  steps.cancel = await outcome(() =>
    Bootpay.cancelPayment({ receipt_id: receiptId, cancel_price: 3_000, cancel_id: 'partial-1' }),
  );
  steps.unknownReceipt = await outcome(() => Bootpay.receiptPayment('0123456789abcdef01234567'));
  steps.destroy = await outcome(() => Bootpay.destroyBillingKey(billingKey));
  steps.chargeDestroyed = await outcome(() =>
    Bootpay.requestSubscribePayment({ billing_key: billingKey, order_name: 'July', price: 10_000, order_id: `${orderPrefix}-2` }),
  );

  // identity verification: the SMS is B's either way (the project's inbox at B); one person, so one CI and DI
  steps.authenticate = await outcome(() =>
    Bootpay.requestAuthentication({
      pg: 'sandbox_identity',
      method: '본인인증',
      username: '홍길동',
      identity_no: '9001011',
      carrier: 'SKT',
      phone,
      site_url: 'https://shop.example',
      order_name: 'Sign-up',
      authentication_id: `${orderPrefix}-auth`,
    } as never),
  );
  const verificationId = String((steps.authenticate.body as Record<string, unknown>).receipt_id);
  const inbox = verificationClient(b, atB);
  const firstOtp = await inbox.latestOtp(phone);
  steps.wrongOtp = await outcome(() =>
    Bootpay.confirmAuthentication(verificationId, firstOtp === '000000' ? '111111' : '000000'),
  );
  steps.realarm = await outcome(() => Bootpay.realarmAuthentication(verificationId));
  const otp = await inbox.latestOtp(phone);
  steps.confirm = await outcome(() => Bootpay.confirmAuthentication(verificationId, otp));
  steps.certificate = await outcome(() => Bootpay.certificate(verificationId));

  // escrow: a payment made at B (the provider's payment window), shipped through the client
  const paid = await b.app.inject({
    method: 'POST',
    url: '/sandbox/v1/payments',
    headers: { authorization: atB.basicAuth },
    payload: {
      pg: 'sandbox_escrow_a',
      escrow: true,
      user: BUYER,
      price: 30_000,
      order_id: `${orderPrefix}-escrow`,
      order_name: 'Lamp',
    },
  });
  const escrowReceipt = String(paid.json().receipt_id);
  const shipment = {
    receipt_id: escrowReceipt,
    tracking_number: 'TRK-9',
    delivery_corp: 'CJ',
    user: { username: BUYER.username, phone: BUYER.phone },
  };
  steps.shippingStart = await outcome(() => Bootpay.shippingStart(shipment as never));
  steps.shippingAgain = await outcome(() => Bootpay.shippingStart(shipment as never));
  return steps;
}

describe('the official Node client', () => {
  it('gets from A in front of B what it gets from B', async () => {
    const phone = freshPhone();
    const direct = await scenario(bUrl, atB, 'direct', phone);
    const relayed = await scenario(aUrl, atA, 'relayed', phone);
    // the scenario itself worked against the provider
    expect(direct.issue).toMatchObject({ ok: true, body: { status: 11 } });
    expect(direct.charge).toMatchObject({ ok: true, body: { status: 1, price: 10_000 } });
    expect(direct.cancel).toMatchObject({ ok: true, body: { cancelled_price: 3_000 } });
    expect(direct.authenticate).toMatchObject({ ok: true, body: { status: 51 } });
    expect(direct.wrongOtp).toMatchObject({ ok: false, body: { error_code: 'AUTH_CONFIRM_FAILED' } });
    expect(direct.confirm).toMatchObject({ ok: true, body: { status: 12 } });
    expect(direct.certificate).toMatchObject({ ok: true, body: { status: 12 } });
    expect(direct.shippingStart).toMatchObject({ ok: true, body: { escrow_data: { status: 3 } } });
    expect(direct.shippingAgain).toMatchObject({ ok: false, body: { error_code: 'RC_ESCROW_NOT_READY' } });
    expect(direct.unknownReceipt).toMatchObject({ ok: false, body: { error_code: 'RC_NOT_FOUND' } });
    expect(direct.chargeDestroyed!.ok).toBe(false);
    expect(Object.keys(direct.receipt!.body as object).length).toBeGreaterThan(15);
    // the relay answered with the provider's ids, not ids of its own
    expect(relayed.charge!.body).toMatchObject({ receipt_id: expect.stringMatching(/^[0-9a-f]{24}$/) });
    for (const step of Object.keys(direct)) {
      expect({ step, ...(comparable(relayed[step]) as object) }).toEqual({ step, ...(comparable(direct[step]) as object) });
    }
  }, 120_000);
});

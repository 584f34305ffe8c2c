// paygate in front of a provider, identity verification: A (the relay) in front of B (another paygate in sandbox mode,
// the provider), each with its engine and worker, over real HTTP. The merchant requests, resends and confirms at A;
// the SMS is B's (read from B's sandbox inbox with the project's keys at B); the receipt_id is B's; A's workflow
// holds the windows and the caps; a wrong OTP is the provider's refusal (2405, HTTP 500), as the merchant would
// have it from B.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { freshPhone, PERSON_KEYS, verificationClient } from '../verification/fixtures.js';
import { routeToProvider } from './fixtures.js';
import { startHostileProvider } from './hostile-provider.js';

let a: TestApp;
let b: TestApp;
let atA: TestProject;
let bUrl: string;
let atB: TestProject;
let merchant: ReturnType<typeof verificationClient>;
let atBClient: ReturnType<typeof verificationClient>;

beforeAll(async () => {
  b = await buildTestApp({ withTemporal: true });
  bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
  atB = await b.createProject();
  a = await buildTestApp({ withTemporal: true });
  atA = await a.createProject();
  await routeToProvider(a, atA, { baseUrl: bUrl, project: atB }, ['sandbox_identity']);
  merchant = verificationClient(a, atA);
  atBClient = verificationClient(b, atB);
}, 180_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
});

describe('identity verification relayed to the provider', () => {
  it('sends at the provider under its receipt_id; a wrong OTP is refused there; a resend; the right OTP verifies', async () => {
    const phone = freshPhone();
    const requested = await merchant.request({ phone, authentication_id: 'auth-relay-1' });
    expect(requested.status, JSON.stringify(requested.body)).toBe(200);
    expect(requested.body).toMatchObject({ status: 51, pg: 'sandbox_identity', authentication_id: 'auth-relay-1' });
    const receiptId = requested.body.receipt_id as string;
    // the provider knows it under the same id: the project's inbox at B holds its SMS
    const first = await atBClient.latestOtp(phone);

    const wrongOtp = first === '000000' ? '111111' : '000000';
    const wrong = await merchant.confirm(receiptId, wrongOtp);
    const direct = await (async () => {
      const other = freshPhone();
      const { receiptId: atBId } = await atBClient.requested({ phone: other });
      return atBClient.confirm(atBId, wrongOtp);
    })();
    expect(direct.status).toBe(500);
    expect(wrong.status).toBe(direct.status);
    expect(wrong.body).toMatchObject({ error_code: direct.body.error_code, code: direct.body.code });
    expect(wrong.body.code).toBe(2405);

    const resent = await merchant.realarm(receiptId);
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(resent.body).toMatchObject({ receipt_id: receiptId, authenticate_data: { number_of_realarms: 1 } });
    const otp = await atBClient.latestOtp(phone);

    const confirmed = await merchant.confirm(receiptId, otp);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body).toMatchObject({ receipt_id: receiptId, status: 12, authentication_id: 'auth-relay-1' });
    expect(Object.keys(confirmed.body.authenticate_data as object).sort()).toEqual(PERSON_KEYS);
    // the result at A and at B: the same person, under the same receipt_id
    const atA = await merchant.certificate(receiptId);
    const atB = await atBClient.certificate(receiptId);
    expect(atA.status).toBe(200);
    expect(atB.status).toBe(200);
    // the same person, and the provider's PG transaction id, as the merchant would have them from B
    expect(atA.body.authenticate_data).toEqual(atB.body.authenticate_data);
  }, 90_000);

  it("the provider's refusal of the request reaches the merchant unchanged, and nothing is kept at A", async () => {
    // a PG name the project routes to its provider, which B does not know
    await routeToProvider(a, atA, { baseUrl: bUrl, project: atB }, ['sandbox_identity', 'identity_elsewhere']);
    const before = (await a.deps.database.db.selectFrom('verifications').select('receipt_id').execute()).length;
    const relayed = await merchant.request({ pg: 'identity_elsewhere' });
    const direct = await atBClient.request({ pg: 'identity_elsewhere' });
    expect(direct.status).toBeGreaterThanOrEqual(400);
    expect(relayed.status).toBe(direct.status);
    expect(relayed.body).toEqual(direct.body);
    expect(await a.deps.database.db.selectFrom('verifications').select('receipt_id').execute()).toHaveLength(before);
  });

  it("paygate's send caps hold before the provider is called: a resend counts, the 7th send to a phone is A's own 9479", async () => {
    const phone = freshPhone();
    const atBCount = async () =>
      (
        await b.deps.database.db
          .selectFrom('verifications')
          .select('receipt_id')
          .where('application_id', '=', atB.applicationId)
          .execute()
      ).length;
    const { receiptId } = await merchant.requested({ phone });
    expect((await merchant.realarm(receiptId)).status).toBe(200);
    for (let i = 0; i < 4; i++) await merchant.requested({ phone });
    const before = await atBCount();
    const refused = await merchant.request({ phone });
    expect(refused.status, JSON.stringify(refused.body)).toBe(429);
    expect(refused.body).toMatchObject({ error_code: 'VERIFICATION_SEND_LIMIT', code: 9479 });
    expect(refused.body.message).toMatch(/per phone number was reached: at most 6 in 10 minutes/);
    const resend = await merchant.realarm(receiptId);
    expect(resend.body).toMatchObject({ error_code: 'VERIFICATION_SEND_LIMIT', code: 9479 });
    // nothing reached the provider: no verification there, no SMS beyond the 6 sent
    expect(await atBCount()).toBe(before);
    expect(await atBClient.inbox(phone)).toHaveLength(6);
  }, 90_000);

  it('a confirm whose every answer is lost is an outage (9502 with the receipt_id), not a wrong OTP; the retry gets the verified result', async () => {
    const hostile = await startHostileProvider(bUrl);
    try {
      const shop = await a.createProject();
      await routeToProvider(a, shop, { baseUrl: hostile.url, project: atB }, ['sandbox_identity']);
      const shopClient = verificationClient(a, shop);
      const { receiptId, phone } = await shopClient.requested();
      const otp = await atBClient.latestOtp(phone);
      // B confirms; A hears none of the step's three attempts
      hostile.arm('POST', '/v2/authenticate/confirm', { kind: 'hangUp' }, 3);
      const lost = await shopClient.confirm(receiptId, otp);
      expect(lost.status, JSON.stringify(lost.body)).toBe(502);
      expect(lost.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE', code: 9502, receipt_id: receiptId });
      expect(lost.body.message).toMatch(/same OTP/);
      expect(hostile.hungUp).toBe(3);
      expect((await atBClient.certificate(receiptId)).body).toMatchObject({ status: 12 });
      // A still awaits the OTP: nothing counted as a wrong one
      expect(
        (
          await a.deps.database.db
            .selectFrom('verifications')
            .select('status')
            .where('provider_receipt_id', '=', receiptId)
            .executeTakeFirstOrThrow()
        ).status,
      ).toBe(51);

      const again = await shopClient.confirm(receiptId, otp);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body).toMatchObject({ receipt_id: receiptId, status: 12 });
      expect((await shopClient.certificate(receiptId)).body.authenticate_data).toEqual(
        (await atBClient.certificate(receiptId)).body.authenticate_data,
      );
    } finally {
      await hostile.close();
    }
  }, 90_000);
});

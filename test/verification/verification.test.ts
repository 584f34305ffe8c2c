// REST identity verification through the real API, the real Temporal worker, the embedded engine
// (time-skipping) and the real database: every response field and every error code of the issue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORPHANED_SEND_AFTER_MS } from '../../src/verification/service.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { armSandboxFault, keyInClient } from '../payments/key-in-fixtures.js';
import {
  ISO_KST,
  PERSON_KEYS,
  REQUEST_RESPONSE_KEYS,
  RESULT_KEYS,
  expectApiError,
  expectNoNulls,
  freshPhone,
  verificationClient,
  type VerificationClient,
} from './fixtures.js';

let t: TestApp;
let project: TestProject;
let other: TestProject;
let api: VerificationClient;
let otherApi: VerificationClient;

beforeAll(async () => {
  t = await buildTestApp({ withTemporal: true });
  project = await t.createProject();
  other = await t.createProject({ name: 'other project' });
  api = verificationClient(t, project);
  otherApi = verificationClient(t, other);
});
afterAll(async () => {
  await t?.close();
});

const row = (receiptId: string) =>
  t.deps.database.db.selectFrom('verifications').selectAll().where('receipt_id', '=', receiptId).executeTakeFirstOrThrow();
const verificationCount = async () =>
  Number(
    (
      await t.deps.database.db
        .selectFrom('verifications')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('POST /v2/request/authentication', () => {
  it('answers status 51 with exactly the request fields: tid, number_of_realarms 0, no status_locale, metadata echoed', async () => {
    const metadata = { plan: 'gold', nested: { a: [1, 2] } };
    const before = t.clock.now().getTime();
    const res = await api.request({ metadata, authentication_id: 'signup-42' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const body = res.body;
    expect(Object.keys(body).sort()).toEqual(REQUEST_RESPONSE_KEYS);
    expect(body).not.toHaveProperty('status_locale');
    expect(body).not.toHaveProperty('authenticated_at');
    expect(body.status).toBe(51);
    expect(body.authentication_id).toBe('signup-42');
    expect(body.metadata).toEqual(metadata);
    expect(body.pg).toBe('sandbox_identity');
    expect(body.method).toBe('auth');
    expect(body.method_symbol).toBe('auth');
    expect(body.method_origin_symbol).toBe('auth');
    expect(body.method_origin).toBe('본인인증');
    expect(body.receipt_id).toEqual(expect.any(String));
    expect(body.requested_at).toMatch(ISO_KST);
    const requestedAt = Date.parse(body.requested_at as string);
    expect(requestedAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    const data = body.authenticate_data as Record<string, unknown>;
    expect(Object.keys(data).sort()).toEqual(['number_of_realarms', 'tid']);
    expect(data.number_of_realarms).toBe(0);
    expect(data.tid).toMatch(/^sid_[0-9a-f]+$/);
    expectNoNulls(body);

    const stored = await row(body.receipt_id as string);
    expect(stored.status).toBe(51);
    expect(stored.tid).toBe(data.tid);
    expect(stored.application_id).toBe(project.applicationId);
  });

  it('renders metadata as {} when none is given', async () => {
    const { body } = await api.requested();
    expect(body.metadata).toEqual({});
  });

  it('falls back to user.username and user.phone, defaults client_ip to the caller, stores site_url and extra', async () => {
    const phone = freshPhone();
    const res = await api.request(
      {
        username: undefined,
        phone: undefined,
        user: { username: '김철수', phone },
        site_url: 'https://shop.example/signup',
        extra: { timeout: 3, theme: 'dark' },
      },
      { remoteAddress: '203.0.113.77' },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const receiptId = res.body.receipt_id as string;
    const stored = await row(receiptId);
    expect(stored.client_ip).toBe('203.0.113.77');
    expect(stored.site_url).toBe('https://shop.example/signup');
    expect(stored.extra).toEqual({ timeout: 3, theme: 'dark' });
    // The SMS went to user.phone; the verified name is user.username.
    const confirmed = await api.confirm(receiptId, await api.latestOtp(phone));
    expect(confirmed.status).toBe(200);
    const person = confirmed.body.authenticate_data as Record<string, unknown>;
    expect(person.name).toBe('김철수');
    expect(person.phone).toBe(phone);
  });

  it('prefers the top-level username/phone and an explicit client_ip', async () => {
    const phone = freshPhone();
    const res = await api.request({
      username: '이영희',
      phone,
      user: { username: 'ignored', phone: freshPhone() },
      client_ip: '198.51.100.9',
    });
    expect(res.status).toBe(200);
    const receiptId = res.body.receipt_id as string;
    expect((await row(receiptId)).client_ip).toBe('198.51.100.9');
    expect(await api.inbox(phone)).toHaveLength(1);
    const confirmed = await api.confirm(receiptId, await api.latestOtp(phone));
    expect((confirmed.body.authenticate_data as Record<string, unknown>).name).toBe('이영희');
  });

  it('accepts every one of the six carriers', async () => {
    for (const carrier of ['SKT', 'KT', 'LGT', 'SKT_MVNO', 'KT_MVNO', 'LGT_MVNO']) {
      const res = await api.request({ carrier });
      expect(res.status, `${carrier}: ${JSON.stringify(res.body)}`).toBe(200);
    }
  });

  it('2400 when pg or method is empty', async () => {
    expectApiError(await api.request({ pg: undefined }), 400, 2400, 'AUTH_NEED_PG_METHOD');
    expectApiError(await api.request({ method: '' }), 400, 2400, 'AUTH_NEED_PG_METHOD');
  });

  it('2406 (HTTP 404) for a PG without REST verification, known or not', async () => {
    expectApiError(await api.request({ pg: 'sandbox_card' }), 404, 2406, 'AUTH_CONFIRM_METHOD_NOT_FOUND');
    expectApiError(await api.request({ pg: 'no_such_pg' }), 404, 2406, 'AUTH_CONFIRM_METHOD_NOT_FOUND');
  });

  it('2402 from local validation (carrier, identity_no, authenticate_type): reason in payload.message, no pg_error_code, no gateway call', async () => {
    const rowsBefore = await verificationCount();
    const cases: [string, Record<string, unknown>][] = [
      ['carrier', { carrier: 'VERIZON' }],
      ['carrier', { carrier: 'skt' }],
      ['carrier', { carrier: undefined }],
      ['identity_no', { identity_no: '900101' }],
      ['identity_no', { identity_no: '90010112' }],
      ['identity_no', { identity_no: undefined }],
      ['authenticate_type', { authenticate_type: 'email' }],
      ['authenticate_type', { authenticate_type: 'SMS' }],
    ];
    for (const [field, overrides] of cases) {
      const phone = freshPhone();
      const res = await api.request({ ...overrides, phone });
      expectApiError(res, 400, 2402, 'AUTH_CONFIRM_READY_FAILED');
      expect(res.body, JSON.stringify(overrides)).not.toHaveProperty('pg_error_code');
      expect((res.body.payload as { message: string }).message).toContain(field);
      expect(await api.inbox(phone)).toEqual([]);
    }
    expect(await verificationCount()).toBe(rowsBefore);
  });

  it('2402 without pg_error_code when username or phone is missing at both levels, or the phone is not a mobile number', async () => {
    for (const overrides of [
      { username: undefined },
      { username: '   ', user: { phone: freshPhone() } },
      { phone: undefined },
      { phone: '02-123-4567' },
    ]) {
      const res = await api.request(overrides);
      expectApiError(res, 400, 2402, 'AUTH_CONFIRM_READY_FAILED');
      expect(res.body).not.toHaveProperty('pg_error_code');
      expect((res.body.payload as { message: string }).message).toMatch(/username|phone/);
    }
  });

  it('2002 for another method, 2003 for an empty order_name, 2005 for an empty authentication_id, 2001 for a PG the project lacks', async () => {
    expectApiError(await api.request({ method: '카드' }), 404, 2002, 'RC_PM_NOT_FOUND');
    expectApiError(await api.request({ order_name: ' ' }), 400, 2003, 'RC_NAME_BLANK');
    expectApiError(await api.request({ authentication_id: undefined }), 400, 2005, 'RC_O_ID_BLANK');
    const cardOnly = verificationClient(t, await t.createProject({ name: 'card only', pgs: ['sandbox_card'] }));
    expectApiError(await cardOnly.request(), 404, 2001, 'RC_PG_NOT_FOUND');
  });

  it('2402 with the gateway code when the gateway refuses the person (impossible birth date 991301: A103)', async () => {
    const res = await api.request({ identity_no: '9913011' });
    expectApiError(res, 400, 2402, 'AUTH_CONFIRM_READY_FAILED');
    expect(res.body.pg_error_code).toBe('A103');
  });

  it('2402 with pg_error_code when the gateway cannot send (phone 01000000000); the receipt is -12', async () => {
    const res = await api.request({ phone: '01000000000' });
    expectApiError(res, 400, 2402, 'AUTH_CONFIRM_READY_FAILED');
    expect(res.body.pg_error_code).toBe('A101');
    const failed = await t.deps.database.db
      .selectFrom('verifications')
      .selectAll()
      .where('application_id', '=', project.applicationId)
      .where('failure_pg_error_code', '=', 'A101')
      .execute();
    expect(failed.length).toBeGreaterThanOrEqual(1);
    const receipt = failed.at(-1)!;
    expect(receipt.status).toBe(-12);
    expect(receipt.failure_error_name).toBe('AUTH_CONFIRM_READY_FAILED');
    // A failed request awaits no OTP.
    expectApiError(await api.confirm(receipt.receipt_id, '123456'), 400, 2404, 'AUTH_NOT_READY');
    expectApiError(await api.realarm(receipt.receipt_id), 400, 2404, 'AUTH_NOT_READY');
    expectApiError(await api.certificate(receipt.receipt_id), 400, 2408, 'AUTH_NOT_CONFIRMED');
  });

  it('2401 (HTTP 500) when the identity gateway stays unreachable through every retry', async () => {
    await armSandboxFault(t.sandboxUrl, 'otp.request', '500', 3);
    const authenticationId = 'unreachable-2401';
    const res = await api.request({ authentication_id: authenticationId });
    expectApiError(res, 500, 2401, 'AUTH_REQUEST_FAILED');
    expect(res.body).not.toHaveProperty('pg_error_code');
    const failed = await t.deps.database.db
      .selectFrom('verifications')
      .selectAll()
      .where('authentication_id', '=', authenticationId)
      .executeTakeFirstOrThrow();
    expect(failed.status).toBe(-12);
    expect(failed.failure_error_name).toBe('AUTH_REQUEST_FAILED');
    expect(failed.failure_pg_error_code).toBeNull();
  });

  it('a gateway that fails once is retried under the same idempotency key: one SMS, status 51', async () => {
    await armSandboxFault(t.sandboxUrl, 'otp.request', '500', 1);
    const { phone, body } = await api.requested();
    expect(body.status).toBe(51);
    expect(await api.inbox(phone)).toHaveLength(1);
  });
});

describe('GET /sandbox/v1/sms', () => {
  it('lists the messages to a phone newest first, with the OTP, behind project Basic auth', async () => {
    const { receiptId, phone } = await api.requested();
    expect((await api.realarm(receiptId)).status).toBe(200);
    const list = await api.inbox(phone);
    expect(list).toHaveLength(2);
    for (const m of list) {
      expect(Object.keys(m).sort()).toEqual(['message', 'otp', 'phone', 'sent_at']);
      expect(m.phone).toBe(phone);
      expect(m.otp).toMatch(/^\d{6}$/);
      expect(m.message).toContain(m.otp);
      expect(m.sent_at).toMatch(ISO_KST);
    }
    expect(Date.parse(list[0]!.sent_at)).toBeGreaterThanOrEqual(Date.parse(list[1]!.sent_at));
    // newest first: the first OTP was replaced by the resent one
    expectApiError(
      await api.confirm(receiptId, list[1]!.otp === list[0]!.otp ? '000000' : list[1]!.otp),
      500,
      2405,
      'AUTH_CONFIRM_FAILED',
    );
    expect((await api.confirm(receiptId, list[0]!.otp)).status).toBe(200);

    const anonymous = await t.app.inject({ method: 'GET', url: `/sandbox/v1/sms?phone=${phone}` });
    expect(anonymous.statusCode).toBe(401);
  });

  it('refuses a phone that is not a mobile number, and does not exist outside sandbox mode', async () => {
    const bad = await api.send('GET', '/sandbox/v1/sms?phone=hello');
    expect(bad.status).toBe(400);
    const production = await buildTestApp({ config: { sandbox: false } });
    try {
      const p = await production.createProject();
      const res = await production.app.inject({
        method: 'GET',
        url: '/sandbox/v1/sms?phone=01012345678',
        headers: { authorization: p.basicAuth },
      });
      expect(res.statusCode).toBe(404);
    } finally {
      await production.close();
    }
  });
});

describe('POST /v2/authenticate/confirm and GET /v2/certificate/{receipt_id}', () => {
  it('confirm answers the verified person with every field; the lookup answers the same without number_of_realarms', async () => {
    const { receiptId, phone, body: requested } = await api.requested({ metadata: { k: 'v' }, carrier: 'KT_MVNO' });
    expectApiError(await api.certificate(receiptId), 400, 2408, 'AUTH_NOT_CONFIRMED');

    const confirmed = await api.confirm(receiptId, await api.latestOtp(phone));
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    const body = confirmed.body;
    expect(Object.keys(body).sort()).toEqual(RESULT_KEYS);
    expect(body.status).toBe(12);
    expect(body.status_locale).toBe('본인인증완료');
    expect(body.receipt_id).toBe(receiptId);
    expect(body.authentication_id).toBe(requested.authentication_id);
    expect(body.gateway_url).toEqual(expect.any(String));
    expect(body.metadata).toEqual({ k: 'v' });
    expect(body.method).toBe('auth');
    expect(body.method_symbol).toBe('auth');
    expect(body.method_origin_symbol).toBe('auth');
    expect(body.requested_at).toBe(requested.requested_at);
    expect(body.authenticated_at).toMatch(ISO_KST);
    expect(Date.parse(body.authenticated_at as string)).toBeGreaterThanOrEqual(Date.parse(body.requested_at as string));
    const person = body.authenticate_data as Record<string, unknown>;
    expect(Object.keys(person).sort()).toEqual(PERSON_KEYS);
    expect(person).not.toHaveProperty('number_of_realarms');
    expect(person.name).toBe('홍길동');
    expect(person.phone).toBe(phone);
    expect(person.birth).toBe('19900101');
    expect(person.gender).toBe(1);
    expect(person.foreigner).toBe('0');
    expect(person.carrier).toBe('KT_MVNO');
    expect(person.unique).toEqual(expect.any(String));
    expect(person.di).toEqual(expect.any(String));
    expect(person.tid).toBe((requested.authenticate_data as Record<string, unknown>).tid);
    expectNoNulls(body);

    const looked = await api.certificate(receiptId);
    expect(looked.status).toBe(200);
    expect(looked.body).toEqual(body);
    expect(looked.body.authenticate_data).not.toHaveProperty('number_of_realarms');

    const stored = await row(receiptId);
    expect(stored.status).toBe(12);
    expect(stored.authenticated_at?.toISOString().slice(0, 19)).toBe(
      new Date(Date.parse(body.authenticated_at as string)).toISOString().slice(0, 19),
    );
  });

  it('birth, gender and foreigner come from identity_no (century, sex and nationality digit)', async () => {
    const cases = [
      { identity_no: '9505052', birth: '19950505', gender: 0, foreigner: '0' },
      { identity_no: '0203043', birth: '20020304', gender: 1, foreigner: '0' },
      { identity_no: '0407084', birth: '20040708', gender: 0, foreigner: '0' },
      { identity_no: '8811115', birth: '19881111', gender: 1, foreigner: '1' },
      { identity_no: '1212128', birth: '20121212', gender: 0, foreigner: '1' },
    ];
    for (const c of cases) {
      const { body } = await api.verified({ identity_no: c.identity_no });
      const person = body.authenticate_data as Record<string, unknown>;
      expect({ birth: person.birth, gender: person.gender, foreigner: person.foreigner }, c.identity_no).toEqual({
        birth: c.birth,
        gender: c.gender,
        foreigner: c.foreigner,
      });
    }
  });

  it('CI (unique) is the same for one person across projects; DI differs per project', async () => {
    const person = { username: '박민수', identity_no: '8502021' };
    const a = (await api.verified(person)).body.authenticate_data as Record<string, string>;
    const a2 = (await api.verified(person)).body.authenticate_data as Record<string, string>;
    const b = (await otherApi.verified(person)).body.authenticate_data as Record<string, string>;
    expect(a.unique).toBe(b.unique);
    expect(a.unique).toBe(a2.unique);
    expect(a.di).toBe(a2.di);
    expect(a.di).not.toBe(b.di);
    const someoneElse = (await api.verified({ username: '박민수', identity_no: '8502031' })).body.authenticate_data as Record<
      string,
      string
    >;
    expect(someoneElse.unique).not.toBe(a.unique);
  });

  it('2405 (HTTP 500) for a wrong OTP; the receipt stays 51 and the right OTP still works', async () => {
    const { receiptId, phone } = await api.requested();
    const otp = await api.latestOtp(phone);
    const wrong = otp === '000000' ? '000001' : '000000';
    const res = await api.confirm(receiptId, wrong);
    expectApiError(res, 500, 2405, 'AUTH_CONFIRM_FAILED');
    expect(res.body.pg_error_code).toBe('A202');
    expect((await row(receiptId)).status).toBe(51);
    expectApiError(await api.confirm(receiptId, '12ab'), 500, 2405, 'AUTH_CONFIRM_FAILED');
    expectApiError(await api.confirm(receiptId), 500, 2405, 'AUTH_CONFIRM_FAILED');
    expect((await api.confirm(receiptId, otp)).status).toBe(200);
  });

  it('five wrong OTPs lock the verification at the gateway (A204)', async () => {
    const { receiptId, phone } = await api.requested();
    const otp = await api.latestOtp(phone);
    const wrong = otp === '000000' ? '000001' : '000000';
    for (let i = 0; i < 5; i++) expectApiError(await api.confirm(receiptId, wrong), 500, 2405, 'AUTH_CONFIRM_FAILED');
    const locked = await api.confirm(receiptId, otp);
    expectApiError(locked, 500, 2405, 'AUTH_CONFIRM_FAILED');
    expect(locked.body.pg_error_code).toBe('A204');
  });

  it('2404 for confirm or resend of an already verified (12) receipt; the receipt is unchanged', async () => {
    const { receiptId, phone, body } = await api.verified();
    const before = await row(receiptId);
    expectApiError(await api.confirm(receiptId, await api.latestOtp(phone)), 400, 2404, 'AUTH_NOT_READY');
    expectApiError(await api.realarm(receiptId), 400, 2404, 'AUTH_NOT_READY');
    const after = await row(receiptId);
    expect(after.status).toBe(12);
    expect(after.number_of_realarms).toBe(before.number_of_realarms);
    expect(after.authenticated_at?.getTime()).toBe(before.authenticated_at?.getTime());
    expect((await api.certificate(receiptId)).body).toEqual(body);
  });

  it('a pass verification sends no SMS and confirms with an empty or null otp', async () => {
    const phone = freshPhone();
    const res = await api.request({ authenticate_type: 'pass', phone });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe(51);
    expect((res.body.authenticate_data as Record<string, unknown>).number_of_realarms).toBe(0);
    expect(await api.inbox(phone)).toEqual([]);
    const receiptId = res.body.receipt_id as string;
    const confirmed = await api.confirm(receiptId, null);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.status).toBe(12);

    const second = await api.requested({ authenticate_type: 'pass' });
    expect((await api.confirm(second.receiptId, '')).status).toBe(200);
    expect((await row(second.receiptId)).authenticate_type).toBe('pass');
  });

  it('2407 for confirm or resend of an unknown receipt; 2000 for a lookup of one', async () => {
    expectApiError(await api.confirm('no-such-receipt', '123456'), 404, 2407, 'AUTH_NOT_FOUND');
    expectApiError(await api.realarm('no-such-receipt'), 404, 2407, 'AUTH_NOT_FOUND');
    expectApiError(await api.certificate('no-such-receipt'), 404, 2000, 'RC_NOT_FOUND');
    expectApiError(await api.confirm('', '123456'), 404, 2000, 'RC_NOT_FOUND');
  });

  it('1225 when another project touches the verification; its own keys still work', async () => {
    const { receiptId, phone } = await api.requested();
    expectApiError(await otherApi.confirm(receiptId, await api.latestOtp(phone)), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expectApiError(await otherApi.realarm(receiptId), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expectApiError(await otherApi.certificate(receiptId), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expect((await row(receiptId)).number_of_realarms).toBe(0);
    expect((await api.confirm(receiptId, await api.latestOtp(phone))).status).toBe(200);
    expectApiError(await otherApi.certificate(receiptId), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expect((await api.certificate(receiptId)).status).toBe(200);
  });

  it('2064 for the lookup of a receipt that is not a verification (a billing charge)', async () => {
    const billing = keyInClient(t, project);
    const key = await billing.issuedKey({ subscription_id: 'verif-2064' });
    const paid = await billing.charge(key);
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const paymentReceipt = paid.body.receipt_id as string;
    expectApiError(await api.certificate(paymentReceipt), 400, 2064, 'RC_NOT_AUTH');
    expectApiError(await api.confirm(paymentReceipt, '123456'), 400, 2064, 'RC_NOT_AUTH');
    // another project's billing receipt: the ownership check comes first
    expectApiError(await otherApi.certificate(paymentReceipt), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
  });

  it('2064 for the receipt of a billing key issuance, on lookup, confirm and resend; 1225 for another project', async () => {
    const billing = keyInClient(t, project);
    const issued = await billing.issue({ subscription_id: 'verif-2064-issuance' });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const issuanceReceipt = issued.body.receipt_id as string;
    expect(issuanceReceipt).toEqual(expect.any(String));
    expectApiError(await api.certificate(issuanceReceipt), 400, 2064, 'RC_NOT_AUTH');
    expectApiError(await api.confirm(issuanceReceipt, '123456'), 400, 2064, 'RC_NOT_AUTH');
    expectApiError(await api.realarm(issuanceReceipt), 400, 2064, 'RC_NOT_AUTH');
    // another project learns nothing of what the receipt is: the ownership check comes before the kind
    expectApiError(await otherApi.certificate(issuanceReceipt), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    expectApiError(await otherApi.confirm(issuanceReceipt, '123456'), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    // the billing key itself stays usable: the lookups changed nothing
    const paid = await billing.charge(issued.body.billing_key as string, { order_id: 'verif-2064-issuance-charge' });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  });
});

describe('POST /v2/authenticate/realarm', () => {
  it('resends: same tid, number_of_realarms counts up, request-response fields only', async () => {
    const { receiptId, phone, body: requested } = await api.requested({ metadata: { m: 1 } });
    const first = await api.realarm(receiptId);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(REQUEST_RESPONSE_KEYS);
    expect(first.body).not.toHaveProperty('status_locale');
    expect(first.body.status).toBe(51);
    expect(first.body.metadata).toEqual({ m: 1 });
    expect(first.body.requested_at).toBe(requested.requested_at);
    expect(first.body.authenticate_data).toEqual({
      tid: (requested.authenticate_data as Record<string, unknown>).tid,
      number_of_realarms: 1,
    });
    expectNoNulls(first.body);
    const second = await api.realarm(receiptId);
    expect((second.body.authenticate_data as Record<string, unknown>).number_of_realarms).toBe(2);
    expect((await row(receiptId)).number_of_realarms).toBe(2);
    expect(await api.inbox(phone)).toHaveLength(3);
    const confirmed = await api.confirm(receiptId, await api.latestOtp(phone));
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.authenticate_data).not.toHaveProperty('number_of_realarms');
  });

  it('2411 (HTTP 500) when the resend fails (phone 01000000001), with the counter already incremented', async () => {
    const { receiptId, phone } = await api.requested({ phone: '01000000001' });
    const otp = await api.latestOtp(phone);
    const res = await api.realarm(receiptId);
    expectApiError(res, 500, 2411, 'AUTH_REALARM_FAILED');
    expect(res.body.pg_error_code).toBe('A102');
    expect((await row(receiptId)).number_of_realarms).toBe(1);
    const again = await api.realarm(receiptId);
    expectApiError(again, 500, 2411, 'AUTH_REALARM_FAILED');
    const stored = await row(receiptId);
    expect(stored.number_of_realarms).toBe(2);
    expect(stored.status).toBe(51);
    // the first SMS is still valid
    const confirmed = await api.confirm(receiptId, otp);
    expect(confirmed.status).toBe(200);
  });

  it('2412 for a pass verification', async () => {
    const { receiptId } = await api.requested({ authenticate_type: 'pass' });
    expectApiError(await api.realarm(receiptId), 400, 2412, 'AUTH_REALARM_NOT_ABLE');
    expect((await row(receiptId)).number_of_realarms).toBe(0);
  });

  describe('a verification whose request died before its run started', () => {
    it('the worker ends it as a failed request once it sat sending past ORPHANED_SEND_AFTER_MS; one with a run, or younger, is left', async () => {
      const store = t.deps.stores.verifications;
      const now = new Date();
      const stored = (receiptId: string) =>
        store.create({
          receiptId,
          applicationId: project.applicationId,
          authenticationId: `orphan-${receiptId}`,
          orderName: 'signup',
          pg: 'sandbox_identity',
          type: 'sms',
          metadata: {},
          extra: {},
          clientIp: '127.0.0.1',
          requestedAt: now,
        });
      // what a kill -9 between storing the request and starting its workflow leaves: status 50, no run
      const orphan = 'a0a0a0a0a0a0a0a0a0a0a0a1';
      const young = 'a0a0a0a0a0a0a0a0a0a0a0a2';
      await stored(orphan);
      await stored(young);
      await t.deps.database.db
        .updateTable('verifications')
        .set({ updated_at: new Date(now.getTime() - ORPHANED_SEND_AFTER_MS - 60_000) })
        .where('receipt_id', '=', orphan)
        .execute();
      // and a verification whose run exists, held at 50 as long ago (its run moves it, never the sweep)
      const { receiptId: live } = await api.requested();
      await t.deps.database.db
        .updateTable('verifications')
        .set({ status: 50, updated_at: new Date(now.getTime() - ORPHANED_SEND_AFTER_MS - 60_000) })
        .where('receipt_id', '=', live)
        .execute();

      expect(await t.app.deps.services.verifications.failOrphanedSends(new Date())).toBe(1);
      expect(await row(orphan)).toMatchObject({ status: -12, failure_error_name: 'AUTH_REQUEST_FAILED' });
      expect((await row(young)).status).toBe(50);
      expect((await row(live)).status).toBe(50);
      // its lookup is final now: the request failed
      expect((await api.certificate(orphan)).status).toBeGreaterThanOrEqual(400);
      expect(await t.app.deps.services.verifications.failOrphanedSends(new Date())).toBe(0);
    });
  });
});

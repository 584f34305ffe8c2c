// paygate's caps on verification messages across verifications (issue 24 item 6): per phone and per project, over
// windows of wall-clock time, counted in Postgres by a keyed hash of the phone. Through the real API, workflow, engine
// and sandbox identity PG: what reaches the sandbox inbox is what was sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { createVerificationSendStore } from '../../src/verification/sends-store.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { expectApiError, freshPhone, verificationBody, verificationClient, type VerificationClient } from './fixtures.js';

const MINUTE = 60_000;

async function post(t: TestApp, project: TestProject, url: string, body: unknown, key?: string) {
  const res = await t.app.inject({
    method: 'POST',
    url,
    headers: { authorization: project.basicAuth, ...(key ? { 'idempotency-key': key } : {}) },
    payload: body as object,
  });
  return {
    status: res.statusCode,
    body: res.json() as Record<string, unknown>,
    retryAfter: res.headers['retry-after'],
    replayed: res.headers['idempotent-replayed'],
  };
}

const sendRows = (t: TestApp, applicationId: string) =>
  t.deps.database.db.selectFrom('verification_sends').selectAll().where('application_id', '=', applicationId).execute();

const verificationCount = async (t: TestApp, applicationId: string) =>
  (
    await t.deps.database.db
      .selectFrom('verifications')
      .select('receipt_id')
      .where('application_id', '=', applicationId)
      .execute()
  ).length;

/** Moves every counted send of the project `ms` into the past, as if that much wall-clock time had passed. */
const backdate = (t: TestApp, applicationId: string, ms: number) =>
  sql`update verification_sends set sent_at = sent_at - make_interval(secs => ${ms / 1000}) where application_id = ${applicationId}`.execute(
    t.deps.database.db,
  );

const PER_PHONE = /per phone number was reached: at most 6 in 10 minutes/;

describe('with the default caps (per phone 6 in 10 minutes and 10 in 24 hours, per project 1,000 an hour)', () => {
  let t: TestApp;
  let project: TestProject;
  let api: VerificationClient;

  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    project = await t.createProject();
    api = verificationClient(t, project);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('30 parallel requests to one phone: exactly 6 are sent, 24 get 9479 naming the per-phone limit with Retry-After', async () => {
    const phone = freshPhone();
    const results = await Promise.all(
      Array.from({ length: 30 }, () => post(t, project, '/v2/request/authentication', verificationBody({ phone }))),
    );
    const sent = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(sent, JSON.stringify(refused.find((r) => r.status !== 429)?.body)).toHaveLength(6);
    expect(refused).toHaveLength(24);
    for (const r of refused) {
      expectApiError(r, 429, 9479, 'VERIFICATION_SEND_LIMIT');
      expect(r.body.message).toMatch(PER_PHONE);
      const retryAfter = Number(r.retryAfter);
      expect(retryAfter).toBeGreaterThan(9 * 60);
      expect(retryAfter).toBeLessThanOrEqual(10 * 60);
      expect(r.body.message).toContain(`Retry after ${retryAfter} s`);
    }
    expect(await api.inbox(phone)).toHaveLength(6);
    // a refusal left nothing behind: no verification row, no run, no count
    expect(await verificationCount(t, project.applicationId)).toBe(6);
    expect(await sendRows(t, project.applicationId)).toHaveLength(6);

    // another phone of the same project is not affected
    const other = freshPhone();
    await api.requested({ phone: other });
    expect(await api.inbox(other)).toHaveLength(1);
  });

  it('resends count towards the phone cap: a request, 2 resends and 3 more requests use it up; then neither is sent', async () => {
    const { receiptId, phone } = await api.requested();
    for (let i = 1; i <= 2; i++) {
      const res = await api.realarm(receiptId);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    for (let i = 0; i < 3; i++) await api.requested({ phone });
    const request = await post(t, project, '/v2/request/authentication', verificationBody({ phone }));
    expectApiError(request, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    expect(request.body.message).toMatch(PER_PHONE);
    const resend = await post(t, project, '/v2/authenticate/realarm', { receipt_id: receiptId });
    expectApiError(resend, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    expect(resend.body.message).toMatch(PER_PHONE);
    expect(Number(resend.retryAfter)).toBeGreaterThan(0);
    expect(await api.inbox(phone)).toHaveLength(6);
    const row = await t.deps.database.db
      .selectFrom('verifications')
      .select('number_of_realarms')
      .where('receipt_id', '=', receiptId)
      .executeTakeFirstOrThrow();
    expect(row.number_of_realarms).toBe(2);
  });

  it('the window is wall-clock time: moving the sandbox clock frees nothing; once the sends are 10 minutes old, one more passes', async () => {
    const project2 = await t.createProject();
    const api2 = verificationClient(t, project2);
    const phone = freshPhone();
    for (let i = 0; i < 6; i++) await api2.requested({ phone });
    expectApiError(await api2.request({ phone }), 429, 9479, 'VERIFICATION_SEND_LIMIT');

    await t.temporal!.skipTime(11 * MINUTE);
    expectApiError(await api2.request({ phone }), 429, 9479, 'VERIFICATION_SEND_LIMIT');

    await backdate(t, project2.applicationId, 10 * MINUTE + 1_000);
    await api2.requested({ phone });
    // 7 in 24 hours now; the daily cap stops the 11th
    for (let i = 0; i < 3; i++) await api2.requested({ phone });
    const daily = await post(t, project2, '/v2/request/authentication', verificationBody({ phone }));
    expectApiError(daily, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    expect(daily.body.message).toMatch(/per phone number was reached: at most 10 in 24 hours/);
    // the oldest of the 10 was sent (moved) 10 minutes ago
    expect(Number(daily.retryAfter)).toBeGreaterThan(23 * 60 * 60);
    expect(Number(daily.retryAfter)).toBeLessThanOrEqual(24 * 60 * 60 - 10 * 60);
    expect(await api2.inbox(phone)).toHaveLength(10);
  });

  it('the table holds no phone, only its keyed hash; a verification drops its hash once it no longer awaits an OTP', async () => {
    const project3 = await t.createProject();
    const api3 = verificationClient(t, project3);
    const { receiptId, phone } = await api3.verified();
    const rows = await sendRows(t, project3.applicationId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.phone_mac).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]!.phone_key_id).toBe(t.deps.keyring.currentKeyId);
    const dump = JSON.stringify(
      (await sql`select * from verification_sends`.execute(t.deps.database.db)).rows.concat(
        (await sql`select * from verifications`.execute(t.deps.database.db)).rows,
      ),
    );
    expect(dump).not.toContain(phone);
    expect(dump).not.toContain(phone.slice(1));
    const verified = await t.deps.database.db
      .selectFrom('verifications')
      .select(['phone_mac', 'phone_key_id'])
      .where('receipt_id', '=', receiptId)
      .executeTakeFirstOrThrow();
    expect(verified).toEqual({ phone_mac: null, phone_key_id: null });
  });

  it('sends older than every window are purged', async () => {
    const project4 = await t.createProject();
    const api4 = verificationClient(t, project4);
    await api4.requested();
    await api4.requested();
    await backdate(t, project4.applicationId, 24 * 60 * MINUTE + 1_000);
    await api4.requested();
    expect(await sendRows(t, project4.applicationId)).toHaveLength(1);
  });

  it('an Idempotency-Key replay is not counted again and answers the stored response; a 9479 is not stored', async () => {
    const project5 = await t.createProject();
    const phone = freshPhone();
    const body = verificationBody({ phone });
    const first = await post(t, project5, '/v2/request/authentication', body, 'send-cap-1');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    for (let i = 0; i < 5; i++) {
      const res = await post(t, project5, '/v2/request/authentication', verificationBody({ phone }));
      expect(res.status).toBe(200);
    }
    const replay = await post(t, project5, '/v2/request/authentication', body, 'send-cap-1');
    expect(replay).toMatchObject({ status: 200, replayed: 'true', body: first.body });
    expect(await sendRows(t, project5.applicationId)).toHaveLength(6);

    const capped = verificationBody({ phone });
    const refused = await post(t, project5, '/v2/request/authentication', capped, 'send-cap-2');
    expectApiError(refused, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    const again = await post(t, project5, '/v2/request/authentication', capped, 'send-cap-2');
    expectApiError(again, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    expect(again.replayed).toBeUndefined();
    // once the window has passed, the same key runs the request
    await backdate(t, project5.applicationId, 10 * MINUTE + 1_000);
    const later = await post(t, project5, '/v2/request/authentication', capped, 'send-cap-2');
    expect(later.status, JSON.stringify(later.body)).toBe(200);
    expect(later.replayed).toBeUndefined();
    expect(await sendRows(t, project5.applicationId)).toHaveLength(7);
  });

  it('a request whose record cannot be written sends nothing and uses no slot', async () => {
    const project6 = await t.createProject();
    const phone = freshPhone();
    // the database refuses this one project's verification rows (a full disk, a lost connection: any failed write)
    const db = t.deps.database.db;
    await sql
      .raw(`create or replace function refuse_verification() returns trigger language plpgsql as $$
        begin
          if new.application_id = '${project6.applicationId}' then raise exception 'disk full (test)'; end if;
          return new;
        end $$`)
      .execute(db);
    await sql
      .raw(
        'create trigger refuse_verification before insert on verifications for each row execute function refuse_verification()',
      )
      .execute(db);
    try {
      for (let i = 0; i < 8; i++) {
        const res = await post(t, project6, '/v2/request/authentication', verificationBody({ phone }));
        expectApiError(res, 500, 9500, 'INTERNAL_ERROR');
      }
      expect(await sendRows(t, project6.applicationId)).toHaveLength(0);
      expect(await api.inbox(phone)).toHaveLength(0);
    } finally {
      await sql.raw('drop trigger refuse_verification on verifications').execute(db);
      await sql.raw('drop function refuse_verification()').execute(db);
    }
    // the phone's whole allowance is still there
    for (let i = 0; i < 6; i++) {
      const res = await post(t, project6, '/v2/request/authentication', verificationBody({ phone }));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    expect(await sendRows(t, project6.applicationId)).toHaveLength(6);
  });
});

describe('configured caps (VERIFICATION_SEND_LIMITS_PER_PHONE=7/10m, VERIFICATION_SEND_LIMITS_PER_PROJECT=10/1h)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({
      withTemporal: true,
      env: { VERIFICATION_SEND_LIMITS_PER_PHONE: '7/10m', VERIFICATION_SEND_LIMITS_PER_PROJECT: '10/1h' },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the per-project cap refuses with its own message, whatever the phone; an hour later sends pass again', async () => {
    const project = await t.createProject();
    const api = verificationClient(t, project);
    for (let i = 0; i < 10; i++) await api.requested();
    const phone = freshPhone();
    const refused = await post(t, project, '/v2/request/authentication', verificationBody({ phone }));
    expectApiError(refused, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    expect(refused.body.message).toMatch(/per project was reached: at most 10 in 1 hour/);
    expect(Number(refused.retryAfter)).toBeGreaterThan(59 * 60);
    expect(await api.inbox(phone)).toHaveLength(0);
    expect(await verificationCount(t, project.applicationId)).toBe(10);

    // another project has its own count
    await verificationClient(t, await t.createProject()).requested();

    await backdate(t, project.applicationId, 60 * MINUTE + 1_000);
    await api.requested({ phone });
    expect(await api.inbox(phone)).toHaveLength(1);
  });

  it("a resend refused before sending is not counted: past the verification's own 5 (2411), or by the run (locked: 2411 A204)", async () => {
    const project = await t.createProject();
    const api = verificationClient(t, project);
    const { receiptId, phone } = await api.requested();
    for (let i = 0; i < 5; i++) expect((await api.realarm(receiptId)).status).toBe(200);
    const sixth = await api.realarm(receiptId);
    expectApiError(sixth, 500, 2411, 'AUTH_REALARM_FAILED');
    expect(sixth.body.payload).toEqual({ message: 'At most 5 resends per verification; request a new one.' });
    expect(await sendRows(t, project.applicationId)).toHaveLength(6);

    // the run's validator refuses a locked verification's resend: counted, then given back
    const locked = await api.requested();
    const otp = await api.latestOtp(locked.phone);
    const wrong = otp === '000000' ? '000001' : '000000';
    for (let i = 0; i < 5; i++) expectApiError(await api.confirm(locked.receiptId, wrong), 500, 2405, 'AUTH_CONFIRM_FAILED');
    const refused = await api.realarm(locked.receiptId);
    expectApiError(refused, 500, 2411, 'AUTH_REALARM_FAILED');
    expect(refused.body.pg_error_code).toBe('A204');
    expect(await sendRows(t, project.applicationId)).toHaveLength(7);

    // the first phone has had 6 sends: the 7th passes, the 8th is refused by the phone cap
    await api.requested({ phone });
    const eighth = await api.request({ phone });
    expectApiError(eighth, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    expect(eighth.body.message).toMatch(/per phone number was reached: at most 7 in 10 minutes/);
    expect(await api.inbox(phone)).toHaveLength(7);
  });

  it('a key rotation between two sends to one phone still counts the first, by its hash under the old key', async () => {
    const oldKey = generateKeyringSpec('k-before-rotation');
    const newKey = generateKeyringSpec('k-after-rotation');
    const project = await t.createProject({ name: 'rotation' });
    const db = t.deps.database.db;
    const before = createVerificationSendStore(db, createKeyring(parseKeyringSpec(oldKey)));
    const after = createVerificationSendStore(db, createKeyring(parseKeyringSpec(`${newKey},${oldKey}`)));
    const limits = { perPhone: [{ max: 2, windowMs: 10 * MINUTE }], perProject: [] };
    const send = { applicationId: project.applicationId, phone: { number: freshPhone() }, kind: 'request' as const, limits };
    expect(await before.reserve(send)).toMatchObject({ counted: true });
    expect(await after.reserve(send)).toMatchObject({ counted: true });
    expect(await after.reserve(send)).toMatchObject({ counted: false, hit: { scope: 'phone', limit: { max: 2 } } });
    // another phone is not held by those two
    expect(await after.reserve({ ...send, phone: { number: freshPhone() } })).toMatchObject({ counted: true });
    // no limit to check (a verification from before the caps, no project limit): counted all the same
    expect(await after.reserve({ ...send, phone: undefined, limits: { perPhone: [], perProject: [] } })).toMatchObject({
      counted: true,
    });
  });
});

// 8 s: long enough that two sends on a loaded machine both fall in it (with 2 s the first had aged out at times
// before the third was asked), short enough to wait out
describe('a short window (VERIFICATION_SEND_LIMITS_PER_PHONE=2/8s)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true, env: { VERIFICATION_SEND_LIMITS_PER_PHONE: '2/8s' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('passes again once Retry-After has passed on the wall clock', async () => {
    const project = await t.createProject();
    const api = verificationClient(t, project);
    const phone = freshPhone();
    await api.requested({ phone });
    await api.requested({ phone });
    const refused = await post(t, project, '/v2/request/authentication', verificationBody({ phone }));
    expectApiError(refused, 429, 9479, 'VERIFICATION_SEND_LIMIT');
    expect(refused.body.message).toMatch(/per phone number was reached: at most 2 in 8 seconds/);
    const retryAfter = Number(refused.retryAfter);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(8);
    await new Promise((r) => setTimeout(r, retryAfter * 1_000 + 100));
    await api.requested({ phone });
    expect(await api.inbox(phone)).toHaveLength(3);
  });
});

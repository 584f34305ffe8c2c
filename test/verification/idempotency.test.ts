// Idempotency-Key on the verification routes, through the real workflow: a retried request or confirm
// replays the first answer (no second SMS, no second workflow); the stored answer of a confirm, which
// holds the verified person, is sealed in the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { freshPhone, verificationBody, verificationClient, type VerificationClient } from './fixtures.js';

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

async function post(url: string, body: unknown, key: string) {
  const res = await t.app.inject({
    method: 'POST',
    url,
    headers: { authorization: project.basicAuth, 'idempotency-key': key },
    payload: body as object,
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, replayed: res.headers['idempotent-replayed'] };
}

describe('Idempotency-Key on identity verification', () => {
  it('a retried request replays the first answer: one verification, one SMS; another body under the key -> 9422', async () => {
    const phone = freshPhone();
    const body = verificationBody({ phone });
    const first = await post('/v2/request/authentication', body, 'verify-req-1');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.replayed).toBeUndefined();
    const again = await post('/v2/request/authentication', body, 'verify-req-1');
    expect(again).toMatchObject({ status: 200, replayed: 'true', body: first.body });
    expect(await api.inbox(phone)).toHaveLength(1);
    const rows = await t.deps.database.db
      .selectFrom('verifications')
      .select('receipt_id')
      .where('application_id', '=', project.applicationId)
      .execute();
    expect(rows.map((r) => r.receipt_id)).toEqual([first.body.receipt_id]);
    const other = await post('/v2/request/authentication', { ...body, phone: freshPhone() }, 'verify-req-1');
    expect(other.body).toMatchObject({ error_code: 'IDEMPOTENCY_KEY_REUSED', code: 9422 });
  });

  it('a retried resend does not send another SMS', async () => {
    const { receiptId, phone } = await api.requested();
    const first = await post('/v2/authenticate/realarm', { receipt_id: receiptId }, 'verify-resend-1');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await post('/v2/authenticate/realarm', { receipt_id: receiptId }, 'verify-resend-1');
    expect(again).toMatchObject({ status: 200, replayed: 'true', body: first.body });
    expect(await api.inbox(phone)).toHaveLength(2);
  });

  it('a retried confirm replays the verified person; the stored answer is sealed', async () => {
    const name = '한봉인';
    const { receiptId, phone } = await api.requested({ username: name });
    const otp = await api.latestOtp(phone);
    const first = await post('/v2/authenticate/confirm', { receipt_id: receiptId, otp }, 'verify-confirm-1');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const person = first.body.authenticate_data as Record<string, string>;
    expect(person.name).toBe(name);
    const again = await post('/v2/authenticate/confirm', { receipt_id: receiptId, otp }, 'verify-confirm-1');
    expect(again).toMatchObject({ status: 200, replayed: 'true', body: first.body });

    const stored = await t.deps.database.db
      .selectFrom('idempotency_keys')
      .select('response_body')
      .where('application_id', '=', project.applicationId)
      .where('idempotency_key', '=', 'verify-confirm-1')
      .executeTakeFirstOrThrow();
    expect(stored.response_body).toMatch(/^v1\.[^.]+\.[A-Za-z0-9+/=]+$/);
    for (const value of [name, phone, person.unique, person.di, person.birth]) {
      expect(value).toEqual(expect.any(String));
      expect(stored.response_body).not.toContain(value);
    }
  });

  it('a retried confirm whose first request verified and died before storing its answer gets the verified result; another key gets 2404', async () => {
    const { receiptId, phone } = await api.requested();
    const otp = await api.latestOtp(phone);
    const body = { receipt_id: receiptId, otp };
    const first = await post('/v2/authenticate/confirm', body, 'confirm-died');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // what an API killed after the workflow verified and before its answer was stored leaves, once the key is released
    await t.deps.database.db
      .deleteFrom('idempotency_keys')
      .where('application_id', '=', project.applicationId)
      .where('idempotency_key', '=', 'confirm-died')
      .execute();

    const retried = await post('/v2/authenticate/confirm', body, 'confirm-died');
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.replayed).toBeUndefined();
    expect(retried.body).toEqual(first.body);
    for (const other of [
      () => post('/v2/authenticate/confirm', body, 'confirm-other'),
      async () => {
        const res = await api.confirm(receiptId, otp);
        return { status: res.status, body: res.body, replayed: undefined };
      },
    ]) {
      const refused = await other();
      expect(refused.body).toMatchObject({ error_code: 'AUTH_NOT_READY', code: 2404 });
    }
    // the row keeps the key only as its MAC
    const row = await t.deps.database.db
      .selectFrom('verifications')
      .select('confirm_key_mac')
      .where('receipt_id', '=', receiptId)
      .executeTakeFirstOrThrow();
    expect(row.confirm_key_mac).toMatch(/^[^.]+\.[0-9a-f]{64}$/);
  });
});

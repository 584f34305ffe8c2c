// The sandbox SMS inbox (GET /sandbox/v1/sms) through the real API, worker and sandbox: a project
// sees only the messages of its own verifications, even for a phone another project also used.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp } from '../helpers/app.js';
import { freshPhone, verificationClient, type VerificationClient } from './fixtures.js';

let t: TestApp;
let a: VerificationClient;
let b: VerificationClient;

beforeAll(async () => {
  t = await buildTestApp({ withTemporal: true });
  a = verificationClient(t, await t.createProject({ name: 'project A' }));
  b = verificationClient(t, await t.createProject({ name: 'project B' }));
});
afterAll(async () => {
  await t?.close();
});

it('project B cannot read the OTP sent to a phone project A used; each sees only its own messages', async () => {
  const phone = freshPhone();
  const first = await a.requested({ phone });
  expect(await b.inbox(phone)).toEqual([]);
  const ownA = await a.inbox(phone);
  expect(ownA).toHaveLength(1);

  // The sandbox itself holds the message (so the filter, not an empty inbox, hides it from B).
  const raw = await fetch(`${t.sandboxUrl}/_sandbox/sms?phone=${phone}`, {
    headers: { authorization: `Bearer ${TEST_SANDBOX_TOKEN}` },
  });
  const rawList = ((await raw.json()) as { list: { otp: string; tid: string }[] }).list;
  expect(rawList.map((m) => m.otp)).toEqual([ownA[0]!.otp]);
  expect(rawList[0]!.tid).toBe((first.body.authenticate_data as { tid: string }).tid);

  // B verifies the same phone: B sees its message only, A still sees only its own.
  await b.requested({ phone });
  const ownB = await b.inbox(phone);
  expect(ownB).toHaveLength(1);
  expect(ownB[0]!.otp).not.toBe(undefined);
  expect((await a.inbox(phone)).map((m) => m.otp)).toEqual([ownA[0]!.otp]);
  // the inbox answer carries no transaction id: the merchant sees the documented fields only
  expect(Object.keys(ownB[0]!).sort()).toEqual(['message', 'otp', 'phone', 'sent_at']);

  // B's OTP from its own inbox does not confirm A's verification, and A's own does.
  const wrongForA = ownB[0]!.otp === ownA[0]!.otp ? '000000' : ownB[0]!.otp;
  expect((await a.confirm(first.receiptId, wrongForA)).status).toBe(500);
  expect((await a.confirm(first.receiptId, ownA[0]!.otp)).status).toBe(200);
});

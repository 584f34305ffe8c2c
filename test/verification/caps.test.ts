// paygate's own caps on one identity verification, whatever the PG allows: 5 wrong OTPs lock it
// (2405 with the PG's lockout code, no further PG call) and at most 5 resends reach the PG (then 2411,
// no PG call, not counted). Through the real API, worker, engine and sandbox; PG calls are counted
// by the sandbox itself (/_sandbox/stats). And the workflow change keeps old histories replayable.
import { readFile } from 'node:fs/promises';
import { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESENDS, MAX_WRONG_OTPS, verificationWorkflowId } from '../../src/verification/contract.js';
import { createKeyring, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { paygateWorkerOptions } from '../../src/platform/temporal/worker.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { activitiesRun, bounded, eventTypeNames, paygateWorkflowBundle } from '../helpers/temporal.js';
import { sandboxGet } from '../payments/key-in-fixtures.js';
import { expectApiError, verificationClient, type VerificationClient } from './fixtures.js';

const MINUTE = 60_000;
let t: TestApp;
let api: VerificationClient;

beforeAll(async () => {
  t = await buildTestApp({ withTemporal: true });
  api = verificationClient(t, await t.createProject());
});
afterAll(async () => {
  await t?.close();
});

const row = (receiptId: string) =>
  t.deps.database.db.selectFrom('verifications').selectAll().where('receipt_id', '=', receiptId).executeTakeFirstOrThrow();

/** How many requests of each operation reached the sandbox PG so far. */
async function pgCalls(): Promise<{ confirms: number; resends: number }> {
  const stats = await sandboxGet<{ requests: Record<string, number> }>(t.sandboxUrl, '/_sandbox/stats');
  return { confirms: stats.requests['otp.confirm'] ?? -1, resends: stats.requests['otp.resend'] ?? -1 };
}

const historyOf = (receiptId: string) => t.temporal!.client.workflow.getHandle(verificationWorkflowId(receiptId)).fetchHistory();

describe('wrong OTPs', () => {
  it(`${MAX_WRONG_OTPS} wrong OTPs lock the verification: 2405 with A204 and no further PG call, even with the right OTP`, async () => {
    const { receiptId, phone } = await api.requested();
    const otp = await api.latestOtp(phone);
    const wrong = otp === '000000' ? '000001' : '000000';
    const before = await pgCalls();
    for (let i = 0; i < MAX_WRONG_OTPS; i++) {
      const res = await api.confirm(receiptId, wrong);
      expectApiError(res, 500, 2405, 'AUTH_CONFIRM_FAILED');
      expect(res.body.pg_error_code).toBe('A202');
    }
    expect((await pgCalls()).confirms).toBe(before.confirms + MAX_WRONG_OTPS);
    const events = (await historyOf(receiptId)).events?.length;

    // The right OTP now: answered as the PG's lockout answers (same code, same text), by paygate.
    for (const attempt of [otp, otp, wrong]) {
      const locked = await api.confirm(receiptId, attempt);
      expectApiError(locked, 500, 2405, 'AUTH_CONFIRM_FAILED');
      expect(locked.body.pg_error_code).toBe('A204');
      expect(locked.body.message).toBe('too many wrong OTP attempts');
    }
    // and no resend either
    const resend = await api.realarm(receiptId);
    expectApiError(resend, 500, 2411, 'AUTH_REALARM_FAILED');
    expect(resend.body.pg_error_code).toBe('A204');
    expect((resend.body.payload as { message: string }).message).toMatch(/locked/);

    expect(await pgCalls()).toEqual({ confirms: before.confirms + MAX_WRONG_OTPS, resends: before.resends });
    // refused by the update validators: nothing was written to the workflow's history
    expect((await historyOf(receiptId)).events?.length).toBe(events);
    const locked = await row(receiptId);
    expect(locked.status).toBe(51);
    expect(locked.number_of_realarms).toBe(0);

    // Like the PG's own lockout: the receipt stays 51 until the confirm window ends, then -50.
    await t.temporal!.skipTime(31 * MINUTE);
    const deadline = Date.now() + 15_000;
    while ((await row(receiptId)).status !== -50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await row(receiptId)).status).toBe(-50);
  });

  it('fewer than 5 wrong OTPs do not lock: the right OTP still verifies', async () => {
    const { receiptId, phone } = await api.requested();
    const otp = await api.latestOtp(phone);
    const wrong = otp === '000000' ? '000001' : '000000';
    for (let i = 0; i < MAX_WRONG_OTPS - 1; i++)
      expectApiError(await api.confirm(receiptId, wrong), 500, 2405, 'AUTH_CONFIRM_FAILED');
    const ok = await api.confirm(receiptId, otp);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.status).toBe(12);
  });
});

describe('resends', () => {
  it(`at most ${MAX_RESENDS} resends reach the PG; the next is 2411 with a payload message, not counted, no SMS`, async () => {
    const { receiptId, phone } = await api.requested();
    const before = await pgCalls();
    for (let i = 1; i <= MAX_RESENDS; i++) {
      const res = await api.realarm(receiptId);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect((res.body.authenticate_data as Record<string, unknown>).number_of_realarms).toBe(i);
    }
    expect(await api.inbox(phone)).toHaveLength(1 + MAX_RESENDS);

    for (let i = 0; i < 2; i++) {
      const refused = await api.realarm(receiptId);
      expectApiError(refused, 500, 2411, 'AUTH_REALARM_FAILED');
      expect(refused.body).not.toHaveProperty('pg_error_code');
      expect((refused.body.payload as { message: string }).message).toBe(
        `At most ${MAX_RESENDS} resends per verification; request a new one.`,
      );
    }
    expect((await pgCalls()).resends).toBe(before.resends + MAX_RESENDS);
    expect(await api.inbox(phone)).toHaveLength(1 + MAX_RESENDS);
    expect((await row(receiptId)).number_of_realarms).toBe(MAX_RESENDS);

    // the verification itself goes on: the newest OTP confirms it
    const ok = await api.confirm(receiptId, await api.latestOtp(phone));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });
});

describe('replay compatibility', () => {
  // Recorded on the workflow code before the caps (6 resends and 7 confirms all reached the PG, then
  // the window expired), sealed with the key below. Its input carries no caps, so the workflow applies
  // none: were they applied, the 6th resend and 6th confirm would no longer schedule their activities
  // (nondeterminism).
  const FIXTURE_KEYRING = `replay-fixture:${Buffer.alloc(32, 7).toString('base64')}`;

  it('a history recorded before the caps (over both caps) still replays', async () => {
    const encoded = await readFile(new URL('./verification-history-before-caps.b64', import.meta.url), 'utf8');
    const history = proto.api.history.v1.History.decode(Buffer.from(encoded.trim(), 'base64'));
    const names = eventTypeNames(history.events ?? []);
    expect(names.filter((n) => n === 'WORKFLOW_EXECUTION_UPDATE_COMPLETED').length).toBeGreaterThanOrEqual(14);
    expect(names.filter((n) => n === 'MARKER_RECORDED')).toEqual([]);
    await bounded(
      Worker.runReplayHistory(
        {
          workflowBundle: await paygateWorkflowBundle(),
          ...paygateWorkerOptions(createKeyring(parseKeyringSpec(FIXTURE_KEYRING))),
        },
        history,
        'verification:pre-caps',
      ),
      30_000,
      'replay',
    );
  });

  it('a history recorded before the steps ran as local activities replays: each step an activity task', async () => {
    // Recorded on the workflow code before LOCAL_STEPS (request, a wrong OTP, a resend, the right OTP; the run then
    // waits in its lookup window), sealed with the key above for its workflow id. patched() answers false on it, so
    // each step replays as the activity task it was: two workflow tasks per update.
    const encoded = await readFile(new URL('./verification-history-before-local-activities.b64', import.meta.url), 'utf8');
    const history = proto.api.history.v1.History.decode(Buffer.from(encoded.trim(), 'base64'));
    expect(activitiesRun(history.events ?? [])).toEqual([
      'sendVerificationOtp',
      'confirmVerificationOtp',
      'resendVerificationOtp',
      'confirmVerificationOtp',
    ]);
    expect(eventTypeNames(history.events ?? []).filter((n) => n === 'WORKFLOW_TASK_COMPLETED')).toHaveLength(8);
    await bounded(
      Worker.runReplayHistory(
        {
          workflowBundle: await paygateWorkflowBundle(),
          ...paygateWorkerOptions(createKeyring(parseKeyringSpec(FIXTURE_KEYRING))),
        },
        history,
        'verification:cbd688ee2f7608e82981a9f2',
      ),
      30_000,
      'replay',
    );
  });

  it('a new run carries the caps in its (sealed) input, its markers are the two patches and one local activity per step reaching the PG, and its history replays', async () => {
    const { receiptId, phone } = await api.requested();
    const otp = await api.latestOtp(phone);
    for (let i = 0; i < MAX_RESENDS + 1; i++) await api.realarm(receiptId);
    for (let i = 0; i < MAX_WRONG_OTPS + 1; i++) await api.confirm(receiptId, otp === '000000' ? '000001' : '000000');
    const history = await historyOf(receiptId);
    // the SDK's patch markers (bound messages, the steps as local activities) hold only their names; the capped
    // resend and confirm were refused by the validators, so they left no marker
    const markers = (history.events ?? []).flatMap((e) => e.markerRecordedEventAttributes ?? []);
    const patches = markers.filter((m) => m.markerName === 'core_patch');
    expect(
      patches.map((m) => JSON.parse(Buffer.from(m.details!['patch-data']!.payloads![0]!.data!).toString('utf8')).id),
    ).toEqual(['paygate-bound-messages', 'verification-local-steps']);
    expect(activitiesRun(history.events ?? [])).toEqual([
      'local:sendVerificationOtp',
      ...Array.from({ length: MAX_RESENDS }, () => 'local:resendVerificationOtp'),
      ...Array.from({ length: MAX_WRONG_OTPS }, () => 'local:confirmVerificationOtp'),
    ]);
    expect(markers).toHaveLength(2 + 1 + MAX_RESENDS + MAX_WRONG_OTPS);
    const started = await t.temporal!.client.workflow.getHandle(verificationWorkflowId(receiptId)).describe();
    expect(started.status.name).toBe('RUNNING');
    expect((await row(receiptId)).number_of_realarms).toBe(MAX_RESENDS);
    await bounded(
      Worker.runReplayHistory(
        { workflowBundle: await paygateWorkflowBundle(), ...paygateWorkerOptions(t.deps.keyring!) },
        history,
        verificationWorkflowId(receiptId),
      ),
      30_000,
      'replay',
    );
  });
});

// The two 30-minute windows of an identity verification and the purge of CI/DI, proven with the
// embedded engine's virtual clock (time-skipping) through the real API, worker and database; and the
// update validators, which refuse without writing anything to the workflow's history.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verificationWorkflowId, confirmOtpUpdate, resendOtpUpdate } from '../../src/verification/contract.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { Worker } from '@temporalio/worker';
import { paygateWorkerOptions } from '../../src/platform/temporal/worker.js';
import { activitiesRun, bounded, eventTypeNames, paygateWorkflowBundle, type TestTemporal } from '../helpers/temporal.js';
import { expectApiError, verificationClient, type VerificationClient } from './fixtures.js';

/** paygate's update proof (UpdateProof): a fresh nonce, sealed by the codec like every argument */
const proof = () => ({ nonce: randomUUID() });

const MINUTE = 60_000;

let t: TestApp;
let temporal: TestTemporal;
let project: TestProject;
let api: VerificationClient;

beforeAll(async () => {
  t = await buildTestApp({ withTemporal: true });
  temporal = t.temporal!;
  project = await t.createProject();
  api = verificationClient(t, project);
});
afterAll(async () => {
  await t?.close();
});

const row = (receiptId: string) =>
  t.deps.database.db.selectFrom('verifications').selectAll().where('receipt_id', '=', receiptId).executeTakeFirstOrThrow();

/** Polls the database row until `done` holds (activities run right after the timer fires); bounded. */
async function rowWhen(receiptId: string, done: (r: Awaited<ReturnType<typeof row>>) => boolean, what: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const current = await row(receiptId);
    if (done(current)) return current;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; row: ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const handleOf = (receiptId: string) => temporal.client.workflow.getHandle(verificationWorkflowId(receiptId));

async function workflowStatus(receiptId: string): Promise<string> {
  return (await bounded(handleOf(receiptId).describe(), 10_000, 'describe')).status.name;
}

async function eventuallyClosed(receiptId: string): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const status = await workflowStatus(receiptId);
    if (status !== 'RUNNING') return status;
    if (Date.now() > deadline) throw new Error(`workflow of ${receiptId} still running`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function historyOf(receiptId: string): Promise<string[]> {
  return eventTypeNames(await temporal.rawHistory(verificationWorkflowId(receiptId)));
}

/** The update's refusal as the workflow wrote it: ApplicationFailure typed with the catalog name. */
async function updateRefusal(run: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await bounded(run(), 15_000, 'update');
  } catch (err) {
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    const cause = (err as WorkflowUpdateFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    return (cause as ApplicationFailure).type ?? undefined;
  }
  return undefined;
}

const updateEvents = (names: string[]) => names.filter((n) => n.startsWith('WORKFLOW_EXECUTION_UPDATE_'));

describe('one workflow per verification', () => {
  it('the request starts verification:<receipt_id>; one activity per step sends the SMS and stores the tid; resend and confirm are updates', async () => {
    const { receiptId, phone } = await api.requested();
    expect((await api.realarm(receiptId)).status).toBe(200);
    expect((await api.confirm(receiptId, await api.latestOtp(phone))).status).toBe(200);
    const description = await handleOf(receiptId).describe();
    expect(description.workflowId).toBe(`verification:${receiptId}`);
    expect(description.type).toBe('verificationWorkflow');
    expect(description.taskQueue).toBe(temporal.taskQueue);
    expect(description.status.name).toBe('RUNNING'); // the lookup window's timer

    const events = await temporal.rawHistory(verificationWorkflowId(receiptId));
    // one local activity per step: the gateway call and its write together, in the update's workflow task
    expect(activitiesRun(events)).toEqual([
      'local:sendVerificationOtp',
      'local:resendVerificationOtp',
      'local:confirmVerificationOtp',
    ]);
    const updates = events.flatMap((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name ?? []);
    expect(updates).toEqual(['otpSent', 'resendOtp', 'confirmOtp']);
    // one workflow task per update: the start's (which sends and answers otpSent), the resend's, the confirm's
    expect(eventTypeNames(events).filter((n) => n === 'WORKFLOW_TASK_COMPLETED')).toHaveLength(3);
  });
});

describe("a step's write that fails after its gateway call", () => {
  it('is made by the workflow instead: the flow still answers 200 and the row holds the tid, the count and the person', async () => {
    // Each step's own write fails once (a database hiccup): a trigger raises on the first write of each kind;
    // sequences count the writes because they are not rolled back with the failing statement.
    const db = t.deps.database.db;
    const sequences = ['fail_otp_sent', 'fail_realarm', 'fail_confirmed'];
    for (const name of sequences) await sql`create sequence ${sql.raw(name)}`.execute(db);
    await sql`
      create function fail_first_step_writes() returns trigger language plpgsql as $$
      begin
        if new.status = 51 and old.status <> 51 and nextval('fail_otp_sent') = 1 then raise exception 'injected'; end if;
        if new.number_of_realarms > old.number_of_realarms and nextval('fail_realarm') = 1 then raise exception 'injected'; end if;
        if new.status = 12 and old.status <> 12 and nextval('fail_confirmed') = 1 then raise exception 'injected'; end if;
        return new;
      end $$`.execute(db);
    await sql`create trigger fail_first_step_writes before update on verifications
      for each row execute function fail_first_step_writes()`.execute(db);
    try {
      const { receiptId, phone } = await api.requested();
      expect((await row(receiptId)).tid).toBeTruthy();
      const resent = await api.realarm(receiptId);
      expect(resent.status, JSON.stringify(resent.body)).toBe(200);
      expect((await row(receiptId)).number_of_realarms).toBe(1);
      const confirmed = await api.confirm(receiptId, await api.latestOtp(phone));
      expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
      expect(confirmed.body.status).toBe(12);
      const stored = await row(receiptId);
      expect(stored.status).toBe(12);
      expect(stored.unique_sealed).toBeTruthy();
      expect((await api.certificate(receiptId)).status).toBe(200);

      const events = await temporal.rawHistory(verificationWorkflowId(receiptId));
      expect(activitiesRun(events)).toEqual([
        'local:sendVerificationOtp',
        'recordVerificationOtpSent',
        'local:resendVerificationOtp',
        'recordVerificationRealarm',
        'local:confirmVerificationOtp',
        'recordVerificationConfirmed',
      ]);
    } finally {
      await sql`drop trigger fail_first_step_writes on verifications`.execute(db);
      await sql`drop function fail_first_step_writes()`.execute(db);
      for (const name of sequences) await sql`drop sequence ${sql.raw(name)}`.execute(db);
    }
  });
});

describe('the confirm window: 30 minutes from requested_at', () => {
  it('29 minutes after the request the OTP is still confirmed; extra.timeout is stored and never enforced', async () => {
    const { receiptId, phone } = await api.requested({ extra: { timeout: 1 } });
    expect((await row(receiptId)).extra).toEqual({ timeout: 1 });
    await temporal.skipTime(29 * MINUTE);
    expect((await row(receiptId)).status).toBe(51);
    const resent = await api.realarm(receiptId);
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    const confirmed = await api.confirm(receiptId, await api.latestOtp(phone));
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body.status).toBe(12);
    const elapsed = Date.parse(confirmed.body.authenticated_at as string) - Date.parse(confirmed.body.requested_at as string);
    expect(elapsed).toBeGreaterThanOrEqual(29 * MINUTE - 1000);
    expect(elapsed).toBeLessThan(30 * MINUTE);
    expect((await api.certificate(receiptId)).status).toBe(200);
  });

  it('31 minutes after the request the verification is expired (-50): confirm and resend give 2404, lookup 2408', async () => {
    const { receiptId, phone } = await api.requested();
    const otp = await api.latestOtp(phone);
    await temporal.skipTime(31 * MINUTE);
    const expired = await rowWhen(receiptId, (r) => r.status === -50, 'status -50');
    expect(expired.expired_at).not.toBeNull();
    expect(expired.authenticated_at).toBeNull();
    expectApiError(await api.confirm(receiptId, otp), 400, 2404, 'AUTH_NOT_READY');
    expectApiError(await api.realarm(receiptId), 400, 2404, 'AUTH_NOT_READY');
    expectApiError(await api.certificate(receiptId), 400, 2408, 'AUTH_NOT_CONFIRMED');
    expect(await eventuallyClosed(receiptId)).toBe('COMPLETED');
    const after = await row(receiptId);
    expect(after.status).toBe(-50);
    expect(after.number_of_realarms).toBe(0);
    expect(after.name_sealed).toBeNull();
  });

  it('a resend does not extend the window: resent at 29 minutes, the OTP is refused at 31', async () => {
    const { receiptId, phone } = await api.requested();
    await temporal.skipTime(29 * MINUTE);
    expect((await api.realarm(receiptId)).status).toBe(200);
    const otp = await api.latestOtp(phone);
    await temporal.skipTime(2 * MINUTE);
    await rowWhen(receiptId, (r) => r.status === -50, 'status -50');
    expectApiError(await api.confirm(receiptId, otp), 400, 2404, 'AUTH_NOT_READY');
    expect((await row(receiptId)).number_of_realarms).toBe(1);
  });

  it('a failed send (-12) closes its workflow once the API has read the failure', async () => {
    const res = await api.request({ phone: '01000000000' });
    expectApiError(res, 400, 2402, 'AUTH_CONFIRM_READY_FAILED');
    const failed = await t.deps.database.db
      .selectFrom('verifications')
      .select('receipt_id')
      .where('application_id', '=', project.applicationId)
      .where('status', '=', -12)
      .executeTakeFirstOrThrow();
    expect(await eventuallyClosed(failed.receipt_id)).toBe('COMPLETED');
  });
});

describe('the lookup window: 30 minutes from authenticated_at, then CI and DI are purged', () => {
  it('looks up at 29 minutes; at 31 minutes gives 2409 and the row has lost unique and di only', async () => {
    const { receiptId, body: confirmed } = await api.verified();
    const before = await row(receiptId);
    expect(before.unique_sealed).not.toBeNull();
    expect(before.di_sealed).not.toBeNull();

    await temporal.skipTime(29 * MINUTE);
    const inWindow = await api.certificate(receiptId);
    expect(inWindow.status).toBe(200);
    expect(inWindow.body).toEqual(confirmed);
    expect((await row(receiptId)).identifiers_purged_at).toBeNull();

    await temporal.skipTime(2 * MINUTE);
    expectApiError(await api.certificate(receiptId), 400, 2409, 'AUTH_EXPIRED');
    const purged = await rowWhen(receiptId, (r) => r.identifiers_purged_at !== null, 'identifiers_purged_at');
    expect(purged.unique_sealed).toBeNull();
    expect(purged.di_sealed).toBeNull();
    // the rest of the receipt stays
    expect(purged.status).toBe(12);
    expect(purged.authenticated_at?.getTime()).toBe(before.authenticated_at?.getTime());
    expect(purged.name_sealed).toBe(before.name_sealed);
    expect(purged.phone_sealed).toBe(before.phone_sealed);
    expect(purged.birth_sealed).toBe(before.birth_sealed);
    expect(purged.tid).toBe(before.tid);
    expect(purged.gender).toBe(before.gender);
    // still verified: confirm and resend say 2404, the lookup keeps saying 2409
    expectApiError(await api.confirm(receiptId, '123456'), 400, 2404, 'AUTH_NOT_READY');
    expectApiError(await api.realarm(receiptId), 400, 2404, 'AUTH_NOT_READY');
    expectApiError(await api.certificate(receiptId), 400, 2409, 'AUTH_EXPIRED');
    expect(await eventuallyClosed(receiptId)).toBe('COMPLETED');
    expect(await historyOf(receiptId)).toContain('TIMER_FIRED');
  });

  it('the purge timer runs from authenticated_at, not from requested_at', async () => {
    const { receiptId, phone } = await api.requested();
    await temporal.skipTime(20 * MINUTE);
    expect((await api.confirm(receiptId, await api.latestOtp(phone))).status).toBe(200);
    // 31 minutes after the request, 11 after confirmation: still available
    await temporal.skipTime(11 * MINUTE);
    expect((await api.certificate(receiptId)).status).toBe(200);
    expect((await row(receiptId)).unique_sealed).not.toBeNull();
    await temporal.skipTime(20 * MINUTE);
    expectApiError(await api.certificate(receiptId), 400, 2409, 'AUTH_EXPIRED');
    await rowWhen(
      receiptId,
      (r) => r.identifiers_purged_at !== null && r.unique_sealed === null && r.di_sealed === null,
      'the purge',
    );
  });
});

describe('determinism', () => {
  it('the recorded history of a whole verification (resend, wrong OTP, confirm, purge) replays on the workflow code', async () => {
    const { receiptId, phone } = await api.requested();
    expect((await api.realarm(receiptId)).status).toBe(200);
    const otp = await api.latestOtp(phone);
    expect((await api.confirm(receiptId, otp === '000000' ? '000001' : '000000')).status).toBe(500);
    expect((await api.confirm(receiptId, otp)).status).toBe(200);
    await temporal.skipTime(31 * MINUTE);
    expect(await eventuallyClosed(receiptId)).toBe('COMPLETED');
    const history = await handleOf(receiptId).fetchHistory();
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

describe('durability', () => {
  it('after a worker restart (empty cache) the verifications continue from their history: resend, confirm, purge', async () => {
    const waiting = await api.requested();
    const verified = await api.verified();
    expect((await api.realarm(waiting.receiptId)).status).toBe(200);
    await temporal.restartWorker();

    const resent = await api.realarm(waiting.receiptId);
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect((resent.body.authenticate_data as Record<string, unknown>).number_of_realarms).toBe(2);
    expectApiError(await api.realarm(verified.receiptId), 400, 2404, 'AUTH_NOT_READY');
    expect((await api.confirm(waiting.receiptId, await api.latestOtp(waiting.phone))).status).toBe(200);

    await temporal.skipTime(31 * MINUTE);
    for (const { receiptId } of [waiting, verified]) {
      await rowWhen(receiptId, (r) => r.identifiers_purged_at !== null && r.unique_sealed === null, `the purge of ${receiptId}`);
      expectApiError(await api.certificate(receiptId), 400, 2409, 'AUTH_EXPIRED');
      expect(await eventuallyClosed(receiptId)).toBe('COMPLETED');
    }
  });
});

describe('concurrency', () => {
  it('concurrent resends run one at a time: the updates answer 1, 2, 3 and every one is counted, up to the cap of 5', async () => {
    const { receiptId, phone } = await api.requested();
    const handle = handleOf(receiptId);
    const direct = await bounded(
      Promise.all([
        handle.executeUpdate(resendOtpUpdate, { args: [proof()] }),
        handle.executeUpdate(resendOtpUpdate, { args: [proof()] }),
        handle.executeUpdate(resendOtpUpdate, { args: [proof()] }),
      ]),
      15_000,
      'three resends',
    );
    expect(direct.map((r) => r.numberOfRealarms).sort()).toEqual([1, 2, 3]);
    expect((await row(receiptId)).number_of_realarms).toBe(3);

    // two more reach the cap (5); a third arriving with them is refused by the cap (see verification-caps)
    const overHttp = await Promise.all([api.realarm(receiptId), api.realarm(receiptId), api.realarm(receiptId)]);
    expect(overHttp.map((r) => r.status).sort()).toEqual([200, 200, 500]);
    expect(overHttp.find((r) => r.status === 500)?.body.code).toBe(2411);
    // each response renders the row after its own resend; the last one sees all five
    expect(
      Math.max(
        ...overHttp.map((r) =>
          Number((r.body.authenticate_data as Record<string, unknown> | undefined)?.number_of_realarms ?? 0),
        ),
      ),
    ).toBe(5);
    expect((await row(receiptId)).number_of_realarms).toBe(5);
    expect(await api.inbox(phone)).toHaveLength(6);
  });

  it('two concurrent confirms with the right OTP: exactly one verifies, the other is refused with 2404', async () => {
    const direct = await api.requested();
    const otp = await api.latestOtp(direct.phone);
    const handle = handleOf(direct.receiptId);
    const outcomes = await bounded(
      Promise.allSettled([
        handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp }] }),
        handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp }] }),
      ]),
      15_000,
      'two confirms',
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const rejected = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(((rejected.reason as WorkflowUpdateFailedError).cause as ApplicationFailure).type).toBe('AUTH_NOT_READY');
    expect((await row(direct.receiptId)).status).toBe(12);

    const { receiptId, phone } = await api.requested();
    const code = await api.latestOtp(phone);
    const results = await Promise.all([api.confirm(receiptId, code), api.confirm(receiptId, code)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(results.find((r) => r.status === 400)!.body.code).toBe(2404);
    expect((await row(receiptId)).status).toBe(12);
  });
});

describe('update validators reject without writing history', () => {
  it('a resend of a pass verification (2412) and a malformed OTP leave no update event', async () => {
    const { receiptId } = await api.requested({ authenticate_type: 'pass' });
    const before = await historyOf(receiptId);
    expect(updateEvents(before)).toEqual(['WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'WORKFLOW_EXECUTION_UPDATE_COMPLETED']); // otpSent

    expectApiError(await api.realarm(receiptId), 400, 2412, 'AUTH_REALARM_NOT_ABLE');
    expect(await updateRefusal(() => handleOf(receiptId).executeUpdate(resendOtpUpdate, { args: [proof()] }))).toBe(
      'AUTH_REALARM_NOT_ABLE',
    );
    expect(await historyOf(receiptId)).toEqual(before);

    const sms = await api.requested();
    const smsBefore = await historyOf(sms.receiptId);
    expect(
      await updateRefusal(() => handleOf(sms.receiptId).executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: 'abc' }] })),
    ).toBe('AUTH_CONFIRM_FAILED');
    expect(await historyOf(sms.receiptId)).toEqual(smsBefore);
  });

  it('confirm or resend of a verified (12) receipt is refused (2404) without history; an accepted resend does write', async () => {
    const { receiptId, phone } = await api.requested();
    const initial = await historyOf(receiptId);
    // control: an accepted update is recorded
    expect((await api.realarm(receiptId)).status).toBe(200);
    const afterResend = await historyOf(receiptId);
    expect(updateEvents(afterResend).length).toBe(updateEvents(initial).length + 2);

    expect((await api.confirm(receiptId, await api.latestOtp(phone))).status).toBe(200);
    const verified = await historyOf(receiptId);
    expect(
      await updateRefusal(() => handleOf(receiptId).executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] })),
    ).toBe('AUTH_NOT_READY');
    expect(await updateRefusal(() => handleOf(receiptId).executeUpdate(resendOtpUpdate, { args: [proof()] }))).toBe(
      'AUTH_NOT_READY',
    );
    expectApiError(await api.confirm(receiptId, '123456'), 400, 2404, 'AUTH_NOT_READY');
    expect(await historyOf(receiptId)).toEqual(verified);
    expect(updateEvents(verified)).not.toContain('WORKFLOW_EXECUTION_UPDATE_REJECTED');
  });

  it('after the confirm window no confirm update is accepted and the history gains no update event', async () => {
    const { receiptId } = await api.requested();
    await temporal.skipTime(31 * MINUTE);
    await rowWhen(receiptId, (r) => r.status === -50, 'status -50');
    let refused: unknown;
    try {
      await bounded(
        handleOf(receiptId).executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] }),
        15_000,
        'update',
      );
    } catch (err) {
      refused = err;
    }
    // refused by the validator (AUTH_NOT_READY) or, once the workflow has completed, by the engine
    expect(refused).toBeInstanceOf(Error);
    if (refused instanceof WorkflowUpdateFailedError) expect((refused.cause as ApplicationFailure).type).toBe('AUTH_NOT_READY');
    expect((await row(receiptId)).status).toBe(-50);
    expect(updateEvents(await historyOf(receiptId))).toEqual([
      'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
    ]);
  });
});

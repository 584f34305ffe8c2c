// The verification workflow's state machine with stub activities (no database, no PG, no API): send -> confirm,
// wrong OTPs and the lock, resends and their cap, the 30-minute confirm window, the lookup window and the purge,
// send failures, and the update proofs. Virtual time on the project's engine; payloads sealed by paygate's codec.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VerificationActivities } from '../../src/activities/verification.js';
import { GATEWAY_DECLINED, type GatewayDeclinedDetails } from '../../src/gateways/declined.js';
import {
  confirmOtpUpdate,
  MAX_RESENDS,
  MAX_WRONG_OTPS,
  otpSentUpdate,
  resendOtpUpdate,
  VERIFICATION_CAPS,
  VERIFICATION_WINDOW_MS,
  VERIFICATION_WORKFLOW_TYPE,
  type VerificationInput,
  verificationWorkflowId,
} from '../../src/verification/contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../../src/platform/temporal/messages.js';
import type { VerifiedPerson } from '../../src/gateways/rules.js';
import type { verificationWorkflow } from '../../src/workflows/verification.js';
import {
  ActivityStubs,
  refusal,
  startWorkflowTestEnv,
  timerDurationsMs,
  type WorkerScope,
  type WorkflowTestEnv,
} from '../helpers/workflow-env.js';

const MINUTE = 60_000;
/**
 * A step's local activity runs after its workflow task took its time, so the authenticated_at it returns may be a
 * little past the workflow's clock, and the lookup window's timer (to authenticated_at + 30 minutes) that much longer.
 */
const IN_TASK_SLACK_MS = 5_000;
const TID = 'tid-0001';
const PERSON = { name: '홍길동', phone: '01012345678', identityNo: '9001011', carrier: 'SKT' } as const;
const VERIFIED: VerifiedPerson = {
  name: PERSON.name,
  phone: PERSON.phone,
  birth: '19900101',
  gender: 1,
  foreigner: '0',
  carrier: 'SKT',
  ci: 'ci-value',
  di: 'di-value',
};

type Stubs = ActivityStubs<VerificationActivities>;
const proof = () => ({ nonce: randomUUID() });
/** what a step's local activity carries beside its input: the workflow's time, for the sandbox clock */
const stamped = { workflowTimeMs: expect.any(Number) };
const declined = (pgErrorCode: string, pgMessage: string) =>
  ApplicationFailure.create({
    type: GATEWAY_DECLINED,
    message: pgMessage,
    nonRetryable: true,
    details: [{ pgErrorCode, pgMessage } satisfies GatewayDeclinedDetails],
  });

describe('verification workflow (stub activities)', () => {
  let t: WorkflowTestEnv;
  beforeAll(async () => {
    t = await startWorkflowTestEnv();
  });
  afterAll(async () => {
    await t?.close();
  });

  const input = async (overrides: Partial<VerificationInput> = {}): Promise<VerificationInput> => ({
    receiptId: `rcpt-${randomUUID()}`,
    merchantId: 'app-1',
    pg: 'sandbox_identity',
    type: 'sms',
    requestedAt: new Date(await t.now()).toISOString(),
    clientIp: '203.0.113.7',
    person: PERSON,
    caps: VERIFICATION_CAPS,
    oneActivityPerStep: true,
    ...overrides,
  });

  /** The gateway as the tests want it by default: sends, resends and confirms, each step's write made. */
  const happyStubs = (overrides: Partial<VerificationActivities> = {}): Stubs =>
    new ActivityStubs<VerificationActivities>({
      sendVerificationOtp: async () => ({ tid: TID, recorded: true }),
      resendVerificationOtp: async () => ({ recorded: true }),
      confirmVerificationOtp: async () => ({ authenticatedAt: new Date(Date.now()).toISOString(), recorded: true }),
      recordVerificationOtpSent: async () => undefined,
      recordVerificationRequestFailed: async () => undefined,
      recordVerificationRealarm: async () => undefined,
      recordVerificationConfirmed: async () => undefined,
      recordVerificationExpired: async () => undefined,
      purgeVerificationIdentifiers: async () => undefined,
      ...overrides,
    });

  const start = (scope: WorkerScope, args: VerificationInput) =>
    scope.start<typeof verificationWorkflow>(VERIFICATION_WORKFLOW_TYPE, [args], verificationWorkflowId(args.receiptId));

  it('a run whose OTP an upstream provider sent (sentTid): no send step, it awaits the OTP under that tid', async () => {
    const stubs = happyStubs();
    await t.withWorker(stubs, async (scope) => {
      const args = await input({ sentTid: 'provider-receipt-1' });
      const handle = await start(scope, args);
      expect(await handle.executeUpdate(otpSentUpdate)).toEqual({ tid: 'provider-receipt-1' });
      await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] });
      expect(stubs.names()).toEqual(['confirmVerificationOtp']);
      expect(stubs.inputsOf('confirmVerificationOtp')).toEqual([
        {
          receiptId: args.receiptId,
          pg: 'sandbox_identity',
          upstreamProject: 'app-1',
          tid: 'provider-receipt-1',
          otp: '123456',
          ...stamped,
        },
      ]);
    });
  });

  it('sends, confirms the right OTP, then purges CI/DI once the lookup window has passed', async () => {
    const stubs = happyStubs();
    await t.withWorker(stubs, async (scope) => {
      const args = await input();
      const handle = await start(scope, args);
      expect(await handle.executeUpdate(otpSentUpdate)).toEqual({ tid: TID });
      const confirmed = await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] });
      expect(confirmed).toEqual({ authenticatedAt: expect.any(String) });
      expect(stubs.names()).toEqual(['sendVerificationOtp', 'confirmVerificationOtp']);
      await handle.result();
      expect(stubs.names()).toEqual(['sendVerificationOtp', 'confirmVerificationOtp', 'purgeVerificationIdentifiers']);
      expect(stubs.inputsOf('sendVerificationOtp')).toEqual([
        {
          receiptId: args.receiptId,
          merchantId: 'app-1',
          pg: 'sandbox_identity',
          type: 'sms',
          person: PERSON,
          clientIp: '203.0.113.7',
          ...stamped,
        },
      ]);
      expect(stubs.inputsOf('confirmVerificationOtp')).toEqual([
        { receiptId: args.receiptId, pg: 'sandbox_identity', tid: TID, otp: '123456', ...stamped },
      ]);
      expect(stubs.inputsOf('purgeVerificationIdentifiers')).toEqual([{ receiptId: args.receiptId }]);
      // the steps ran as local activities in their updates' workflow tasks; the purge, on its timer, as a task
      expect(stubs.calls.map((c) => [c.name, c.local])).toEqual([
        ['sendVerificationOtp', true],
        ['confirmVerificationOtp', true],
        ['purgeVerificationIdentifiers', false],
      ]);
      // the confirm window's timer (from requested_at), then the lookup window's (from authenticated_at)
      const [confirmWindow, lookupWindow] = await timerDurationsMs(handle);
      expect(confirmWindow).toBeGreaterThan(VERIFICATION_WINDOW_MS - MINUTE);
      expect(confirmWindow).toBeLessThanOrEqual(VERIFICATION_WINDOW_MS);
      expect(lookupWindow).toBeGreaterThan(VERIFICATION_WINDOW_MS - MINUTE);
      expect(lookupWindow).toBeLessThanOrEqual(VERIFICATION_WINDOW_MS + IN_TASK_SLACK_MS);
    });
  });

  it("runs on paygate's codec: the stored history holds the person, the OTP and the tid only sealed", async () => {
    const stubs = happyStubs();
    await t.withWorker(stubs, async (scope) => {
      const args = await input();
      const handle = await start(scope, args);
      await handle.executeUpdate(otpSentUpdate);
      await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '482913' }] });
      const events = await t.rawHistory(handle.workflowId);
      // every byte string of the history as text: an unsealed payload would show its JSON here
      const texts: string[] = [];
      const collect = (v: unknown): void => {
        if (v instanceof Uint8Array) texts.push(Buffer.from(v).toString('utf8'));
        else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) collect(x);
      };
      collect(events);
      const stored = texts.join('\n');
      for (const secret of [PERSON.identityNo, PERSON.phone, PERSON.name, '482913', TID]) expect(stored).not.toContain(secret);
      expect(stored).toContain('binary/encrypted');
      const sealed = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
      expect(Buffer.from(sealed?.metadata?.encoding ?? []).toString()).toBe('binary/encrypted');
      // and the stubs got everything in the clear, through the same data converter
      expect(stubs.inputsOf('sendVerificationOtp')[0]?.person).toEqual(PERSON);
    });
  });

  it('confirmed at 29 minutes: the lookup window runs from authenticated_at (not requested_at), then the purge', async () => {
    // the PG's confirm answer says it authenticated 3 minutes before the workflow hears of it
    const stubs = happyStubs({
      confirmVerificationOtp: async () => ({
        authenticatedAt: new Date((await t.now()) - 3 * MINUTE).toISOString(),
        recorded: true,
      }),
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input());
      await handle.executeUpdate(otpSentUpdate);
      await t.skipTime(29 * MINUTE);
      const { authenticatedAt } = await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] });
      const lookupWindow = (await timerDurationsMs(handle))[1]!;
      expect(lookupWindow).toBeGreaterThan(27 * MINUTE - 10_000);
      expect(lookupWindow).toBeLessThanOrEqual(27 * MINUTE + IN_TASK_SLACK_MS);

      await t.skipTime(26 * MINUTE);
      expect(stubs.names()).not.toContain('purgeVerificationIdentifiers');
      await t.skipTime(2 * MINUTE);
      expect(stubs.names()).toEqual(['sendVerificationOtp', 'confirmVerificationOtp', 'purgeVerificationIdentifiers']);
      await handle.result();
      expect(Date.parse(authenticatedAt) + VERIFICATION_WINDOW_MS).toBeLessThanOrEqual(await t.now());
    });
  });

  it('a wrong OTP is refused with the PG code and counted; a malformed one never reaches the PG; the right one verifies', async () => {
    let answers = 0;
    const stubs = happyStubs({
      confirmVerificationOtp: async () => {
        if (++answers === 1) throw declined('A201', 'the OTP does not match');
        return { authenticatedAt: new Date(await t.now()).toISOString(), recorded: true };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input());
      await handle.executeUpdate(otpSentUpdate);

      const wrong = await refusal(handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '000000' }] }));
      expect(wrong.type).toBe('AUTH_CONFIRM_FAILED');
      expect(wrong.message).toBe('the OTP does not match');
      expect(wrong.details?.[0]).toEqual({ pgErrorCode: 'A201' });

      const malformed = await refusal(handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '12a456' }] }));
      expect(malformed.type).toBe('AUTH_CONFIRM_FAILED');
      expect(malformed.message).toBe('the OTP must be 6 digits');

      await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] });
      expect(stubs.inputsOf('confirmVerificationOtp').map((c) => c.otp)).toEqual(['000000', '123456']);
      // verified: neither a confirm nor a resend is accepted any more
      expect((await refusal(handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] }))).type).toBe(
        'AUTH_NOT_READY',
      );
      expect((await refusal(handle.executeUpdate(resendOtpUpdate, { args: [proof()] }))).type).toBe('AUTH_NOT_READY');
      expect(stubs.names().filter((n) => n === 'confirmVerificationOtp')).toHaveLength(2);
      expect(stubs.names()).not.toContain('resendVerificationOtp');
    });
  });

  it(`${MAX_WRONG_OTPS} refusals by the PG lock it (A204, no PG call), an unreachable PG's failure does not count`, async () => {
    let answers = 0;
    const stubs = happyStubs({
      confirmVerificationOtp: async () => {
        answers++;
        // the first confirm finds the PG unreachable (every retry), the next ones are refused by it
        if (answers <= 3) throw new Error('connect ECONNREFUSED');
        throw declined('A201', 'the OTP does not match');
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input());
      await handle.executeUpdate(otpSentUpdate);
      const confirm = () => handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '111111' }] });

      // the activity's retries wait on virtual time
      const [unreachable] = await Promise.all([refusal(confirm()), t.skipTime(10_000)]);
      // an outage, not the refusal 2405 ("wrong or expired"): the OTP was not judged, and nothing counts to the lock
      expect(unreachable.type).toBe('GATEWAY_UNAVAILABLE');
      expect(unreachable.message).toContain('the OTP was not checked');
      expect(unreachable.details?.[0]).toEqual({});
      expect(stubs.calls.filter((c) => c.name === 'confirmVerificationOtp').map((c) => c.attempt)).toEqual([1, 2, 3]);

      for (let i = 0; i < MAX_WRONG_OTPS; i++) {
        const wrong = await refusal(confirm());
        expect(wrong.details?.[0]).toEqual({ pgErrorCode: 'A201' });
      }
      const pgCalls = stubs.names().length;
      expect(pgCalls).toBe(1 + 3 + MAX_WRONG_OTPS);

      const locked = await refusal(handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] }));
      expect(locked.type).toBe('AUTH_CONFIRM_FAILED');
      expect(locked.details?.[0]).toEqual({ pgErrorCode: 'A204' });
      const resend = await refusal(handle.executeUpdate(resendOtpUpdate, { args: [proof()] }));
      expect(resend.type).toBe('AUTH_REALARM_FAILED');
      expect(resend.details?.[0]).toMatchObject({ pgErrorCode: 'A204', payloadMessage: expect.stringContaining('locked') });
      expect(stubs.names()).toHaveLength(pgCalls);
    });
  });

  it(`resends count up to ${MAX_RESENDS} (a failed one counts too, one at a time); the next is refused without a PG call`, async () => {
    let resends = 0;
    const stubs = happyStubs({
      resendVerificationOtp: async () => {
        resends++;
        if (resends === 3) throw declined('A301', 'too many SMS');
        // the fourth's write failed in the activity: the workflow makes it
        return { recorded: resends !== 4 };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const args = await input();
      const handle = await start(scope, args);
      await handle.executeUpdate(otpSentUpdate);
      const resend = () => handle.executeUpdate(resendOtpUpdate, { args: [proof()] });

      // two at once: each is counted, one after the other
      const together = await Promise.all([resend(), resend()]);
      expect(together.map((r) => r.numberOfRealarms).sort()).toEqual([1, 2]);
      const failed = await refusal(resend());
      expect(failed.type).toBe('AUTH_REALARM_FAILED');
      expect(failed.details?.[0]).toEqual({ pgErrorCode: 'A301' });
      expect(await resend()).toEqual({ numberOfRealarms: 4 });
      expect(await resend()).toEqual({ numberOfRealarms: 5 });

      const capped = await refusal(resend());
      expect(capped.type).toBe('AUTH_REALARM_FAILED');
      expect(capped.details?.[0]).toEqual({
        payloadMessage: `At most ${MAX_RESENDS} resends per verification; request a new one.`,
      });

      expect(stubs.inputsOf('resendVerificationOtp')).toEqual(
        [1, 2, 3, 4, 5].map((n) => ({
          receiptId: args.receiptId,
          numberOfRealarms: n,
          pg: 'sandbox_identity',
          tid: TID,
          idempotencyKey: `verification:${args.receiptId}:resend:${n}`,
          ...stamped,
        })),
      );
      // the failed resend's and the unrecorded one's counts are written by the workflow
      expect(stubs.inputsOf('recordVerificationRealarm')).toEqual([
        { receiptId: args.receiptId, numberOfRealarms: 3 },
        { receiptId: args.receiptId, numberOfRealarms: 4 },
      ]);
      // the cap refuses resends, not confirms
      await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] });
    });
  });

  it('a pass verification is not resent (2412) and confirms without a 6-digit OTP', async () => {
    const stubs = happyStubs();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input({ type: 'pass' }));
      await handle.executeUpdate(otpSentUpdate);
      expect((await refusal(handle.executeUpdate(resendOtpUpdate, { args: [proof()] }))).type).toBe('AUTH_REALARM_NOT_ABLE');
      await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '' }] });
      expect(stubs.names()).toEqual(['sendVerificationOtp', 'confirmVerificationOtp']);
    });
  });

  it('the confirm window ends 30 minutes after requested_at (a resend does not extend it): expired, no purge', async () => {
    const stubs = happyStubs();
    await t.withWorker(stubs, async (scope) => {
      const args = await input();
      const handle = await start(scope, args);
      await handle.executeUpdate(otpSentUpdate);
      await t.skipTime(29 * MINUTE);
      expect(await handle.executeUpdate(resendOtpUpdate, { args: [proof()] })).toEqual({ numberOfRealarms: 1 });
      expect(stubs.names()).not.toContain('recordVerificationExpired');

      await t.skipTime(MINUTE + 1_000);
      expect(stubs.names()).toEqual(['sendVerificationOtp', 'resendVerificationOtp', 'recordVerificationExpired']);
      expect(stubs.inputsOf('recordVerificationExpired')).toEqual([{ receiptId: args.receiptId }]);
      await handle.result();
      expect((await handle.describe()).status.name).toBe('COMPLETED');
      expect(await timerDurationsMs(handle)).toHaveLength(1);
      // nothing awaits an OTP any more
      await expect(handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] })).rejects.toThrow();
      expect(stubs.names()).not.toContain('confirmVerificationOtp');
    });
  });

  it('a send the PG refuses: the API reads AUTH_CONFIRM_READY_FAILED with the PG code, the failure is recorded, the run ends', async () => {
    const stubs = happyStubs({
      sendVerificationOtp: async () => {
        throw declined('A105', 'the phone cannot receive SMS');
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const args = await input();
      const handle = await start(scope, args);
      const failed = await refusal(handle.executeUpdate(otpSentUpdate));
      expect(failed.type).toBe('AUTH_CONFIRM_READY_FAILED');
      expect(failed.message).toBe('the phone cannot receive SMS');
      expect(failed.details?.[0]).toEqual({ pgErrorCode: 'A105' });
      await handle.result();
      expect(stubs.names()).toEqual(['sendVerificationOtp', 'recordVerificationRequestFailed']);
      expect(stubs.inputsOf('recordVerificationRequestFailed')).toEqual([
        { receiptId: args.receiptId, errorName: 'AUTH_CONFIRM_READY_FAILED', pgErrorCode: 'A105' },
      ]);
      // the run waited for the API's read, not for its 5-minute bound
      expect(await t.now()).toBeLessThan(Date.parse(args.requestedAt) + MINUTE);
    });
  });

  it('an unreachable PG (every retry) fails the send as AUTH_REQUEST_FAILED; unread, the run ends after 5 minutes', async () => {
    const stubs = happyStubs({
      sendVerificationOtp: async () => {
        throw new Error('connect ECONNREFUSED');
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const args = await input();
      const handle = await start(scope, args);
      await handle.result();
      expect(stubs.calls.map((c) => [c.name, c.attempt])).toEqual([
        ['sendVerificationOtp', 1],
        ['sendVerificationOtp', 2],
        ['sendVerificationOtp', 3],
        ['recordVerificationRequestFailed', 1],
      ]);
      expect(stubs.inputsOf('recordVerificationRequestFailed')).toEqual([
        { receiptId: args.receiptId, errorName: 'AUTH_REQUEST_FAILED', pgErrorCode: undefined },
      ]);
      expect(await timerDurationsMs(handle)).toEqual([5 * MINUTE]);
    });
  });

  it('a step whose own write failed: the workflow writes the tid and the verified person itself', async () => {
    const stubs = happyStubs({
      sendVerificationOtp: async () => ({ tid: TID, recorded: false }),
      confirmVerificationOtp: async () => ({ authenticatedAt: '2030-01-01T00:00:00.000Z', recorded: false, person: VERIFIED }),
    });
    await t.withWorker(stubs, async (scope) => {
      const args = await input();
      const handle = await start(scope, args);
      await handle.executeUpdate(otpSentUpdate);
      expect(await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] })).toEqual({
        authenticatedAt: '2030-01-01T00:00:00.000Z',
      });
      expect(stubs.names()).toEqual([
        'sendVerificationOtp',
        'recordVerificationOtpSent',
        'confirmVerificationOtp',
        'recordVerificationConfirmed',
      ]);
      expect(stubs.inputsOf('recordVerificationOtpSent')).toEqual([{ receiptId: args.receiptId, tid: TID }]);
      expect(stubs.inputsOf('recordVerificationConfirmed')).toEqual([
        { receiptId: args.receiptId, person: VERIFIED, authenticatedAt: '2030-01-01T00:00:00.000Z' },
      ]);
    });
  });

  it('updates without a fresh proof are refused before anything runs; a nonce is taken once', async () => {
    const stubs = happyStubs();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, await input());
      await handle.executeUpdate(otpSentUpdate);
      const notAuthorized = async (call: Promise<unknown>) => expect((await refusal(call)).type).toBe(UPDATE_NOT_AUTHORIZED);
      // biome-ignore lint/suspicious/noExplicitAny: what a caller without the contract's types could send
      await notAuthorized(handle.executeUpdate(resendOtpUpdate, { args: [undefined as any] }));
      await notAuthorized(handle.executeUpdate(resendOtpUpdate, { args: [{ nonce: 'too-short' }] }));
      await notAuthorized(handle.executeUpdate(confirmOtpUpdate, { args: [{ nonce: 'too-short', otp: '123456' }] }));
      const nonce = randomUUID();
      await handle.executeUpdate(resendOtpUpdate, { args: [{ nonce }] });
      await notAuthorized(handle.executeUpdate(resendOtpUpdate, { args: [{ nonce }] }));
      await notAuthorized(handle.executeUpdate(confirmOtpUpdate, { args: [{ nonce, otp: '123456' }] }));
      expect(stubs.names()).toEqual(['sendVerificationOtp', 'resendVerificationOtp']);
    });
  });

  it('a run started before the one-activity steps and the caps: gateway call and write are separate activities, no paygate lock', async () => {
    let confirms = 0;
    const stubs = new ActivityStubs<VerificationActivities>({
      requestIdentityOtp: async () => ({ tid: TID }),
      resendIdentityOtp: async () => undefined,
      confirmIdentityOtp: async () => {
        if (++confirms <= MAX_WRONG_OTPS) throw declined('A201', 'the OTP does not match');
        return VERIFIED;
      },
      recordVerificationOtpSent: async () => undefined,
      recordVerificationRealarm: async () => undefined,
      recordVerificationConfirmed: async () => undefined,
      purgeVerificationIdentifiers: async () => undefined,
    });
    await t.withWorker(stubs, async (scope) => {
      const { caps: _caps, oneActivityPerStep: _one, ...legacy } = await input();
      const handle = await start(scope, legacy);
      await handle.executeUpdate(otpSentUpdate);
      await handle.executeUpdate(resendOtpUpdate, { args: [proof()] });
      for (let i = 0; i < MAX_WRONG_OTPS; i++) {
        await refusal(handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '000000' }] }));
      }
      // without caps in its input, the sixth confirm still reaches the PG
      await handle.executeUpdate(confirmOtpUpdate, { args: [{ ...proof(), otp: '123456' }] });
      await handle.result();
      expect(stubs.names()).toEqual([
        'requestIdentityOtp',
        'recordVerificationOtpSent',
        'recordVerificationRealarm',
        'resendIdentityOtp',
        ...Array(MAX_WRONG_OTPS + 1).fill('confirmIdentityOtp'),
        'recordVerificationConfirmed',
        'purgeVerificationIdentifiers',
      ]);
      expect(stubs.inputsOf('resendIdentityOtp')).toEqual([
        { pg: 'sandbox_identity', tid: TID, idempotencyKey: `verification:${legacy.receiptId}:resend:1` },
      ]);
      expect(stubs.inputsOf('recordVerificationConfirmed')).toEqual([
        { receiptId: legacy.receiptId, person: VERIFIED, authenticatedAt: expect.any(String) },
      ]);
    });
  });
});

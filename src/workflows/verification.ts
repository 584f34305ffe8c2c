import {
  type ActivityOptions,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  type LocalActivityOptions,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { VerificationActivities } from '../activities/verification.js';
import type { VerifiedPerson } from '../gateways/rules.js';
import { declinedBy, GATEWAY_DECLINED, outageFailure, outageOf } from '../gateways/declined.js';
import {
  type ConfirmResult,
  type OtpSentResult,
  type ResendResult,
  type VerificationErrorName,
  type VerificationFailureDetails,
  type VerificationInput,
  OTP_LOCKOUT,
  VERIFICATION_WINDOW_MS,
  VerificationStatus,
  confirmOtpUpdate,
  otpSentUpdate,
  resendOtpUpdate,
  type VerificationWorkflow,
} from '../verification/contract.js';
import { UPDATE_NOT_AUTHORIZED, type UpdateProof } from '../platform/temporal/messages.js';

// One identity verification, from the request to the purge of CI/DI:
//   send OTP -> [resend]* -> confirm (<= 30 min after the request) -> lookup window (30 min) -> purge.
// The API answers every HTTP call from an update's outcome; the database is written only by activities.

const GATEWAY_CALL = {
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes: [GATEWAY_DECLINED],
  },
} satisfies ActivityOptions & LocalActivityOptions;

const gateway = proxyActivities<VerificationActivities>(GATEWAY_CALL);

// Each step's activity (send, resend, confirm) runs as a local activity in runs that reach a step since LOCAL_STEPS:
// in the workflow task of the update that asked for it, so the update is answered from that one task instead of two
// (its acceptance, then the task after an activity task). The same timeout and retries, now inside the task (the
// SDK heartbeats the task while they run): a PG that hangs or fails ends in the same catalog error after the same
// three attempts. A worker that dies mid-call leaves no marker, so the step runs again: the request and each resend
// under the same idempotency key (nothing sent twice), the confirm as a repeated confirm the PG answers alike.
const gatewayInTask = proxyLocalActivities<VerificationActivities>(GATEWAY_CALL);
/** Steps recorded before it replay as the activity tasks they were (the marker is in the histories after). */
const LOCAL_STEPS = 'verification-local-steps';

const store = proxyActivities<VerificationActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 20 },
});

const MIN_NONCE_LENGTH = 16;

/** What a confirm that met an outage tells the merchant: the OTP was not judged (or its verdict was not heard). */
const CONFIRM_OUTAGE = {
  unreachable:
    'The identity gateway could not be reached; the OTP was not checked. Retry the confirm with the same OTP and the same Idempotency-Key.',
  timeout:
    'The identity gateway did not answer in time; the OTP may have been accepted. Retry the confirm with the same OTP and the same Idempotency-Key: a confirm the gateway accepted answers with the verified result.',
};

/** What a resend that met an outage tells the merchant (the resend counts: the OTP may have been sent). */
const RESEND_OUTAGE = {
  unreachable:
    'The identity gateway could not be reached; the OTP may not have been resent. Look up the receipt_id, and resend again if no message arrives.',
  timeout:
    'The identity gateway did not answer in time; the OTP may have been resent. Wait for the message before you resend again.',
};

function failure(name: VerificationErrorName, message: string, details: VerificationFailureDetails = {}): ApplicationFailure {
  return ApplicationFailure.create({ type: name, message, nonRetryable: true, details: [details] });
}

class Verification {
  status: VerificationStatus = VerificationStatus.Sending;
  tid: string | undefined;
  sendFailure: ApplicationFailure | undefined;
  /** the API has received the send outcome (it asks right after starting the workflow) */
  sendOutcomeDelivered = false;
  realarms = 0;
  /** confirms the PG refused (wrong, expired, locked OTP) */
  wrongOtps = 0;
  authenticatedAt: number | undefined;
  /** resend and confirm run one at a time, in arrival order: each reads and changes the status */
  busy = false;
  /** nonces of the update proofs taken so far (see UpdateProof) */
  private readonly spentNonces = new Set<string>();
  private turn: Promise<void> = Promise.resolve();
  readonly confirmDeadline: number;

  constructor(readonly input: VerificationInput) {
    this.confirmDeadline = Date.parse(input.requestedAt) + VERIFICATION_WINDOW_MS;
  }

  get sendSettled(): boolean {
    return this.status !== VerificationStatus.Sending;
  }

  /** Shared by validators (reject before anything is written) and handlers (re-check after waiting). */
  assertAwaitingOtp(): void {
    if (this.status !== VerificationStatus.AwaitingOtp) {
      throw failure('AUTH_NOT_READY', `verification is not awaiting an OTP (status ${this.status})`);
    }
    if (Date.now() >= this.confirmDeadline) {
      throw failure('AUTH_NOT_READY', 'the 30-minute confirm window of this verification has ended');
    }
  }

  /** Validators: an update must carry a fresh proof, sealed by paygate. Checked before anything else. */
  assertFreshProof(proof: Partial<UpdateProof> | undefined): void {
    const nonce = proof?.nonce;
    if (typeof nonce !== 'string' || nonce.length < MIN_NONCE_LENGTH || this.spentNonces.has(nonce)) {
      throw ApplicationFailure.create({
        type: UPDATE_NOT_AUTHORIZED,
        message: 'the update carries no fresh proof from paygate',
        nonRetryable: true,
      });
    }
  }

  /**
   * Handlers: takes the proof's nonce, so a second update with it is refused even when both passed their
   * validators together. Updates recorded before proofs existed replay without one.
   */
  spendProof(proof: Partial<UpdateProof> | undefined): void {
    const nonce = proof?.nonce;
    if (nonce === undefined) return;
    this.assertFreshProof(proof);
    this.spentNonces.add(nonce);
  }

  /** runs started before the caps have none in their input and keep their recorded behaviour */
  get locked(): boolean {
    return this.input.caps !== undefined && this.wrongOtps >= this.input.caps.maxWrongOtps;
  }

  assertConfirmable(): void {
    this.assertAwaitingOtp();
    if (this.locked) throw failure('AUTH_CONFIRM_FAILED', OTP_LOCKOUT.message, { pgErrorCode: OTP_LOCKOUT.pgErrorCode });
  }

  assertResendable(): void {
    if (this.input.type !== 'sms') {
      throw failure('AUTH_REALARM_NOT_ABLE', 'only an SMS verification can be resent');
    }
    this.assertAwaitingOtp();
    if (this.locked) {
      throw failure('AUTH_REALARM_FAILED', OTP_LOCKOUT.message, {
        pgErrorCode: OTP_LOCKOUT.pgErrorCode,
        payloadMessage: `The verification is locked after ${this.input.caps?.maxWrongOtps} wrong OTPs; request a new one.`,
      });
    }
    const maxResends = this.input.caps?.maxResends;
    if (maxResends !== undefined && this.realarms >= maxResends) {
      throw failure('AUTH_REALARM_FAILED', 'the resend limit of this verification is reached', {
        payloadMessage: `At most ${maxResends} resends per verification; request a new one.`,
      });
    }
  }

  // A chain, not `await condition(() => !busy)`: the SDK unblocks every satisfied condition in one
  // pass, so updates arriving together would all pass the wait before any of them set busy.
  async exclusively<T>(check: () => void, work: () => Promise<T>): Promise<T> {
    const previous = this.turn;
    let release!: () => void;
    this.turn = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    this.busy = true;
    try {
      check();
      return await work();
    } finally {
      this.busy = false;
      release();
    }
  }
}

export async function verificationWorkflow(input: VerificationInput): Promise<void> {
  const v = new Verification(input);
  const { receiptId } = input;
  // a third fewer workflow tasks per verification; see VerificationInput.oneActivityPerStep
  const oneActivityPerStep = input.oneActivityPerStep === true;
  /** Where a step's one activity runs; asked at each step, so a step recorded before the patch replays as it ran. */
  const stepActivities = () => (patched(LOCAL_STEPS) ? gatewayInTask : gateway);
  // a local attempt's info carries the worker's clock: the sandbox clock follows the workflow's (followEngineTime)
  const stamp = () => ({ workflowTimeMs: Date.now() });
  // sent by the project's upstream provider: its resends and confirms go there too (never a local PG's tid there)
  const atProvider = input.sentTid !== undefined ? { upstreamProject: input.merchantId } : {};

  setHandler(
    otpSentUpdate,
    async (): Promise<OtpSentResult> => {
      await condition(() => v.sendSettled);
      v.sendOutcomeDelivered = true;
      if (v.sendFailure) throw v.sendFailure;
      return { tid: v.tid! };
    },
    // nothing to check of its own; with a validator the workflows' interceptors reject a forged one before it is
    // accepted (src/workflows/interceptors.ts), instead of after
    { validator: () => undefined },
  );

  setHandler(
    resendOtpUpdate,
    (proof): Promise<ResendResult> => {
      v.spendProof(proof);
      return v.exclusively(
        () => v.assertResendable(),
        async () => {
          // The counter grows before the gateway answers, so it also counts a resend that fails.
          const attempt = ++v.realarms;
          const resend = {
            pg: input.pg,
            ...atProvider,
            tid: v.tid!,
            idempotencyKey: `verification:${receiptId}:resend:${attempt}`,
          };
          let recorded = false;
          try {
            if (oneActivityPerStep) {
              ({ recorded } = await stepActivities().resendVerificationOtp({
                ...resend,
                receiptId,
                numberOfRealarms: attempt,
                ...stamp(),
              }));
            } else {
              await store.recordVerificationRealarm({ receiptId, numberOfRealarms: attempt });
              recorded = true;
              await gateway.resendIdentityOtp(resend);
            }
          } catch (err) {
            const outage = outageOf(err);
            if (outage?.kind === 'circuit') {
              // the provider's circuit was open: nothing was sent, so nothing counts (the next resend takes this key)
              // (the step's activity wrote the count before its call: set it back)
              v.realarms--;
              await store.recordVerificationRealarm({ receiptId, numberOfRealarms: v.realarms });
              throw outageFailure(outage, RESEND_OUTAGE);
            }
            // a failed resend still counts; its write may not have happened
            if (oneActivityPerStep) await store.recordVerificationRealarm({ receiptId, numberOfRealarms: attempt });
            const declined = declinedBy(err);
            if (!declined) throw outageFailure(outage!, RESEND_OUTAGE);
            throw failure('AUTH_REALARM_FAILED', declined.pgMessage, { pgErrorCode: declined.pgErrorCode });
          }
          if (!recorded) await store.recordVerificationRealarm({ receiptId, numberOfRealarms: attempt });
          return { numberOfRealarms: attempt };
        },
      );
    },
    {
      validator: (proof) => {
        v.assertFreshProof(proof);
        v.assertResendable();
      },
    },
  );

  setHandler(
    confirmOtpUpdate,
    (request): Promise<ConfirmResult> => {
      v.spendProof(request);
      const { otp } = request;
      return v.exclusively(
        () => v.assertConfirmable(),
        async () => {
          let confirmed: { authenticatedAt: string; person?: VerifiedPerson };
          try {
            if (oneActivityPerStep) {
              confirmed = await stepActivities().confirmVerificationOtp({
                receiptId,
                pg: input.pg,
                ...atProvider,
                tid: v.tid!,
                otp,
                ...stamp(),
              });
            } else {
              const person = await gateway.confirmIdentityOtp({ pg: input.pg, ...atProvider, tid: v.tid!, otp });
              confirmed = { authenticatedAt: new Date().toISOString(), person };
            }
          } catch (err) {
            const declined = declinedBy(err);
            // only the PG's refusals count towards the lock: an unreachable PG judged no OTP, and the merchant is told
            // so (an outage's code, never 2405's "wrong or expired")
            if (!declined) throw outageFailure(outageOf(err)!, CONFIRM_OUTAGE);
            v.wrongOtps++;
            throw failure('AUTH_CONFIRM_FAILED', declined.pgMessage, { pgErrorCode: declined.pgErrorCode });
          }
          // a person in the result means nobody has stored it yet
          if (confirmed.person) {
            await store.recordVerificationConfirmed({
              receiptId,
              person: confirmed.person,
              authenticatedAt: confirmed.authenticatedAt,
            });
          }
          v.authenticatedAt = Date.parse(confirmed.authenticatedAt);
          v.status = VerificationStatus.Verified;
          return { authenticatedAt: confirmed.authenticatedAt };
        },
      );
    },
    {
      validator: (request) => {
        v.assertFreshProof(request);
        const otp = request?.otp;
        v.assertConfirmable();
        if (input.type === 'sms' && !/^\d{6}$/.test(otp)) throw failure('AUTH_CONFIRM_FAILED', 'the OTP must be 6 digits');
      },
    },
  );

  // 1. Send the SMS / pass push (unless the service had an upstream provider send it: see VerificationInput.sentTid).
  if (input.sentTid !== undefined) {
    v.tid = input.sentTid;
    v.status = VerificationStatus.AwaitingOtp;
  } else {
    try {
      const send = {
        receiptId,
        merchantId: input.merchantId,
        pg: input.pg,
        type: input.type,
        person: input.person,
        clientIp: input.clientIp,
        siteUrl: input.siteUrl,
      };
      const { tid, recorded } = oneActivityPerStep
        ? await stepActivities().sendVerificationOtp({ ...send, ...stamp() })
        : { ...(await gateway.requestIdentityOtp(send)), recorded: false };
      if (!recorded) await store.recordVerificationOtpSent({ receiptId, tid });
      v.tid = tid;
      v.status = VerificationStatus.AwaitingOtp;
    } catch (err) {
      const declined = declinedBy(err);
      const sendFailure = declined
        ? failure('AUTH_CONFIRM_READY_FAILED', declined.pgMessage, { pgErrorCode: declined.pgErrorCode })
        : failure('AUTH_REQUEST_FAILED', 'the identity gateway could not be reached');
      await store.recordVerificationRequestFailed({
        receiptId,
        errorName: sendFailure.type!,
        pgErrorCode: declined?.pgErrorCode,
      });
      v.sendFailure = sendFailure;
      v.status = VerificationStatus.RequestFailed;
      // Stay until the API has read the failure; it asks within moments of the start.
      await condition(() => v.sendOutcomeDelivered, '5 minutes');
    }
  }

  // 2. The confirm window.
  if (v.status === VerificationStatus.AwaitingOtp) {
    const verified = await condition(() => v.status === VerificationStatus.Verified, Math.max(v.confirmDeadline - Date.now(), 1));
    // A confirm that started just before the deadline is allowed to finish.
    await condition(() => !v.busy);
    if (!verified && v.status === VerificationStatus.AwaitingOtp) {
      v.status = VerificationStatus.Expired;
      await store.recordVerificationExpired({ receiptId });
    }
  }

  // 3. The lookup window, then CI and DI are gone for good.
  if (v.authenticatedAt !== undefined) {
    await sleep(Math.max(v.authenticatedAt + VERIFICATION_WINDOW_MS - Date.now(), 1));
    await store.purgeVerificationIdentifiers({ receiptId });
  }

  await condition(allHandlersFinished);
}

// the signature the services start it by (src/verification/contract.ts) is this function's
verificationWorkflow satisfies VerificationWorkflow;

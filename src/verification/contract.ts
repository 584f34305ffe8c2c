import { defineUpdate } from '@temporalio/workflow';
import type { IdentityPerson, VerifiedPerson } from '../gateways/rules.js';
import type { UpdateProof } from '../platform/temporal/messages.js';

// The identity-verification workflow's contract, shared by the workflow and the API.

export const VERIFICATION_WORKFLOW_TYPE = 'verificationWorkflow';
export const verificationWorkflowId = (receiptId: string): string => `verification:${receiptId}`;

/** The OTP may be confirmed for this long after the request; the result may be looked up this long after confirmation. */
export const VERIFICATION_WINDOW_MS = 30 * 60 * 1000;

/**
 * paygate's own caps per verification, whatever the PG allows. After MAX_WRONG_OTPS confirms the PG
 * refused, the verification is locked: confirms and resends are answered without calling the PG.
 * A resend beyond MAX_RESENDS is refused without calling the PG and is not counted in
 * number_of_realarms (which counts resends sent to the PG, so it never exceeds the cap).
 */
export const MAX_WRONG_OTPS = 5;
export const MAX_RESENDS = 5;
/**
 * What a verification locked by paygate answers: the sandbox identity PG's own lockout code and text
 * (A204), so the merchant sees one behaviour whichever of the two locks first.
 */
export const OTP_LOCKOUT = { pgErrorCode: 'A204', message: 'too many wrong OTP attempts' } as const;

/** paygate's caps, fixed in a run's input when it starts (see VerificationInput.caps). */
export interface VerificationCaps {
  readonly maxWrongOtps: number;
  readonly maxResends: number;
}
export const VERIFICATION_CAPS: VerificationCaps = { maxWrongOtps: MAX_WRONG_OTPS, maxResends: MAX_RESENDS };

/**
 * Statuses of a verification receipt. 51 and 12 are the spec's; the others exist in the spec without a
 * meaning given, and paygate uses them as follows.
 */
export const VerificationStatus = {
  /** created; the SMS / pass push is being sent */
  Sending: 50,
  /** sent; awaiting the OTP */
  AwaitingOtp: 51,
  /** verified */
  Verified: 12,
  /** the gateway refused to send, or could not be reached */
  RequestFailed: -12,
  /** the 30-minute confirm window ended without a correct OTP */
  Expired: -50,
} as const;
export type VerificationStatus = (typeof VerificationStatus)[keyof typeof VerificationStatus];

export interface VerificationInput {
  readonly receiptId: string;
  /** the project's application_id: the identity gateway's merchant id (DI differs per merchant) */
  readonly merchantId: string;
  readonly pg: string;
  readonly type: 'sms' | 'pass';
  /** ISO 8601; the confirm window runs from here */
  readonly requestedAt: string;
  readonly clientIp: string;
  readonly siteUrl?: string;
  /** sensitive: sealed by the payload codec in Temporal's history */
  readonly person: IdentityPerson;
  /**
   * paygate's caps for this run. Absent in runs started before the caps existed: those keep their
   * recorded behaviour, so their histories replay unchanged. Carried in the (sealed) input: chosen when a
   * verification's history was to hold no plain payload at all; the SDK's patch markers (a name only) are allowed
   * since the steps became local activities (the workflow's LOCAL_STEPS).
   */
  readonly caps?: VerificationCaps;
  /**
   * Each step (send, resend, confirm) is one activity that calls the gateway and writes its result. Absent in runs
   * started before: they replay their recorded gateway activity and store activity per step (carried here for the
   * reason `caps` is).
   */
  readonly oneActivityPerStep?: true;
  /**
   * The OTP was sent before the run started, under this gateway tid: an upstream provider assigns the verification's
   * receipt_id, so the service asks it first and the run begins awaiting the OTP. Absent: the run sends it.
   */
  readonly sentTid?: string;
}

/** The identity-verification workflow's signature, for the services that start it without importing workflow code. */
export type VerificationWorkflow = (input: VerificationInput) => Promise<void>;

/**
 * Failures the workflow hands back to the API, as ApplicationFailure type = catalog error name and
 * details[0] = this object.
 */
export interface VerificationFailureDetails {
  readonly pgErrorCode?: string;
  readonly payloadMessage?: string;
}

export type VerificationErrorName =
  | 'AUTH_REQUEST_FAILED'
  | 'AUTH_CONFIRM_READY_FAILED'
  | 'AUTH_NOT_READY'
  | 'AUTH_CONFIRM_FAILED'
  | 'AUTH_REALARM_FAILED'
  | 'AUTH_REALARM_NOT_ABLE';

export interface OtpSentResult {
  readonly tid: string;
}

export interface ResendResult {
  readonly numberOfRealarms: number;
}

export interface ConfirmResult {
  readonly authenticatedAt: string;
}

/** Waits until the SMS / push was sent (or failed) and answers the request with the outcome. Changes nothing. */
export const otpSentUpdate = defineUpdate<OtpSentResult>('otpSent');
export const resendOtpUpdate = defineUpdate<ResendResult, [UpdateProof]>('resendOtp');
/** The OTP travels as an update argument: sealed by the payload codec in history. */
export const confirmOtpUpdate = defineUpdate<ConfirmResult, [UpdateProof & { otp: string }]>('confirmOtp');

/** What the verification activities need from storage (src/verification/store.ts implements it). */
export interface VerificationRecords {
  markOtpSent(receiptId: string, tid: string): Promise<void>;
  markRequestFailed(receiptId: string, failure: { errorName: string; pgErrorCode?: string }): Promise<void>;
  setRealarmCount(receiptId: string, numberOfRealarms: number): Promise<void>;
  markConfirmed(receiptId: string, person: VerifiedPerson, authenticatedAt: Date): Promise<void>;
  markExpired(receiptId: string): Promise<void>;
  purgeIdentifiers(receiptId: string): Promise<void>;
}

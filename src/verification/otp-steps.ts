// A verification's OTP steps after its request: the resend (counted against the send caps unless the run refuses it
// before sending) and the confirm (answered as the run answers it).
import { VERIFICATION_CAPS, VerificationStatus, confirmOtpUpdate, resendOtpUpdate } from './contract.js';
import { ApiError } from '../platform/errors.js';
import { parseOtp } from './rules.js';
import type { Project } from '../projects/index.js';
import { merchantVerificationId, type VerificationRow } from './store.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';

import { refusedBeforeSending, updateProof, type VerificationContext } from './context.js';

export async function resend(ctx: VerificationContext, project: Project, receiptId: string): Promise<VerificationRow> {
  const { sends, countSend, callWorkflow, notAnswering, handleOf, ownVerification, reload } = ctx;
  const row = await ownVerification(receiptId, project, 'AUTH_NOT_FOUND');
  if (row.authenticate_type !== 'sms') throw new ApiError('AUTH_REALARM_NOT_ABLE');
  if (row.status !== VerificationStatus.AwaitingOtp) throw new ApiError('AUTH_NOT_READY');
  // The run's own resend cap, where the stored count already shows it (every run awaiting an OTP has
  // VERIFICATION_CAPS): answered as the run answers it, and before the send caps, which would otherwise answer
  // 9479 for a resend that was never going to be sent.
  const { maxResends } = VERIFICATION_CAPS;
  if (row.number_of_realarms >= maxResends) {
    throw new ApiError('AUTH_REALARM_FAILED', {
      message: 'the resend limit of this verification is reached',
      payloadMessage: `At most ${maxResends} resends per verification; request a new one.`,
    });
  }
  const phone =
    row.phone_key_id !== null && row.phone_mac !== null ? { index: { keyId: row.phone_key_id, mac: row.phone_mac } } : undefined;
  const counted = await countSend(project, 'resend', phone);
  try {
    await callWorkflow(
      () => handleOf(row.receipt_id).executeUpdate(resendOtpUpdate, { args: [updateProof()] }),
      notAnswering,
      merchantVerificationId(row),
    );
  } catch (err) {
    // refused by the run before it sent anything: nothing to count (a timeout or a gateway failure stays counted)
    if (counted !== undefined && refusedBeforeSending(err)) await sends.release(counted);
    throw err;
  }
  return reload(row.receipt_id);
}

export async function confirm(
  ctx: VerificationContext,
  project: Project,
  receiptId: string,
  body: unknown,
  idempotencyKey?: IdempotencyKeyProof,
): Promise<VerificationRow> {
  const { store, callWorkflow, notAnswering, handleOf, ownVerification, reload } = ctx;
  const row = await ownVerification(receiptId, project, 'AUTH_NOT_FOUND');
  const sameKey = idempotencyKey !== undefined && row.confirm_key_mac !== null && idempotencyKey.matches(row.confirm_key_mac);
  if (row.status === VerificationStatus.Verified && sameKey) return row;
  if (row.status !== VerificationStatus.AwaitingOtp) throw new ApiError('AUTH_NOT_READY');
  const otp = parseOtp(body, row.authenticate_type);
  if (idempotencyKey) await store.noteConfirmKey(row.receipt_id, idempotencyKey.mac);
  await callWorkflow(
    () => handleOf(row.receipt_id).executeUpdate(confirmOtpUpdate, { args: [{ ...updateProof(), otp }] }),
    notAnswering,
    merchantVerificationId(row),
  );
  return reload(row.receipt_id);
}

// Charging a billing key once per (project, order_id): the order_id claimed with a pending receipt, the PG called
// under the order_id's key, the approval recorded (with the feedback delivery), or the call handed to its reconcile.
import { chargeHash, type ChargeParams } from './billing-rules.js';
import { enforceMasked, KEY_IN_METHOD, KEY_IN_METHOD_SYMBOL } from '../gateways/card-rules.js';
import { ApiError, RelayedApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { answerMismatchMessage, PAYMENT_COMPLETE, PAYMENT_PENDING, type ReceiptAttention } from './receipt-rules.js';
import { type FeedbackTarget, receiptFeedbackEvent } from '../webhooks/rules.js';
import { type ChargeResult, gatewayFailure, isFinalRefusal } from '../gateways/index.js';
import { chargingCardGateway } from './card-gateways.js';
import type { BillingKeyRow } from './billing-keys-store.js';
import type { Project } from '../projects/index.js';
import { merchantReceiptId, type ReceiptRow } from './receipts-store.js';
import { PG_CALL_WINDOW_MS, receiptResponse } from './receipts.js';
import { bindLogIds } from '../platform/observability/log-context.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import { type ChargeDeps, chargeNow, noteDisagreement, pgChargeKey } from './charge-context.js';

/**
 * The error a charge left pending for its reconcile workflow answers with (the PG unreachable or its answer lost,
 * 9502; cut at its deadline, 9504; a PG key refused as reused, 9475; a failure of ours after the PG answered, 9500),
 * naming the pending receipt so the merchant can poll `GET /v2/receipt/{receipt_id}`. A charge at an upstream
 * provider is pending under paygate's own id, which keeps naming it once it completes under the provider's.
 */
function pendingChargeError(err: unknown, receiptId: string): unknown {
  if (err instanceof RelayedApiError) return err;
  if (err instanceof ApiError) return err.withReceipt(receiptId);
  return new ApiError('INTERNAL_ERROR', { cause: err, receiptId });
}

/** The answer to a charge whose provider charged something else (9480), naming the receipt as the provider made it. */
function answerMismatchError(receipt: ReceiptRow): ApiError {
  const attention = receipt.attention as ReceiptAttention;
  return new ApiError('UPSTREAM_ANSWER_MISMATCH', {
    message: answerMismatchMessage(attention.fields),
    receiptId: merchantReceiptId(receipt),
  });
}

/**
 * Records the PG's approval; with a feedback_url, the receipt's delivery there is written in the same transaction
 * (an outbox row): a process that dies right after the commit leaves both, and the worker's dispatcher sends it.
 */
async function complete(
  deps: ChargeDeps,
  project: Project,
  receiptId: string,
  result: ChargeResult,
  feedback: FeedbackTarget | undefined,
): Promise<ReceiptRow> {
  const maskedNumber = enforceMasked(result.card.maskedNumber);
  const webhooks = feedback ? deps.webhooks : undefined;
  if (!feedback || !webhooks) return deps.stores.receipts.completeCharge(receiptId, result, maskedNumber);
  const completed = await deps.stores.transaction(async (tx) => {
    const row = await tx.receipts.completeCharge(receiptId, result, maskedNumber);
    const event = receiptFeedbackEvent({ ...receiptResponse(row, project) });
    await webhooks.deliverFeedback(project.application_id, feedback, event, undefined, tx);
    return row;
  });
  webhooks.dispatchNow();
  return completed;
}

/**
 * The call ended without a final answer: the reconcile workflow owns the charge from now. The call window stays
 * as it is: the PG may still hold the request and execute it, so its "never received" is believed only after.
 */
async function handOver(deps: ChargeDeps, receiptId: string, err: unknown): Promise<void> {
  if (err instanceof ApiError && err.errorCode === 'PG_KEY_REUSED') {
    deps.logger?.error?.({ receipt_id: receiptId, err }, 'the PG refused a charge key as reused: a defect, reconciled');
  }
  try {
    await deps.reconcile?.charge(receiptId);
  } catch (handOverErr) {
    // the sweep finds the pending receipt once its call window ends
    deps.logger?.warn({ receipt_id: receiptId, err: handOverErr }, 'a charge without an answer was left to the sweep');
  }
}

/** The pending receipt this request owns the PG call of, or a receipt that answers it. */
async function claim(
  deps: ChargeDeps,
  project: Project,
  key: BillingKeyRow,
  params: ChargeParams,
  requestedAt: Date,
  feedback: FeedbackTarget | undefined,
  idempotencyKey: IdempotencyKeyProof | undefined,
): Promise<
  | {
      readonly pending: ReceiptRow | { receipt_id: string; pg_key_attempt: number };
      /** claimed by this request: no call was ever sent under it */
      readonly fresh?: true;
    }
  | { readonly answer: ReceiptRow }
> {
  const { receipts } = deps.stores;
  const hash = chargeHash(params);
  // twice at most: a pending receipt dropped between our read and our re-drive frees the order_id
  for (let round = 0; round < 2; round++) {
    const until = new Date(chargeNow(deps).getTime() + PG_CALL_WINDOW_MS);
    const claimed = await receipts.claimOrder({
      receiptId: newId(),
      applicationId: project.application_id,
      orderId: params.orderId,
      orderName: params.orderName,
      billingKey: key.billing_key,
      chargeHash: hash,
      pg: key.pg,
      method: KEY_IN_METHOD,
      methodSymbol: KEY_IN_METHOD_SYMBOL,
      price: params.price,
      taxFree: params.taxFree,
      quota: params.quota,
      metadata: params.metadata,
      requestedAt,
      callUntil: until,
      feedback,
      idempotencyKeyMac: idempotencyKey?.mac,
      viaUpstream: key.via_upstream,
    });
    if (claimed.kind === 'claimed') {
      return { pending: { receipt_id: claimed.receiptId, pg_key_attempt: claimed.keyAttempt }, fresh: true };
    }
    const row = claimed.row;
    if (row.charge_hash !== hash) break;
    if (row.status === PAYMENT_COMPLETE) {
      // the provider charged something other than this request: every ask of it says so, never a plain receipt
      if (row.attention !== null) throw answerMismatchError(row);
      const sameKey =
        idempotencyKey !== undefined && row.idempotency_key_mac !== null && idempotencyKey.matches(row.idempotency_key_mac);
      if (row.reconciled_at !== null || sameKey) return { answer: row };
    }
    if (row.status !== PAYMENT_PENDING) break;
    const redriven = await receipts.redriveCharge(row.receipt_id, until);
    if (redriven) return { pending: redriven };
  }
  throw new ApiError('ORDER_ID_DUPLICATED');
}

/** Charges a billing key once per (project, order_id) (see ChargeService.chargeKey). */
export async function chargeBillingKey(
  deps: ChargeDeps,
  project: Project,
  key: BillingKeyRow,
  params: ChargeParams,
  requestedAt: Date,
  feedback?: FeedbackTarget,
  idempotencyKey?: IdempotencyKeyProof,
): Promise<ReceiptRow> {
  const { receipts, billingKeys } = deps.stores;
  const gateway = await chargingCardGateway(deps, project, key);
  const claimed = await claim(deps, project, key, params, requestedAt, feedback, idempotencyKey);
  if ('answer' in claimed) return claimed.answer;
  const receiptId = claimed.pending.receipt_id;
  bindLogIds({ receipt_id: receiptId });

  let result: ChargeResult;
  try {
    result = await gateway.charge({
      idempotencyKey: pgChargeKey(project.application_id, params.orderId, claimed.pending.pg_key_attempt),
      gatewayBillingKey: billingKeys.openGatewayKey(key),
      amount: params.price,
      taxFree: params.taxFree,
      orderId: params.orderId,
      orderName: params.orderName,
      quota: params.quota,
    });
  } catch (err) {
    const failure = gatewayFailure('charge', err);
    // the provider's circuit opened since the check before the claim: nothing was sent, the order_id is free again
    if (claimed.fresh && failure instanceof ApiError && failure.errorCode === 'UPSTREAM_UNAVAILABLE') {
      await receipts.declinePendingCharge(receiptId);
      throw failure;
    }
    const declined = isFinalRefusal(failure);
    deps.metrics?.charge(declined ? 'declined' : 'failed', key.pg);
    // A refusal is final: the order_id is free for another attempt, under the next PG key.
    if (declined) {
      await receipts.declinePendingCharge(receiptId);
      throw failure;
    }
    await handOver(deps, receiptId, failure);
    throw pendingChargeError(failure, receiptId);
  }
  let completed: ReceiptRow;
  try {
    completed = await complete(deps, project, receiptId, result, feedback);
  } catch (err) {
    // the PG charged and we could not record it: the reconcile workflow will (with the feedback, when there is one)
    await handOver(deps, receiptId, err);
    throw pendingChargeError(err, receiptId);
  }
  if (completed.attention !== null) {
    noteDisagreement(deps, completed);
    throw answerMismatchError(completed);
  }
  deps.metrics?.charge('paid', key.pg);
  return completed;
}

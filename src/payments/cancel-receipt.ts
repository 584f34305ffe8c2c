// Cancelling (refunding) a payment, fully or partly, for POST /v2/cancel, a billing key's verification charge and
// escrow refunds: a repeated cancel_id answered with its first result, else the receipt's cancel lease taken, the
// cancel noted as pending, sent to the PG and recorded, or handed to its reconcile workflow when its answer is lost.
import { assertOwnedBy } from '../projects/access.js';
import { ApiError } from '../platform/errors.js';
import { storedGateway } from './card-gateways.js';
import { newId } from '../platform/ids.js';
import { type CancelPlan, cancelIdempotencyKey, isSameCancel, planCancel, type CancelRequest } from './receipt-rules.js';
import { type GatewayCancelResult, gatewayFailure } from '../gateways/index.js';
import type { Project } from '../projects/index.js';
import { merchantReceiptId, type PendingCancel, type ReceiptRow, type ReceiptStore } from './receipts-store.js';
import type { OperationLog } from '../platform/operation-log.js';
import { PG_CALL_WINDOW_MS, receiptResponse } from './receipts.js';
import { type CancelDeps, cancelGatewayOf, isCancelRefusal } from './cancel-context.js';

const DEFAULT_CANCEL_REASON = 'merchant cancel';

/** What planCancel reads of a receipt. */
const cancellable = (receipt: ReceiptRow) => ({
  status: receipt.status,
  price: receipt.price,
  taxFree: receipt.tax_free,
  cancelledPrice: receipt.cancelled_price,
  cancelledTaxFree: receipt.cancelled_tax_free,
});

/** The PG key `cancel` would have on `receipt` as it stands: a retry of a pending cancel has the pending one's. */
function sameCancelKey(receipt: ReceiptRow, cancel: CancelRequest): string | undefined {
  try {
    const plan = planCancel(cancellable(receipt), cancel);
    return cancelIdempotencyKey(receipt.receipt_id, cancel.cancelId, receipt.cancelled_price, plan.amount);
  } catch (err) {
    if (err instanceof ApiError) return undefined;
    throw err;
  }
}

/** The stored first result of a repeated cancel_id on `receipt`; 9422 when that cancel_id refunded something else. */
async function repeatedCancel(
  receipts: ReceiptStore,
  receipt: ReceiptRow,
  cancel: CancelRequest,
): Promise<Record<string, unknown> | undefined> {
  if (cancel.cancelId === undefined) return undefined;
  const first = await receipts.findCancel(receipt.receipt_id, cancel.cancelId);
  if (!first) return undefined;
  if (!isSameCancel({ price: receipt.price, taxFree: receipt.tax_free }, first, cancel)) {
    throw new ApiError('IDEMPOTENCY_KEY_REUSED', {
      message: 'This cancel_id was used for a cancel with a different cancel_price or cancel_tax_free.',
    });
  }
  return first.response;
}

/** The cancel about to be sent to the PG, as the receipt notes it for its reconcile workflow. */
function pendingCancelOf(receipt: ReceiptRow, cancel: CancelRequest, plan: CancelPlan): PendingCancel {
  return {
    // a retry of a cancel that lost its answer takes it over under its own key (its reconcile then stops)
    cancel_key: newId(),
    cancel_id: cancel.cancelId ?? null,
    pg_key: cancelIdempotencyKey(receipt.receipt_id, cancel.cancelId, receipt.cancelled_price, plan.amount),
    amount: plan.amount,
    tax_free: plan.taxFree,
    fully_cancelled: plan.fullyCancelled,
    reason: cancel.cancelMessage ?? DEFAULT_CANCEL_REASON,
  };
}

/**
 * The PG may have made the cancel: its reconcile workflow learns what happened. The lease stays: the PG may still
 * hold the request and execute it, so no other cancel starts and "never received" is believed only after it.
 */
async function handOver(deps: CancelDeps, receiptId: string, cancelKey: string, err: unknown): Promise<void> {
  try {
    await deps.reconcile?.cancel(receiptId, cancelKey);
  } catch (handOverErr) {
    // the sweep finds the pending cancel once its lease ends
    deps.logger?.warn(
      { receipt_id: receiptId, err: handOverErr, cause: err },
      'a cancel without an answer was left to the sweep',
    );
  }
}

/**
 * `sent`, which the PG may have made, handed to its reconcile workflow after `err`: the error to answer, naming the
 * receipt the merchant polls for its outcome.
 */
async function handedOver(deps: CancelDeps, receipt: ReceiptRow, sent: PendingCancel, err: unknown): Promise<ApiError> {
  await handOver(deps, receipt.receipt_id, sent.cancel_key, err);
  return err instanceof ApiError
    ? err.withReceipt(merchantReceiptId(receipt))
    : new ApiError('INTERNAL_ERROR', { cause: err, receiptId: merchantReceiptId(receipt) });
}

/** What a cancel sends, checked before it may take the receipt's lease: the refund planned and the PG making it. */
interface CancelTarget {
  readonly plan: CancelPlan;
  readonly gateway: NonNullable<ReturnType<typeof cancelGatewayOf>>;
  readonly gatewayTid: string;
}

/** The refund `cancel` asks of `receipt` as it stands, and its PG; the catalog error when there is none to make. */
async function cancelTarget(deps: CancelDeps, receipt: ReceiptRow, cancel: CancelRequest): Promise<CancelTarget> {
  const plan = planCancel(cancellable(receipt), cancel);
  const gateway = cancelGatewayOf(await storedGateway(deps, receipt), receipt);
  if (!gateway) throw new ApiError('RC_PG_NOT_FOUND');
  if (receipt.gateway_tid === null) throw new ApiError('RECEIPT_NOT_CANCELLABLE');
  return { plan, gateway, gatewayTid: receipt.gateway_tid };
}

/**
 * The cancel, under the receipt's lease and noted as `pending` (`receipt` as of taking the lease; `tookOver` the
 * pending cancel it took over, if any): sent to the PG and recorded.
 */
async function sendCancel(
  deps: CancelDeps,
  project: Project,
  cancel: CancelRequest,
  log: OperationLog,
  leased: { readonly receipt: ReceiptRow; readonly target: CancelTarget; readonly pending: PendingCancel },
  tookOver: PendingCancel | null,
): Promise<Record<string, unknown>> {
  const { receipts } = deps.stores;
  const { receipt, target, pending } = leased;
  const { plan } = target;
  // once the PG may have the cancel, a failure hands it to its reconcile workflow instead of releasing the lease
  let sent: PendingCancel | undefined = pending;
  try {
    let result: GatewayCancelResult;
    try {
      result = await target.gateway.cancel({
        idempotencyKey: pending.pg_key,
        gatewayTid: target.gatewayTid,
        amount: plan.amount,
        taxFree: plan.taxFree,
        reason: pending.reason,
      });
    } catch (err) {
      const failure = gatewayFailure('cancel', err);
      // the PG's refusal is final: nothing was refunded; so is an open circuit (nothing sent) unless this cancel
      // took over one that may have been sent before
      const held = failure instanceof ApiError && failure.errorCode === 'UPSTREAM_UNAVAILABLE';
      if (isCancelRefusal(failure) || (held && tookOver === null)) sent = undefined;
      throw failure;
    }

    const response = await receipts.recordCancel(
      {
        cancelKey: pending.cancel_key,
        receipt,
        cancelId: cancel.cancelId,
        plan,
        gatewayCancelTid: result.gatewayCancelTid,
        cancelledAt: result.cancelledAt,
      },
      (updated) => ({ ...receiptResponse(updated, project) }),
    );
    if (!response) {
      throw new ApiError('IDEMPOTENCY_IN_PROGRESS', {
        message: 'This cancel was recorded by another request: look up the receipt for its outcome.',
        receiptId: merchantReceiptId(receipt),
      });
    }
    log.info({ receipt_id: receipt.receipt_id, amount: plan.amount, fully: plan.fullyCancelled }, 'payment cancelled');
    return { ...response };
  } catch (err) {
    if (sent === undefined) {
      await receipts.releaseCancelLease(receipt.receipt_id);
      throw err;
    }
    throw await handedOver(deps, receipt, sent, err);
  }
}

/**
 * The cancel under the receipt's lease, taken before it was noted (`receipt` as of taking it, perhaps holding a
 * pending cancel this one takes over): checked again, noted as pending, then sent and recorded.
 */
async function cancelLeased(
  deps: CancelDeps,
  project: Project,
  cancel: CancelRequest,
  log: OperationLog,
  receipt: ReceiptRow,
): Promise<Record<string, unknown>> {
  const { receipts } = deps.stores;
  const tookOver = receipt.cancel_pending;
  let pending: PendingCancel;
  let target: CancelTarget;
  let noted: boolean;
  try {
    const firstResult = await repeatedCancel(receipts, receipt, cancel);
    if (firstResult) {
      // the cancel taken over was that first one, recorded meanwhile (which freed the lease): release nothing of
      // a cancel that may have started since
      await receipts.releaseCancelLease(receipt.receipt_id, tookOver?.cancel_key);
      return firstResult;
    }
    target = await cancelTarget(deps, receipt, cancel);
    pending = pendingCancelOf(receipt, cancel, target.plan);
    noted = await receipts.markCancelPending(receipt.receipt_id, pending, tookOver?.cancel_key ?? null);
  } catch (err) {
    // nothing was sent by this cancel; one it took over may have been, and stays noted for its reconcile
    if (tookOver === null) {
      await receipts.releaseCancelLease(receipt.receipt_id);
      throw err;
    }
    throw await handedOver(deps, receipt, tookOver, err);
  }
  if (!noted) {
    // the cancel this one took over was recorded (or settled) meanwhile: the receipt has moved on, and sending
    // its PG key again would only replay that refund; the lease went with it
    throw new ApiError('IDEMPOTENCY_IN_PROGRESS', {
      message: 'Another cancel of this receipt was recorded meanwhile; retry to cancel from what remains.',
      receiptId: merchantReceiptId(receipt),
    });
  }
  return sendCancel(deps, project, cancel, log, { receipt, target, pending }, tookOver);
}

/** Refunds a payment receipt of `project` (see CancelService.cancel). */
export async function cancelReceipt(
  deps: CancelDeps,
  project: Project,
  cancel: CancelRequest,
  log: OperationLog,
): Promise<Record<string, unknown>> {
  const { receipts } = deps.stores;
  const found = await receipts.findNamed(project.application_id, cancel.receiptId);
  if (!found) throw new ApiError('RC_NOT_FOUND');
  assertOwnedBy(project, found.application_id);
  const first = await repeatedCancel(receipts, found, cancel);
  if (first) return first;

  // a provider whose circuit is open: 9481 before anything is leased
  if (found.via_upstream) deps.upstream?.assertAvailable?.(found.application_id);
  // A lease rather than a row lock: no transaction is held while the PG answers.
  const now = deps.clock();
  const until = new Date(now.getTime() + PG_CALL_WINDOW_MS);
  if (found.cancel_pending === null) {
    // The usual cancel: planned from the receipt as read, and its lease taken with the cancel noted in one
    // statement, only while the receipt still is as read (else the path below plans it again under the lease).
    const target = await cancelTarget(deps, found, cancel);
    const pending = pendingCancelOf(found, cancel, target.plan);
    const receipt = await receipts.acquireCancelLeaseNoted(found, pending, now, until);
    if (receipt) return sendCancel(deps, project, cancel, log, { receipt, target, pending }, null);
  }
  const receipt = await receipts.acquireCancelLease(
    found.receipt_id,
    now,
    until,
    found.cancel_pending ? sameCancelKey(found, cancel) : undefined,
  );
  if (!receipt) {
    // the receipt names where the outcome shows: the merchant looks it up, or retries once the other cancel ends
    throw new ApiError('IDEMPOTENCY_IN_PROGRESS', {
      message:
        found.cancel_pending !== null
          ? 'A cancel of this receipt whose PG answer was lost is being reconciled: look up the receipt for its outcome, or retry the same cancel (same cancel_id) in a minute.'
          : 'Another cancel of this receipt is in progress: look up the receipt, or retry the same cancel (same cancel_id) in a moment.',
      receiptId: merchantReceiptId(found),
    });
  }
  return cancelLeased(deps, project, cancel, log, receipt);
}

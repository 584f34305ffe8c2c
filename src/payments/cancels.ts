// Cancelling (refunding) a payment, fully or partly, recorded on the receipt: for POST /v2/cancel, the
// refund of a billing key's verification charge, and escrow refunds. The cancel about to be sent is noted
// on the receipt under its lease; a call that ends without a final answer (or a process that dies in it)
// leaves that note to the cancel's reconcile workflow, which learns from the PG whether it refunded and
// records it or forgets it. No other cancel of the receipt starts until then (9409).
import { assertOwnedBy } from '../projects/access.js';
import { ApiError, RelayedApiError } from '../platform/errors.js';
import type { UpstreamGateways } from '../upstream/index.js';
import { storedGateway } from './card-gateways.js';
import { newId } from '../platform/ids.js';
import { cancelIdempotencyKey, isSameCancel, planCancel, type CancelRequest } from './receipt-rules.js';
import {
  type Gateway,
  type GatewayCancelResult,
  type GatewayInquiry,
  type GatewayRegistry,
  gatewayFailure,
} from '../gateways/index.js';
import { type Project, toProject, type ProjectStore } from '../projects/index.js';
import { merchantReceiptId, type PendingCancel, type ReceiptRow } from './receipts-store.js';
import type { OperationLog } from '../platform/operation-log.js';
import { PG_CALL_WINDOW_MS, ReconcileLater, type ReconcileStarter, receiptResponse } from './receipts.js';
import type { ReceiptStore } from './receipts-store.js';

const DEFAULT_CANCEL_REASON = 'merchant cancel';

/** How a reconcile workflow left a cancel whose answer was lost. */
export type CancelSettlement =
  | { readonly outcome: 'none' }
  | {
      readonly outcome: 'cancelled';
      readonly receipt: ReceiptRow;
      readonly project: Project;
      readonly pending: PendingCancel;
      /** the receipt as this cancel left it (what a repeat of its cancel_id answers) */
      readonly response: Record<string, unknown>;
    }
  | {
      readonly outcome: 'not_cancelled';
      readonly receipt: ReceiptRow;
      readonly project: Project;
      readonly pending: PendingCancel;
      readonly pgErrorCode?: string;
    };

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

/** a billing payment is refunded by the card capability, a one-off (escrow) payment by its payment capability */
function cancelGatewayOf(pg: Gateway | undefined, receipt: ReceiptRow) {
  return receipt.billing_key !== null ? pg?.card : (pg?.payments ?? pg?.card);
}

/** A final refusal of a cancel: the PG's (9425), an upstream provider's own (relayed), or the provider refusing the keys. */
function isCancelRefusal(failure: unknown): failure is ApiError | RelayedApiError {
  return (
    failure instanceof RelayedApiError ||
    (failure instanceof ApiError &&
      (failure.errorCode === 'RECEIPT_NOT_CANCELLABLE' ||
        failure.errorCode === 'UPSTREAM_KEYS_REFUSED' ||
        failure.errorCode === 'UPSTREAM_NOT_CONFIGURED'))
  );
}

export interface CancelService {
  /**
   * Refunds a payment receipt of `project`, fully or partly, and records it on the receipt.
   * Returns the receipt as this cancel leaves it (or the stored first result of a repeated cancel_id).
   */
  cancel(project: Project, cancel: CancelRequest, log: OperationLog): Promise<Record<string, unknown>>;
  /**
   * The reconcile workflow's step for the cancel `cancelKey` of a receipt: asks the PG what it did under the
   * cancel's key (a PG without an inquiry is asked by re-sending the same cancel, which it answers without
   * refunding twice) and records the refund or forgets the cancel. Throws ReconcileLater while a live request
   * holds the lease, GATEWAY_UNAVAILABLE while the PG cannot answer.
   */
  settle(receiptId: string, cancelKey: string): Promise<CancelSettlement>;
}

export function createCancelService(deps: {
  readonly stores: { readonly receipts: ReceiptStore } & Partial<{ readonly projects: ProjectStore }>;
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a payment made at one is refunded there */
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  /** starts the reconcile workflow of a cancel that lost its answer; without it, the worker's sweep does */
  readonly reconcile?: ReconcileStarter;
  readonly logger?: Pick<OperationLog, 'warn'>;
}): CancelService {
  const { receipts } = deps.stores;
  /**
   * The PG may have made the cancel: its reconcile workflow learns what happened. The lease stays: the PG may still
   * hold the request and execute it, so no other cancel starts and "never received" is believed only after it.
   */
  const handOver = async (receiptId: string, cancelKey: string, err: unknown): Promise<void> => {
    try {
      await deps.reconcile?.cancel(receiptId, cancelKey);
    } catch (handOverErr) {
      // the sweep finds the pending cancel once its lease ends
      deps.logger?.warn(
        { receipt_id: receiptId, err: handOverErr, cause: err },
        'a cancel without an answer was left to the sweep',
      );
    }
  };

  const service: CancelService = {
    async cancel(project, cancel, log) {
      const found = await receipts.findNamed(project.application_id, cancel.receiptId);
      if (!found) throw new ApiError('RC_NOT_FOUND');
      assertOwnedBy(project, found.application_id);
      const repeated = async (receipt: ReceiptRow) => {
        if (cancel.cancelId === undefined) return undefined;
        const first = await receipts.findCancel(receipt.receipt_id, cancel.cancelId);
        if (!first) return undefined;
        if (!isSameCancel({ price: receipt.price, taxFree: receipt.tax_free }, first, cancel)) {
          throw new ApiError('IDEMPOTENCY_KEY_REUSED', {
            message: 'This cancel_id was used for a cancel with a different cancel_price or cancel_tax_free.',
          });
        }
        return first.response;
      };
      const first = await repeated(found);
      if (first) return first;

      // a provider whose circuit is open: 9481 before anything is leased
      if (found.via_upstream) deps.upstream?.assertAvailable?.(found.application_id);
      // A lease rather than a row lock: no transaction is held while the PG answers.
      const now = deps.clock();
      const receipt = await receipts.acquireCancelLease(
        found.receipt_id,
        now,
        new Date(now.getTime() + PG_CALL_WINDOW_MS),
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
      // once the PG may have the cancel, a failure hands it to its reconcile workflow instead of releasing the lease
      let sent: PendingCancel | undefined = receipt.cancel_pending ?? undefined;
      let leaseLost = false;
      try {
        const firstResult = await repeated(receipt);
        if (firstResult) {
          // the cancel taken over was that first one, recorded meanwhile (which freed the lease): release nothing of
          // a cancel that may have started since
          await receipts.releaseCancelLease(receipt.receipt_id, receipt.cancel_pending?.cancel_key);
          return firstResult;
        }
        const plan = planCancel(cancellable(receipt), cancel);
        const gateway = cancelGatewayOf(await storedGateway(deps, receipt), receipt);
        if (!gateway) throw new ApiError('RC_PG_NOT_FOUND');
        if (receipt.gateway_tid === null) throw new ApiError('RECEIPT_NOT_CANCELLABLE');

        const pending: PendingCancel = {
          // a retry of a cancel that lost its answer takes it over under its own key (its reconcile then stops)
          cancel_key: newId(),
          cancel_id: cancel.cancelId ?? null,
          pg_key: cancelIdempotencyKey(receipt.receipt_id, cancel.cancelId, receipt.cancelled_price, plan.amount),
          amount: plan.amount,
          tax_free: plan.taxFree,
          fully_cancelled: plan.fullyCancelled,
          reason: cancel.cancelMessage ?? DEFAULT_CANCEL_REASON,
        };
        if (!(await receipts.markCancelPending(receipt.receipt_id, pending, receipt.cancel_pending?.cancel_key ?? null))) {
          // the cancel this one took over was recorded (or settled) meanwhile: the receipt has moved on, and sending
          // its PG key again would only replay that refund; the lease went with it
          leaseLost = true;
          throw new ApiError('IDEMPOTENCY_IN_PROGRESS', {
            message: 'Another cancel of this receipt was recorded meanwhile; retry to cancel from what remains.',
            receiptId: merchantReceiptId(receipt),
          });
        }
        sent = pending;
        let result: GatewayCancelResult;
        try {
          result = await gateway.cancel({
            idempotencyKey: pending.pg_key,
            gatewayTid: receipt.gateway_tid,
            amount: plan.amount,
            taxFree: plan.taxFree,
            reason: pending.reason,
          });
        } catch (err) {
          const failure = gatewayFailure('cancel', err);
          // the PG's refusal is final: nothing was refunded; so is an open circuit (nothing sent) unless this cancel
          // took over one that may have been sent before
          const held = failure instanceof ApiError && failure.errorCode === 'UPSTREAM_UNAVAILABLE';
          if (isCancelRefusal(failure) || (held && receipt.cancel_pending === null)) sent = undefined;
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
        if (leaseLost) throw err;
        if (sent === undefined) {
          await receipts.releaseCancelLease(receipt.receipt_id);
          throw err;
        }
        await handOver(receipt.receipt_id, sent.cancel_key, err);
        // the cancel is the reconcile workflow's now: the answer names the receipt the merchant polls for its outcome
        throw err instanceof ApiError
          ? err.withReceipt(merchantReceiptId(receipt))
          : new ApiError('INTERNAL_ERROR', { cause: err, receiptId: merchantReceiptId(receipt) });
      }
    },

    async settle(receiptId, cancelKey) {
      const receipt = await receipts.find(receiptId);
      const pending = receipt?.cancel_pending;
      if (!receipt || !pending || pending.cancel_key !== cancelKey) return { outcome: 'none' };
      const now = deps.clock();
      const projectRow = await deps.stores.projects?.findById(receipt.application_id);
      if (!projectRow) throw new Error(`project ${receipt.application_id} of receipt ${receiptId} not found`);
      const project = toProject(projectRow);
      const pg = await storedGateway(deps, receipt);
      const gateway = cancelGatewayOf(pg, receipt);
      if (!gateway || receipt.gateway_tid === null) throw new Error(`receipt ${receiptId}: its PG ${receipt.pg} cannot cancel`);
      let inquiry: GatewayInquiry<GatewayCancelResult>;
      try {
        if (pg?.card?.inquire) {
          inquiry = await pg.card.inquire({ operation: 'cancel', idempotencyKey: pending.pg_key });
        } else {
          const again = await gateway.cancel({
            idempotencyKey: pending.pg_key,
            gatewayTid: receipt.gateway_tid,
            amount: pending.amount,
            taxFree: pending.tax_free,
            reason: pending.reason,
          });
          inquiry = { state: 'executed', result: again };
        }
      } catch (err) {
        const failure = gatewayFailure('cancel', err);
        if (!isCancelRefusal(failure)) throw failure;
        inquiry =
          failure instanceof RelayedApiError
            ? {
                state: 'refused',
                pgErrorCode: failure.body.pg_error_code ?? failure.body.error_code,
                pgMessage: failure.body.message,
              }
            : { state: 'refused', pgErrorCode: failure.pgErrorCode ?? '', pgMessage: failure.message };
      }
      if (inquiry.state !== 'executed') {
        // a refusal is final; "never received" is believed once the lease has passed (the PG may still hold it)
        if (
          inquiry.state === 'not_executed' &&
          receipt.cancel_locked_until !== null &&
          receipt.cancel_locked_until.getTime() > now.getTime()
        ) {
          throw new ReconcileLater(`receipt ${receiptId}: its cancel lease has not passed`);
        }
        await receipts.releaseCancelLease(receiptId, pending.cancel_key);
        return {
          outcome: 'not_cancelled',
          receipt,
          project,
          pending,
          ...(inquiry.state === 'refused' ? { pgErrorCode: inquiry.pgErrorCode } : {}),
        };
      }
      const response = await receipts.recordCancel(
        {
          cancelKey: pending.cancel_key,
          receipt,
          cancelId: pending.cancel_id ?? undefined,
          plan: { amount: pending.amount, taxFree: pending.tax_free, fullyCancelled: pending.fully_cancelled },
          gatewayCancelTid: inquiry.result.gatewayCancelTid,
          cancelledAt: inquiry.result.cancelledAt,
        },
        (updated) => ({ ...receiptResponse(updated, project) }),
      );
      // a retry of the same cancel took it over and records it itself
      if (!response) return { outcome: 'none' };
      const updated = (await receipts.find(receiptId)) ?? receipt;
      return { outcome: 'cancelled', receipt: updated, project, pending, response };
    },
  };
  return service;
}

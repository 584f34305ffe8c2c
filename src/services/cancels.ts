// Cancelling (refunding) a payment, fully or partly, recorded on the receipt: for POST /v2/cancel, the
// refund of a billing key's verification charge, and (next) escrow refunds.
import { assertOwnedBy } from '../domain/access.js';
import { ApiError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { cancelIdempotencyKey, isSameCancel, planCancel, type CancelRequest } from '../domain/receipt.js';
import type { GatewayCancelResult, GatewayRegistry } from '../gateways/types.js';
import type { Stores } from '../store/index.js';
import type { Project } from '../store/projects.js';
import type { ReceiptRow } from '../store/receipts.js';
import { gatewayFailure } from './gateways.js';
import type { OperationLog } from './log.js';
import { receiptResponse } from './receipts.js';

const DEFAULT_CANCEL_REASON = 'merchant cancel';
/** Longer than any PG call may take; a lease left by a crashed process expires after it. */
const CANCEL_LEASE_MS = 2 * 60 * 1000;

export interface CancelService {
  /**
   * Refunds a payment receipt of `project`, fully or partly, and records it on the receipt.
   * Returns the receipt as this cancel leaves it (or the stored first result of a repeated cancel_id).
   */
  cancel(project: Project, cancel: CancelRequest, log: OperationLog): Promise<Record<string, unknown>>;
}

export function createCancelService(deps: {
  readonly stores: Pick<Stores, 'receipts'>;
  readonly gateways: GatewayRegistry;
  readonly clock: () => Date;
}): CancelService {
  const { receipts } = deps.stores;
  return {
    async cancel(project, cancel, log) {
      const found = await receipts.find(cancel.receiptId);
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

      // A lease rather than a row lock: no transaction is held while the PG answers.
      const now = deps.clock();
      const receipt = await receipts.acquireCancelLease(found.receipt_id, now, new Date(now.getTime() + CANCEL_LEASE_MS));
      if (!receipt) throw new ApiError('IDEMPOTENCY_IN_PROGRESS', { message: 'Another cancel of this receipt is in progress.' });
      try {
        const firstResult = await repeated(receipt);
        if (firstResult) {
          await receipts.releaseCancelLease(receipt.receipt_id);
          return firstResult;
        }
        const plan = planCancel(
          {
            status: receipt.status,
            price: receipt.price,
            taxFree: receipt.tax_free,
            cancelledPrice: receipt.cancelled_price,
            cancelledTaxFree: receipt.cancelled_tax_free,
          },
          cancel,
        );
        // a billing payment is refunded by the card capability, a one-off (escrow) payment by its payment capability
        const pg = deps.gateways.get(receipt.pg);
        const gateway = receipt.billing_key !== null ? pg?.card : (pg?.payments ?? pg?.card);
        if (!gateway) throw new ApiError('RC_PG_NOT_FOUND');
        if (receipt.gateway_tid === null) throw new ApiError('RECEIPT_NOT_CANCELLABLE');

        let result: GatewayCancelResult;
        try {
          result = await gateway.cancel({
            idempotencyKey: cancelIdempotencyKey(receipt.receipt_id, cancel.cancelId, receipt.cancelled_price, plan.amount),
            gatewayTid: receipt.gateway_tid,
            amount: plan.amount,
            taxFree: plan.taxFree,
            reason: cancel.cancelMessage ?? DEFAULT_CANCEL_REASON,
          });
        } catch (err) {
          throw gatewayFailure('cancel', err);
        }

        const response = await receipts.recordCancel(
          {
            cancelKey: newId(),
            receipt,
            cancelId: cancel.cancelId,
            plan,
            gatewayCancelTid: result.gatewayCancelTid,
            cancelledAt: result.cancelledAt,
          },
          (updated) => ({ ...receiptResponse(updated, project) }),
        );
        log.info({ receipt_id: receipt.receipt_id, amount: plan.amount, fully: plan.fullyCancelled }, 'payment cancelled');
        return { ...response };
      } catch (err) {
        await receipts.releaseCancelLease(receipt.receipt_id);
        throw err;
      }
    },
  };
}

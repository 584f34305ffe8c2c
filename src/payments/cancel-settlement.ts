// Settling a cancel that lost its PG answer, the reconcile workflow's step: the PG is asked what it did under the
// cancel's key (a PG without an inquiry is sent the same cancel again), and the refund is recorded or forgotten.
import { RelayedApiError } from '../platform/errors.js';
import { storedGateway } from './card-gateways.js';
import { type GatewayCancelResult, type GatewayInquiry, gatewayFailure } from '../gateways/index.js';
import { type Project, toProject } from '../projects/index.js';
import type { PendingCancel, ReceiptRow } from './receipts-store.js';
import { ReconcileLater, receiptResponse } from './receipts.js';
import { type CancelDeps, cancelGatewayOf, isCancelRefusal } from './cancel-context.js';

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

/** The reconcile workflow's step for the cancel `cancelKey` of a receipt (see CancelService.settle). */
export async function settleCancel(deps: CancelDeps, receiptId: string, cancelKey: string): Promise<CancelSettlement> {
  const { receipts } = deps.stores;
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
}

// Settling a charge that lost its PG answer, the reconcile workflow's step: the PG is asked what it did under the
// charge's key, and the pending receipt is completed, or dropped when refused or never executed.
import { enforceMasked } from '../gateways/card-rules.js';
import { ApiError, RelayedApiError } from '../platform/errors.js';
import { PAYMENT_PENDING } from './receipt-rules.js';
import { type ChargeRequest, type ChargeResult, type GatewayInquiry, gatewayFailure, isFinalRefusal } from '../gateways/index.js';
import { storedGateway } from './card-gateways.js';
import type { BillingKeyRow } from './billing-keys-store.js';
import { type Project, toProject } from '../projects/index.js';
import type { ReceiptRow } from './receipts-store.js';
import { ReconcileLater } from './receipts.js';
import { type ChargeDeps, chargeNow, noteDisagreement, pgChargeKey } from './charge-context.js';

/** How a reconcile workflow left a pending charge. */
export type ChargeSettlement =
  /** not pending any more: a request settled it */
  | { readonly outcome: 'none' }
  | { readonly outcome: 'completed'; readonly receipt: ReceiptRow; readonly project: Project }
  | {
      readonly outcome: 'failed';
      /** the pending receipt as it was before it was dropped */
      readonly receipt: ReceiptRow;
      readonly project: Project;
      readonly error: ApiError;
    };

/** The charge a pending receipt asked its PG for, under the same key: what a re-sent call (the inquiry of a PG without one) sends. */
function chargeOf(deps: ChargeDeps, row: ReceiptRow, key: BillingKeyRow): ChargeRequest {
  return {
    idempotencyKey: pgChargeKey(row.application_id, row.order_id, row.pg_key_attempt),
    gatewayBillingKey: deps.stores.billingKeys.openGatewayKey(key),
    amount: row.price,
    taxFree: row.tax_free,
    orderId: row.order_id,
    orderName: row.order_name,
    quota: row.card_quota ?? 0,
  };
}

/** The reconcile workflow's step for a pending charge (see ChargeService.settle). */
export async function settleCharge(deps: ChargeDeps, receiptId: string): Promise<ChargeSettlement> {
  const { receipts, billingKeys } = deps.stores;
  const row = await receipts.find(receiptId);
  if (!row || row.status !== PAYMENT_PENDING) return { outcome: 'none' };
  const now = chargeNow(deps);
  const projectRow = await deps.stores.projects?.findById(row.application_id);
  if (!projectRow) throw new Error(`project ${row.application_id} of receipt ${receiptId} not found`);
  const project = toProject(projectRow);
  const gateway = (await storedGateway(deps, row))?.card;
  if (!gateway) throw new Error(`receipt ${receiptId}: its PG ${row.pg} is not configured`);
  let inquiry: GatewayInquiry<ChargeResult>;
  try {
    if (gateway.inquire) {
      inquiry = await gateway.inquire({
        operation: 'charge',
        idempotencyKey: pgChargeKey(row.application_id, row.order_id, row.pg_key_attempt),
      });
    } else {
      // no inquiry (an upstream provider): the same charge under the same key gets the provider's first result
      const key = row.billing_key === null ? undefined : await billingKeys.find(row.billing_key);
      if (!key) throw new Error(`receipt ${receiptId}: its billing key is gone`);
      inquiry = { state: 'executed', result: await gateway.charge(chargeOf(deps, row, key)) };
    }
  } catch (err) {
    const failure = gatewayFailure('charge', err);
    if (!isFinalRefusal(failure)) throw failure;
    // the provider refused it under its key: as an inquiry's "refused"
    inquiry = {
      state: 'refused',
      pgErrorCode:
        failure instanceof RelayedApiError
          ? (failure.body.pg_error_code ?? failure.body.error_code)
          : failure instanceof ApiError
            ? (failure.pgErrorCode ?? failure.errorCode)
            : '',
      pgMessage: failure instanceof RelayedApiError ? failure.body.message : String((failure as Error).message),
    };
  }
  if (inquiry.state === 'executed') {
    const result = inquiry.result;
    const completed = await receipts.completeCharge(receiptId, result, enforceMasked(result.card.maskedNumber), now);
    if (completed.attention !== null) noteDisagreement(deps, completed);
    return { outcome: 'completed', receipt: completed, project };
  }
  if (inquiry.state === 'refused') {
    await receipts.declinePendingCharge(receiptId);
    const error = new ApiError('PAYMENT_DECLINED', {
      message: `The PG refused the payment: ${inquiry.pgMessage}`,
      pgErrorCode: inquiry.pgErrorCode,
    });
    return { outcome: 'failed', receipt: row, project, error };
  }
  // Never received, as far as the PG knows now. Believed once the call window has passed: until then the PG may
  // still hold the request (a slow PG, the sandbox's timeout fault) and execute it after we dropped the receipt.
  if (row.pg_call_until !== null && row.pg_call_until.getTime() > now.getTime()) {
    throw new ReconcileLater(`receipt ${receiptId}: its PG call window has not passed`);
  }
  // dropped unless a retry took the call meanwhile (then it answers)
  if (!(await receipts.dropUnexecutedCharge(receiptId, now))) {
    throw new ReconcileLater(`receipt ${receiptId}: a retry took the PG call`);
  }
  const error = new ApiError('GATEWAY_UNAVAILABLE', {
    message: 'The PG never received the charge; nothing was charged. The order_id is free again.',
  });
  return { outcome: 'failed', receipt: row, project, error };
}

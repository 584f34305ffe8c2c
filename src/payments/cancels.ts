// Cancelling (refunding) a payment, fully or partly, recorded on the receipt: for POST /v2/cancel, the
// refund of a billing key's verification charge, and escrow refunds. The cancel about to be sent is noted
// on the receipt under its lease; a call that ends without a final answer (or a process that dies in it)
// leaves that note to the cancel's reconcile workflow, which learns from the PG whether it refunded and
// records it or forgets it. No other cancel of the receipt starts until then (9409).
// The use cases are files of their own (cancel-receipt.ts, cancel-settlement.ts, what they share in
// cancel-context.ts); this module puts them together.
import type { CancelRequest } from './receipt-rules.js';
import type { Project } from '../projects/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import type { CancelDeps } from './cancel-context.js';
import { cancelReceipt } from './cancel-receipt.js';
import { type CancelSettlement, settleCancel } from './cancel-settlement.js';

export type { CancelSettlement } from './cancel-settlement.js';

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

export function createCancelService(deps: CancelDeps): CancelService {
  return {
    cancel: (project, cancel, log) => cancelReceipt(deps, project, cancel, log),
    settle: (receiptId, cancelKey) => settleCancel(deps, receiptId, cancelKey),
  };
}

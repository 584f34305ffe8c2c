// Charging a billing key: once per (project, order_id), whoever asks (the charge route, a reserved
// charge, a subscription period). A charge with a feedback_url posts its receipt there once it completes,
// as a signed webhook delivery. A charge whose PG call ends without a final answer (timeout, lost answer,
// a failure of ours after the PG approved) is handed to its reconcile workflow, which asks the PG what it
// did and settles the receipt; a process that dies mid call leaves a pending receipt the worker's sweep
// hands over once its call window has passed.
// The use cases are files of their own (charge-billing-key.ts, charge-settlement.ts, what they share in
// charge-context.ts); this module puts them together.
import type { ChargeParams } from './billing-rules.js';
import type { FeedbackTarget } from '../webhooks/rules.js';
import type { BillingKeyRow } from './billing-keys-store.js';
import type { Project } from '../projects/index.js';
import type { ReceiptRow } from './receipts-store.js';
import { findUsableBillingKey } from './usable-billing-key.js';
import type { IdempotencyKeyProof } from '../platform/idempotency.js';
import type { ChargeDeps } from './charge-context.js';
import { chargeBillingKey } from './charge-billing-key.js';
import { type ChargeSettlement, settleCharge } from './charge-settlement.js';

export { pgChargeKey } from './charge-context.js';
export type { ChargeSettlement } from './charge-settlement.js';

export interface ChargeService {
  /** Charges the project's usable billing key named in `params` (2309, 1225, 9423 as findUsableBillingKey). */
  charge(
    project: Project,
    params: ChargeParams,
    requestedAt: Date,
    feedback?: FeedbackTarget,
    idempotencyKey?: IdempotencyKeyProof,
  ): Promise<ReceiptRow>;
  /**
   * Charges a billing key once per (project, order_id). The order_id is claimed with a pending receipt
   * before the PG is called (no transaction is held across the PG call). A pending receipt with the
   * same charge is a retry after a PG failure: it re-drives the PG under the same derived key, which
   * the PG answers without charging again. A completed receipt answers the same charge when its reconcile
   * workflow settled it, or when the charge was made under the same Idempotency-Key (its request died before
   * its answer was stored): the answer that request never got. Any other use of the order_id is 9410.
   */
  chargeKey(
    project: Project,
    key: BillingKeyRow,
    params: ChargeParams,
    requestedAt: Date,
    feedback?: FeedbackTarget,
    idempotencyKey?: IdempotencyKeyProof,
  ): Promise<ReceiptRow>;
  /**
   * The reconcile workflow's step: asks the PG what it did under the pending charge's key and records it
   * (completed, or dropped when refused / never executed). Throws ReconcileLater while a request still owns
   * the call, GATEWAY_UNAVAILABLE while the PG cannot answer.
   */
  settle(receiptId: string): Promise<ChargeSettlement>;
}

export function createChargeService(deps: ChargeDeps): ChargeService {
  const service: ChargeService = {
    async charge(project, params, requestedAt, feedback, idempotencyKey) {
      const key = await findUsableBillingKey(deps.stores, project, params.billingKey);
      return service.chargeKey(project, key, params, requestedAt, feedback, idempotencyKey);
    },
    chargeKey: (project, key, params, requestedAt, feedback, idempotencyKey) =>
      chargeBillingKey(deps, project, key, params, requestedAt, feedback, idempotencyKey),
    settle: (receiptId) => settleCharge(deps, receiptId),
  };
  return service;
}

// Charging a billing key: once per (project, order_id), whoever asks (the charge route, a reserved
// charge, a subscription period).
import { chargeHash, chargeIdempotencyKey, KEY_IN_METHOD, KEY_IN_METHOD_SYMBOL, type ChargeParams } from '../domain/billing.js';
import { enforceMasked } from '../domain/card.js';
import { ApiError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { PAYMENT_PENDING } from '../domain/receipt.js';
import type { ChargeResult, GatewayRegistry } from '../gateways/types.js';
import type { BillingKeyRow } from '../store/billing-keys.js';
import type { Stores } from '../store/index.js';
import type { Project } from '../store/projects.js';
import type { ReceiptRow } from '../store/receipts.js';
import { findUsableBillingKey } from './billing-keys.js';
import { cardGatewayFor, gatewayFailure } from './gateways.js';

export interface ChargeService {
  /** Charges the project's usable billing key named in `params` (2309, 1225, 9423 as findUsableBillingKey). */
  charge(project: Project, params: ChargeParams, requestedAt: Date): Promise<ReceiptRow>;
  /**
   * Charges a billing key once per (project, order_id). The order_id is claimed with a pending receipt
   * before the PG is called (no transaction is held across the PG call). A pending receipt with the
   * same charge is a retry after a PG failure: it re-drives the PG under the same derived key, which
   * the PG answers without charging again.
   */
  chargeKey(project: Project, key: BillingKeyRow, params: ChargeParams, requestedAt: Date): Promise<ReceiptRow>;
}

export function createChargeService(deps: {
  readonly stores: Pick<Stores, 'receipts' | 'billingKeys'>;
  readonly gateways: GatewayRegistry;
}): ChargeService {
  const { receipts, billingKeys } = deps.stores;
  const service: ChargeService = {
    async charge(project, params, requestedAt) {
      return service.chargeKey(project, await findUsableBillingKey(deps.stores, project, params.billingKey), params, requestedAt);
    },

    async chargeKey(project, key, params, requestedAt) {
      const gateway = cardGatewayFor(deps.gateways, project, key.pg);
      const hash = chargeHash(params);
      const claim = await receipts.claimOrder({
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
      });
      let receiptId: string;
      if (claim.kind === 'claimed') {
        receiptId = claim.receiptId;
      } else if (claim.row.status === PAYMENT_PENDING && claim.row.charge_hash === hash) {
        receiptId = claim.row.receipt_id;
      } else {
        throw new ApiError('ORDER_ID_DUPLICATED');
      }

      let result: ChargeResult;
      try {
        result = await gateway.charge({
          idempotencyKey: chargeIdempotencyKey(project.application_id, params.orderId),
          gatewayBillingKey: billingKeys.openGatewayKey(key),
          amount: params.price,
          taxFree: params.taxFree,
          orderId: params.orderId,
          orderName: params.orderName,
          quota: params.quota,
        });
      } catch (err) {
        const failure = gatewayFailure('charge', err);
        // A refusal is final: the order_id is free for another attempt.
        if (failure instanceof ApiError && failure.errorCode === 'PAYMENT_DECLINED')
          await receipts.deletePendingCharge(receiptId);
        throw failure;
      }
      return receipts.completeCharge(receiptId, result, enforceMasked(result.card.maskedNumber));
    },
  };
  return service;
}

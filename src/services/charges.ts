// Charging a billing key: once per (project, order_id), whoever asks (the charge route, a reserved
// charge, a subscription period). A charge with a feedback_url posts its receipt there once it completes,
// as a signed webhook delivery.
import { chargeHash, chargeIdempotencyKey, KEY_IN_METHOD, KEY_IN_METHOD_SYMBOL, type ChargeParams } from '../domain/billing.js';
import { enforceMasked } from '../domain/card.js';
import { ApiError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { PAYMENT_PENDING } from '../domain/receipt.js';
import { type FeedbackTarget, receiptFeedbackEvent } from '../domain/webhooks.js';
import type { ChargeResult, GatewayRegistry } from '../gateways/types.js';
import type { BillingKeyRow } from '../store/billing-keys.js';
import type { Stores } from '../store/index.js';
import type { Project } from '../store/projects.js';
import type { ReceiptRow } from '../store/receipts.js';
import { findUsableBillingKey } from './billing-keys.js';
import { cardGatewayFor, gatewayFailure } from './gateways.js';
import type { OperationLog } from './log.js';
import { receiptResponse } from './receipts.js';
import type { WebhookService } from './webhooks.js';

export interface ChargeService {
  /** Charges the project's usable billing key named in `params` (2309, 1225, 9423 as findUsableBillingKey). */
  charge(project: Project, params: ChargeParams, requestedAt: Date, feedback?: FeedbackTarget): Promise<ReceiptRow>;
  /**
   * Charges a billing key once per (project, order_id). The order_id is claimed with a pending receipt
   * before the PG is called (no transaction is held across the PG call). A pending receipt with the
   * same charge is a retry after a PG failure: it re-drives the PG under the same derived key, which
   * the PG answers without charging again.
   */
  chargeKey(
    project: Project,
    key: BillingKeyRow,
    params: ChargeParams,
    requestedAt: Date,
    feedback?: FeedbackTarget,
  ): Promise<ReceiptRow>;
}

export function createChargeService(deps: {
  readonly stores: Pick<Stores, 'receipts' | 'billingKeys'>;
  readonly gateways: GatewayRegistry;
  /** posts a completed charge's receipt to its feedback_url */
  readonly webhooks?: Pick<WebhookService, 'deliverFeedback'>;
  readonly logger?: Pick<OperationLog, 'warn'>;
}): ChargeService {
  const { receipts, billingKeys } = deps.stores;
  const service: ChargeService = {
    async charge(project, params, requestedAt, feedback) {
      const key = await findUsableBillingKey(deps.stores, project, params.billingKey);
      return service.chargeKey(project, key, params, requestedAt, feedback);
    },

    async chargeKey(project, key, params, requestedAt, feedback) {
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
      const completed = await receipts.completeCharge(receiptId, result, enforceMasked(result.card.maskedNumber));
      if (feedback && deps.webhooks) {
        try {
          await deps.webhooks.deliverFeedback(
            project.application_id,
            feedback,
            receiptFeedbackEvent({ ...receiptResponse(completed, project) }),
          );
        } catch (err) {
          // the charge happened and its answer must reach the merchant; the lost feedback is logged, not thrown
          deps.logger?.warn({ receipt_id: completed.receipt_id, err }, 'the feedback_url delivery could not be saved');
        }
      }
      return completed;
    },
  };
  return service;
}

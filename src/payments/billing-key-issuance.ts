// Issuing a billing key from card data at the project's PG (or its upstream provider), with the optional
// verification charge refunded at once. Raw card data lives only in the issuance call's arguments and the adapter call.
import {
  issuanceIdempotencyKey,
  renderBillingKey,
  VERIFICATION_CHARGE_WON,
  verificationOrderId,
  type BillingKeyRequest,
  type BillingKeyResponse,
} from './billing-rules.js';
import { enforceMasked } from '../gateways/card-rules.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { type IssuedBillingKey, gatewayFailure } from '../gateways/index.js';
import { issuingCardGateway } from './card-gateways.js';
import { billingKeyView, merchantBillingKey, merchantIssuanceReceiptId } from './billing-keys-store.js';
import type { BillingKeyRow } from './billing-keys-store.js';
import type { Project } from '../projects/index.js';
import { merchantReceiptId, type ReceiptRow } from './receipts-store.js';
import type { OperationLog } from '../platform/operation-log.js';
import { receiptResponse } from './receipts.js';
import { type BillingKeyDeps, destroyKey } from './billing-key-context.js';

/**
 * extra.subscribe_test_payment: charges VERIFICATION_CHARGE_WON with the new key and refunds it at
 * once; returns the refunded receipt for receipt_data. When the PG refuses or cannot be reached,
 * the new key is destroyed and the issuance fails (2304 with pg_error_code / 2301).
 */
async function verifyWithTestCharge(
  deps: BillingKeyDeps,
  project: Project,
  key: BillingKeyRow,
  orderName: string,
  log: OperationLog,
): Promise<Record<string, unknown>> {
  let paid: ReceiptRow;
  try {
    paid = await deps.charges.chargeKey(
      project,
      key,
      {
        billingKey: merchantBillingKey(key),
        orderName,
        orderId: verificationOrderId(merchantIssuanceReceiptId(key)),
        price: VERIFICATION_CHARGE_WON,
        taxFree: 0,
        quota: 0,
        metadata: undefined,
      },
      deps.clock(),
    );
  } catch (err) {
    await destroyKey(deps, key, log).catch((destroyErr: unknown) =>
      log.warn({ err: destroyErr }, 'could not destroy an unverified billing key'),
    );
    if (err instanceof ApiError && err.errorCode === 'PAYMENT_DECLINED') {
      throw new ApiError('SUBSCRIBE_PUBLISH_FAILED', {
        message: `The billing key failed its verification charge: ${err.message}`,
        ...(err.pgErrorCode === undefined ? {} : { pgErrorCode: err.pgErrorCode }),
      });
    }
    if (err instanceof ApiError && (err.errorCode === 'GATEWAY_UNAVAILABLE' || err.errorCode === 'GATEWAY_TIMEOUT')) {
      throw new ApiError('SUBSCRIBE_REQUEST_FAILED', { message: `The verification charge failed: ${err.message}`, cause: err });
    }
    throw err;
  }
  try {
    return await deps.cancels.cancel(
      project,
      {
        receiptId: merchantReceiptId(paid),
        cancelPrice: undefined,
        cancelTaxFree: undefined,
        cancelId: 'verification',
        cancelMessage: 'billing key verification',
      },
      log,
    );
  } catch (err) {
    // The key is good; the merchant sees the verification charge still paid and can cancel it.
    log.warn({ err, receipt_id: paid.receipt_id }, 'verification charge not refunded');
    return { ...receiptResponse(paid, project) };
  }
}

/** Issues a billing key at `pg` (already checked) and stores it (see BillingKeyService.issue). */
export async function issueBillingKey(
  deps: BillingKeyDeps,
  project: Project,
  pg: string,
  request: BillingKeyRequest,
  requestedAt: Date,
  log: OperationLog,
): Promise<BillingKeyResponse> {
  const { card: gateway, viaUpstream } = await issuingCardGateway(deps, project, pg);
  const { subscriptionId, orderName, card, verificationCharge } = request;
  const applicationId = project.application_id;
  const receiptId = newId();
  let issued: IssuedBillingKey;
  try {
    issued = await gateway.issueBillingKey({
      idempotencyKey: issuanceIdempotencyKey(applicationId, receiptId),
      card,
      orderName,
      subscriptionId,
      merchantId: applicationId,
    });
  } catch (err) {
    throw gatewayFailure('issue', err);
  }

  const view = {
    billingKey: newId(),
    receiptId,
    subscriptionId,
    pg,
    card: { ...issued.card, maskedNumber: enforceMasked(issued.card.maskedNumber) },
    expiresAt: issued.expiresAt,
    publishedAt: issued.issuedAt,
    requestedAt,
  };
  const stored = await deps.stores.billingKeys.insert({
    ...view,
    applicationId,
    orderName,
    gatewayBillingKey: issued.gatewayBillingKey,
    viaUpstream,
    // an upstream provider's ids are what the merchant sees (it keeps them when it switches between paygate and
    // the provider), kept beside the key's own: they are unique at the provider for this project's account only
    providerIds: issued.assignedIds,
  });
  log.info({ receipt_id: receiptId, pg, via_upstream: viaUpstream }, 'billing key issued');
  const response = renderBillingKey(billingKeyView(stored));
  if (verificationCharge) response.receipt_data = await verifyWithTestCharge(deps, project, stored, orderName, log);
  return response;
}

// Billing keys: issuance from card data (with the optional verification charge), lookup, destroy.
// Raw card data lives only in the issuance call's arguments and the adapter call.
import { assertOwnedBy } from '../projects/access.js';
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
import { isResourceId } from './receipt-rules.js';
import { gatewayDecline, type GatewayRegistry, type IssuedBillingKey, gatewayFailure } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import { issuingCardGateway, storedGateway } from './card-gateways.js';
import { billingKeyView, merchantBillingKey, merchantIssuanceReceiptId } from './billing-keys-store.js';
import { findUsableBillingKey } from './usable-billing-key.js';
import type { BillingKeyRow } from './billing-keys-store.js';
import type { Project } from '../projects/index.js';
import { merchantReceiptId, type ReceiptRow } from './receipts-store.js';
import type { CancelService } from './cancels.js';
import type { ChargeService } from './charges.js';
import type { OperationLog } from '../platform/operation-log.js';
import { receiptResponse } from './receipts.js';
import type { BillingKeyStore } from './billing-keys-store.js';

export interface BillingKeyService {
  /** Step 1 of issuance, before the card fields are read: the project's PG with billing keys (2001, 2057). */
  checkIssuingPg(project: Project, pg: string): Promise<void>;
  /** Issues a billing key at `pg` (already checked) and stores it; with a verification charge, receipt_data is its refunded receipt. */
  issue(
    project: Project,
    pg: string,
    request: BillingKeyRequest,
    requestedAt: Date,
    log: OperationLog,
  ): Promise<BillingKeyResponse>;
  lookupByReceipt(project: Project, receiptId: string): Promise<BillingKeyResponse>;
  lookup(project: Project, billingKey: string): Promise<BillingKeyResponse>;
  /** The project's billing keys newest first, destroyed ones included (the dashboard). */
  list(project: Project, limit: number): Promise<{ key: BillingKeyResponse; destroyedAt: Date | null }[]>;
  /** Revokes the key at its PG, then marks it destroyed. A PG refusal (already revoked, expired) still destroys it. */
  destroy(project: Project, billingKey: string, log: OperationLog): Promise<{ billing_key: string }>;
}

export function createBillingKeyService(deps: {
  readonly stores: { readonly billingKeys: BillingKeyStore };
  readonly gateways: GatewayRegistry;
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  readonly charges: ChargeService;
  readonly cancels: CancelService;
}): BillingKeyService {
  const { billingKeys } = deps.stores;

  const destroyKey = async (key: BillingKeyRow, log: OperationLog): Promise<void> => {
    const gateway = (await storedGateway(deps, key))?.card;
    if (gateway) {
      try {
        await gateway.destroyBillingKey({ gatewayBillingKey: billingKeys.openGatewayKey(key) });
      } catch (err) {
        const decline = gatewayDecline(err);
        if (!decline) throw gatewayFailure('destroy', err);
        log.info({ pg_error_code: decline.pgErrorCode }, 'PG refused the billing key revoke; destroying locally');
      }
    }
    await billingKeys.markDestroyed(key.billing_key, deps.clock());
  };

  /**
   * extra.subscribe_test_payment: charges VERIFICATION_CHARGE_WON with the new key and refunds it at
   * once; returns the refunded receipt for receipt_data. When the PG refuses or cannot be reached,
   * the new key is destroyed and the issuance fails (2304 with pg_error_code / 2301).
   */
  const verifyWithTestCharge = async (
    project: Project,
    key: BillingKeyRow,
    orderName: string,
    log: OperationLog,
  ): Promise<Record<string, unknown>> => {
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
      await destroyKey(key, log).catch((destroyErr: unknown) =>
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
  };

  return {
    async checkIssuingPg(project, pg) {
      await issuingCardGateway(deps, project, pg);
    },

    async issue(project, pg, request, requestedAt, log) {
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
      const stored = await billingKeys.insert({
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
      if (verificationCharge) response.receipt_data = await verifyWithTestCharge(project, stored, orderName, log);
      return response;
    },

    async lookupByReceipt(project, receiptId) {
      const row = isResourceId(receiptId) ? await billingKeys.findByReceipt(project.application_id, receiptId) : undefined;
      if (!row) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
      assertOwnedBy(project, row.application_id);
      if (row.destroyed_at !== null) throw new ApiError('BILLING_KEY_DESTROYED');
      return renderBillingKey(billingKeyView(row));
    },

    async lookup(project, billingKey) {
      return renderBillingKey(billingKeyView(await findUsableBillingKey(deps.stores, project, billingKey)));
    },

    async list(project, limit) {
      const rows = await deps.stores.billingKeys.listOf(project.application_id, limit);
      return rows.map((row) => ({ key: renderBillingKey(billingKeyView(row)), destroyedAt: row.destroyed_at }));
    },

    async destroy(project, billingKey, log) {
      const key = await findUsableBillingKey(deps.stores, project, billingKey);
      await destroyKey(key, log);
      return { billing_key: merchantBillingKey(key) };
    },
  };
}

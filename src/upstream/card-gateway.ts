// Key-in billing at an upstream provider, behind the one gateway adapter contract: issuance, charges, cancels and
// revocation are the provider's merchant API (`/v2/request/subscribe`, `/v2/subscribe/payment`, `/v2/cancel`,
// `DELETE /v2/subscribe/billing_key/{key}`) called with the project's keys there, every POST under the operation's
// derived idempotency key. The provider's ids become paygate's (`assignedIds`, `receiptId`). There is no inquiry:
// the reconcile workflow asks by sending the same call again under the same key, which the provider answers with
// its first result (a provider that ignores Idempotency-Key would charge again: README says so).
import type { z } from 'zod';
import { KEY_IN_METHOD } from '../gateways/card-rules.js';
import { RelayedApiError } from '../platform/errors.js';
import { type CardBillingGateway, type ChargeResult, GatewayKeyReusedError, GatewayUnavailableError } from '../gateways/index.js';
import type { ProviderRequest } from './client.js';
import { ProviderRefusedError } from './client.js';
import { cardTypeOf, chargeAnswerDisagreement, providerBillingKey, providerOutcome, providerReceipt } from './rules.js';

/** One call to the project's provider with the project's keys there (UpstreamService.call, bound to the project). */
export type ProviderCall = (req: ProviderRequest) => Promise<unknown>;

/**
 * The provider's answer to an operation that may change something there: its result, or the contract's error for
 * what its catalog error means (a refusal relayed unchanged, "not now" as an outage to retry, a reused key).
 */
export async function send<S extends z.ZodType>(call: ProviderCall, req: ProviderRequest, shape: S): Promise<z.output<S>> {
  let answer: unknown;
  try {
    answer = await call(req);
  } catch (err) {
    if (!(err instanceof ProviderRefusedError)) throw err;
    const outcome = providerOutcome(err.statusCode, err.body);
    if (outcome === 'key_reused') throw new GatewayKeyReusedError(`the provider refused the key: ${err.body.message}`);
    if (outcome === 'unknown') {
      throw new GatewayUnavailableError(`upstream provider answered ${err.body.error_code} (HTTP ${err.statusCode})`);
    }
    throw new RelayedApiError(err.statusCode, err.body);
  }
  const parsed = shape.safeParse(answer);
  // a 2xx the contract cannot read: the provider may have done it, so it is an outage to reconcile, never a refusal
  if (!parsed.success)
    throw new GatewayUnavailableError(`unexpected answer from the upstream provider to ${req.method} ${req.path}`);
  return parsed.data;
}

export function createUpstreamCardGateway(call: ProviderCall, pg: string): CardBillingGateway {
  return {
    async issueBillingKey(req) {
      const issued = await send(
        call,
        {
          method: 'POST',
          path: '/v2/request/subscribe',
          idempotencyKey: req.idempotencyKey,
          body: {
            pg,
            method: KEY_IN_METHOD,
            subscription_id: req.subscriptionId,
            order_name: req.orderName,
            card_no: req.card.number,
            card_pw: req.card.password2,
            card_identity_no: req.card.identityNo,
            card_expire_year: req.card.expireYear,
            card_expire_month: req.card.expireMonth,
          },
        },
        providerBillingKey,
      );
      return {
        gatewayBillingKey: issued.billing_key,
        gatewayTid: issued.receipt_id,
        card: {
          maskedNumber: issued.billing_data.card_no,
          cardCompany: issued.billing_data.card_company,
          cardCompanyCode: issued.billing_data.card_company_code,
          cardType: cardTypeOf(issued.billing_data.card_type),
        },
        expiresAt: issued.billing_expire_at,
        issuedAt: issued.published_at ?? new Date(),
        assignedIds: { billingKey: issued.billing_key, receiptId: issued.receipt_id },
      };
    },

    async charge(req): Promise<ChargeResult> {
      const receipt = await send(
        call,
        {
          method: 'POST',
          path: '/v2/subscribe/payment',
          idempotencyKey: req.idempotencyKey,
          body: {
            billing_key: req.gatewayBillingKey,
            order_id: req.orderId,
            order_name: req.orderName,
            price: req.amount,
            tax_free: req.taxFree,
            card_quota: String(req.quota).padStart(2, '0'),
          },
        },
        providerReceipt,
      );
      if (receipt.status !== 1 || !receipt.card_data) {
        // the provider holds the payment without an outcome (its own PG's answer is unknown): ask again later
        throw new GatewayUnavailableError(`the upstream provider answered the charge with status ${receipt.status}`);
      }
      const card = receipt.card_data;
      // the provider's receipt is the truth about the money: checked against what was asked, never replaced by it
      const disagreement = chargeAnswerDisagreement(
        { orderId: req.orderId, price: req.amount, taxFree: req.taxFree, pg, billingKey: req.gatewayBillingKey },
        receipt,
      );
      return {
        ...(disagreement ? { disagreement } : {}),
        receiptId: receipt.receipt_id,
        gatewayTid: receipt.receipt_id,
        approvedAt: receipt.purchased_at ?? new Date(),
        approvalNo: card.card_approve_no ?? '',
        card: {
          maskedNumber: card.card_no,
          cardCompany: card.card_company,
          cardCompanyCode: card.card_company_code,
          cardType: cardTypeOf(card.card_type),
        },
        quota: Number(card.card_quota ?? req.quota),
      };
    },

    async cancel(req) {
      const receipt = await send(
        call,
        {
          method: 'POST',
          path: '/v2/cancel',
          idempotencyKey: req.idempotencyKey,
          body: {
            receipt_id: req.gatewayTid,
            cancel_price: req.amount,
            cancel_tax_free: req.taxFree,
            // the provider keeps a repeated cancel_id to its first result: the same derived key, a second guard
            cancel_id: req.idempotencyKey,
            cancel_message: req.reason,
          },
        },
        providerReceipt,
      );
      return { gatewayCancelTid: `${receipt.receipt_id}:${req.idempotencyKey}`, cancelledAt: receipt.cancelled_at ?? new Date() };
    },

    async destroyBillingKey(req) {
      await send(
        call,
        { method: 'DELETE', path: `/v2/subscribe/billing_key/${encodeURIComponent(req.gatewayBillingKey)}` },
        providerBillingKey.pick({ billing_key: true }),
      );
    },
  };
}

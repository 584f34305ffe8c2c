// Adapter (connector + transformer) for the sandbox card PG: translates the CardBillingGateway
// contract to the sandbox's wire format (see src/sandbox/server.ts) and back. Nothing of that wire
// format leaves this file.
import { z } from 'zod';
import type { CardDetails, MaskedCard } from './card-rules.js';
import type { GatewayHttpClient } from './http-client.js';
import {
  type CardBillingGateway,
  type ChargeRequest,
  type ChargeResult,
  type GatewayCancelRequest,
  type GatewayCancelResult,
  GatewayDeclinedError,
  type GatewayInquiry,
  GatewayKeyReusedError,
  GatewayUnavailableError,
  type InquiryResults,
  type IssuedBillingKey,
} from './types.js';

const isoInstant = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

const wireCard = z.object({
  masked_no: z.string().min(1),
  issuer_name: z.string().min(1),
  issuer_code: z.string().min(1),
  kind: z.enum(['CREDIT', 'CHECK']),
});

const issueData = z.object({
  bkey: z.string().min(1),
  tid: z.string().min(1),
  card: wireCard,
  bkey_expires_at: isoInstant,
  issued_at: isoInstant,
});

const chargeData = z.object({
  tid: z.string().min(1),
  approval_no: z.string().min(1),
  approved_at: isoInstant,
  card: wireCard,
  installment: z.number().int().min(0),
});

const cancelData = z.object({
  cancel_tid: z.string().min(1),
  cancelled_at: isoInstant,
});

const emptyData = z.object({}).optional();

const inquiryData = z.discriminatedUnion('state', [
  z.object({ state: z.literal('executed'), result: z.unknown() }),
  z.object({ state: z.literal('refused'), res_cd: z.string().min(1), res_msg: z.string() }),
  z.object({ state: z.literal('not_found') }),
]);

/** The sandbox's refusal of a key it saw with another request body. */
const KEY_REUSED = 'E422';

/** A refusal that says the key was reused is our defect, not the card's answer. */
function keyReused(err: unknown): unknown {
  return err instanceof GatewayDeclinedError && err.pgErrorCode === KEY_REUSED
    ? new GatewayKeyReusedError(`the PG refused a reused idempotency key: ${err.pgMessage}`)
    : err;
}

function toChargeResult(data: z.infer<typeof chargeData>): ChargeResult {
  return {
    gatewayTid: data.tid,
    approvedAt: data.approved_at,
    approvalNo: data.approval_no,
    card: toMaskedCard(data.card),
    quota: data.installment,
  };
}

function toMaskedCard(card: z.infer<typeof wireCard>): MaskedCard {
  return {
    maskedNumber: card.masked_no,
    cardCompany: card.issuer_name,
    cardCompanyCode: card.issuer_code,
    cardType: card.kind === 'CHECK' ? 'check' : 'credit',
  };
}

function toWireCard(card: CardDetails) {
  return {
    card_no: card.number,
    card_pw2: card.password2,
    buyer_auth_no: card.identityNo,
    exp_yy: card.expireYear,
    exp_mm: card.expireMonth,
  };
}

export function createSandboxCardGateway(http: GatewayHttpClient): CardBillingGateway {
  return {
    async issueBillingKey(req): Promise<IssuedBillingKey> {
      const data = await http.call({
        method: 'POST',
        path: '/card/v1/billing-keys',
        idempotencyKey: req.idempotencyKey,
        body: {
          ...toWireCard(req.card),
          goods_name: req.orderName,
          customer_ref: req.subscriptionId,
          ...(req.merchantId !== undefined ? { merchant_id: req.merchantId } : {}),
        },
        data: issueData,
      });
      return {
        gatewayBillingKey: data.bkey,
        gatewayTid: data.tid,
        card: toMaskedCard(data.card),
        expiresAt: data.bkey_expires_at,
        issuedAt: data.issued_at,
      };
    },

    async charge(req: ChargeRequest): Promise<ChargeResult> {
      const data = await http
        .call({
          method: 'POST',
          path: '/card/v1/charges',
          idempotencyKey: req.idempotencyKey,
          body: {
            bkey: req.gatewayBillingKey,
            amount: req.amount,
            tax_free: req.taxFree,
            order_id: req.orderId,
            goods_name: req.orderName,
            installment: req.quota,
          },
          data: chargeData,
        })
        .catch((err: unknown) => {
          throw keyReused(err);
        });
      return toChargeResult(data);
    },

    async cancel(req: GatewayCancelRequest): Promise<GatewayCancelResult> {
      const data = await http
        .call({
          method: 'POST',
          path: '/card/v1/cancels',
          idempotencyKey: req.idempotencyKey,
          body: { tid: req.gatewayTid, amount: req.amount, tax_free: req.taxFree, reason: req.reason },
          data: cancelData,
        })
        .catch((err: unknown) => {
          throw keyReused(err);
        });
      return { gatewayCancelTid: data.cancel_tid, cancelledAt: data.cancelled_at };
    },

    async inquire<K extends keyof InquiryResults>(req: {
      readonly operation: K;
      readonly idempotencyKey: string;
    }): Promise<GatewayInquiry<InquiryResults[K]>> {
      const data = await http.call({
        method: 'POST',
        path: '/card/v1/inquiries',
        body: { operation: req.operation, idempotency_key: req.idempotencyKey },
        data: inquiryData,
      });
      if (data.state === 'not_found') return { state: 'not_executed' };
      if (data.state === 'refused') return { state: 'refused', pgErrorCode: data.res_cd, pgMessage: data.res_msg };
      // the PG's own record of the first answer, read like that answer
      if (req.operation === 'charge') {
        const parsed = chargeData.safeParse(data.result);
        if (!parsed.success) throw new GatewayUnavailableError('sandbox_card: unexpected inquiry data');
        return { state: 'executed', result: toChargeResult(parsed.data) as InquiryResults[K] };
      }
      const parsed = cancelData.safeParse(data.result);
      if (!parsed.success) throw new GatewayUnavailableError('sandbox_card: unexpected inquiry data');
      const result: GatewayCancelResult = { gatewayCancelTid: parsed.data.cancel_tid, cancelledAt: parsed.data.cancelled_at };
      return { state: 'executed', result: result as InquiryResults[K] };
    },

    async destroyBillingKey(req): Promise<void> {
      await http.call({
        method: 'POST',
        path: '/card/v1/billing-keys/revoke',
        body: { bkey: req.gatewayBillingKey },
        data: emptyData,
      });
    },
  };
}

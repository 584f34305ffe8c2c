// Adapter for the sandbox's one-off payments (its stand-in for a payment window), shared by every sandbox PG
// that takes them: POST /pay/v1/payments, refunds through the card PG's cancels (the same tid space).
import { z } from 'zod';
import type { GatewayHttpClient } from './http-client.js';
import type { GatewayCancelRequest, GatewayCancelResult, PaymentGateway } from './types.js';

const isoInstant = z.iso.datetime({ offset: true }).transform((s) => new Date(s));

const payData = z.object({
  tid: z.string().min(1),
  approval_no: z.string().min(1),
  approved_at: isoInstant,
  card: z.object({
    masked_no: z.string().min(1),
    issuer_name: z.string().min(1),
    issuer_code: z.string().min(1),
    kind: z.enum(['CREDIT', 'CHECK']),
  }),
});

const cancelData = z.object({ cancel_tid: z.string().min(1), cancelled_at: isoInstant });

export function createSandboxPaymentGateway(http: GatewayHttpClient, pg: string): PaymentGateway {
  return {
    async pay(req) {
      const data = await http.call({
        method: 'POST',
        path: '/pay/v1/payments',
        idempotencyKey: req.idempotencyKey,
        body: {
          pg,
          amount: req.amount,
          tax_free: req.taxFree,
          order_id: req.orderId,
          goods_name: req.orderName,
          escrow: req.escrow,
          merchant_ref: req.merchantRef,
          ...(req.notifyUrl !== undefined ? { notify_url: req.notifyUrl } : {}),
          ...(req.merchantId !== undefined ? { merchant_id: req.merchantId } : {}),
        },
        data: payData,
      });
      return {
        gatewayTid: data.tid,
        approvedAt: data.approved_at,
        approvalNo: data.approval_no,
        card: {
          maskedNumber: data.card.masked_no,
          cardCompany: data.card.issuer_name,
          cardCompanyCode: data.card.issuer_code,
          cardType: data.card.kind === 'CHECK' ? 'check' : 'credit',
        },
      };
    },

    async cancel(req: GatewayCancelRequest): Promise<GatewayCancelResult> {
      const data = await http.call({
        method: 'POST',
        path: '/card/v1/cancels',
        idempotencyKey: req.idempotencyKey,
        body: { tid: req.gatewayTid, amount: req.amount, tax_free: req.taxFree, reason: req.reason },
        data: cancelData,
      });
      return { gatewayCancelTid: data.cancel_tid, cancelledAt: data.cancelled_at };
    },
  };
}

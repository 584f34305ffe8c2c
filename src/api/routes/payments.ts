// Payments: billing key issuance, lookup and destroy; charges with a billing key; the receipt lookup
// (GET /v2/receipt/{receipt_id}); cancels (POST /v2/cancel: a full or partial refund, recorded on the receipt).
// Raw card data lives only in the issuance handler's locals and the service call.
import type { FastifyInstance } from 'fastify';
import { parseBillingKeyRequest, parseChargeRequest, parsePgAndMethod } from '../../payments/billing-rules.js';
import { parseFeedbackTarget } from '../../webhooks/rules.js';
import { parseCancelRequest } from '../../payments/receipt-rules.js';
import { receiptResponse } from '../../payments/index.js';
import { createIdempotencyHooks } from '../idempotency.js';

export async function paymentRoutes(app: FastifyInstance): Promise<void> {
  const { services, wallClock, businessClock } = app.deps;
  const idempotency = createIdempotencyHooks({
    idempotency: app.deps.stores.idempotency,
    clock: wallClock,
    keyring: app.deps.keyring,
  });
  const idempotent = { preHandler: idempotency.preHandler, onSend: idempotency.onSend };

  app.post(
    '/v2/request/subscribe',
    {
      config: { auth: 'project', scope: 'billing_key' },
      ...idempotent,
    },
    async (request) => {
      const requestedAt = businessClock();
      const { pg } = parsePgAndMethod(request.body);
      await services.billingKeys.checkIssuingPg(request.project, pg);
      const issuance = parseBillingKeyRequest(request.body, requestedAt);
      return services.billingKeys.issue(request.project, pg, issuance, requestedAt, request.log);
    },
  );

  app.post(
    '/v2/subscribe/payment',
    {
      config: { auth: 'project', scope: 'subscribe_payment' },
      ...idempotent,
    },
    async (request) => {
      const requestedAt = businessClock();
      const params = parseChargeRequest(request.body);
      const feedback = parseFeedbackTarget(request.body, { sandbox: app.deps.config.sandbox });
      // the addresses it resolves to, by the rule its delivery connects under: refused before any PG call
      if (feedback) await services.webhooks.checkFeedbackUrl(feedback.url);
      const row = await services.charges.charge(request.project, params, requestedAt, feedback, idempotency.keyProof(request));
      request.log.info({ receipt_id: row.receipt_id, pg: row.pg }, 'billing key charged');
      return receiptResponse(row, request.project);
    },
  );

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/subscribe/billing_key/:receipt_id',
    { config: { auth: 'project', scope: 'billing_key' } },
    async (request) => services.billingKeys.lookupByReceipt(request.project, request.params.receipt_id),
  );

  app.get<{ Params: { billing_key: string } }>(
    '/v2/billing_key/:billing_key',
    { config: { auth: 'project', scope: 'billing_key' } },
    async (request) => services.billingKeys.lookup(request.project, request.params.billing_key),
  );

  app.delete<{ Params: { billing_key: string } }>(
    '/v2/subscribe/billing_key/:billing_key',
    { config: { auth: 'project', scope: 'billing_key' } },
    async (request) => services.billingKeys.destroy(request.project, request.params.billing_key, request.log),
  );

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/receipt/:receipt_id',
    { config: { auth: 'project', scope: 'receipt' } },
    async (request) => services.receipts.lookup(request.project, request.params.receipt_id),
  );

  app.post(
    '/v2/cancel',
    {
      config: { auth: 'project', scope: 'cancel' },
      ...idempotent,
    },
    async (request) => services.cancels.cancel(request.project, parseCancelRequest(request.body), request.log),
  );
}

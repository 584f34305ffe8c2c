// Payments: billing key issuance, lookup and destroy; charges with a billing key; the receipt lookup
// (GET /v2/receipt/{receipt_id}); cancels (POST /v2/cancel: a full or partial refund, recorded on the receipt).
// Raw card data lives only in the issuance handler's locals and the service call.
import type { FastifyInstance } from 'fastify';
import {
  parseBillingKeyRequest,
  parseChargeRequest,
  parsePgAndMethod,
  VERIFICATION_CHARGE_WON,
} from '../../payments/billing-rules.js';
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
      schema: {
        summary: 'Issue a billing key from card data (key-in)',
        description:
          'Checks in order: 2300 pg missing; 2058 method missing or not 카드자동(REST); 2001 pg unknown or not enabled; ' +
          '2057 pg without billing keys; 2311-2315, 2003, 2005 blanks; 2084 month outside 01-12; 2304 (no pg_error_code) ' +
          'malformed or expired card refused locally; 2304 with pg_error_code refused by the PG; 2301 PG unreachable. ' +
          `extra.subscribe_test_payment: true charges ${VERIFICATION_CHARGE_WON} won and refunds it at once; that receipt is ` +
          'receipt_data (the only case with receipt_data).',
        tags: ['billing'],
      },
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
      schema: {
        summary: 'Charge a billing key',
        description:
          'order_id is unique per project (9410 ORDER_ID_DUPLICATED). The PG call carries an idempotency key derived from ' +
          '(project, order_id): after a PG failure (9502) the receipt stays pending (status 0), the error carries its ' +
          'receipt_id to poll with GET /v2/receipt/{receipt_id}, and retrying the same charge with the same order_id ' +
          'completes it without charging twice. ' +
          'A PG refusal is 9430 PAYMENT_DECLINED with pg_error_code. ' +
          'feedback_url (https to global addresses only, checked before any PG call; loopback, http included, in sandbox ' +
          'mode) receives the receipt once the charge completes, as a ' +
          'signed webhook delivery (content_type application/json, the default, or application/x-www-form-urlencoded).',
        tags: ['billing'],
      },
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

  const lookupSchema = { summary: 'Billing key lookup', tags: ['billing'] };

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/subscribe/billing_key/:receipt_id',
    { config: { auth: 'project', scope: 'billing_key' }, schema: lookupSchema },
    async (request) => services.billingKeys.lookupByReceipt(request.project, request.params.receipt_id),
  );

  app.get<{ Params: { billing_key: string } }>(
    '/v2/billing_key/:billing_key',
    { config: { auth: 'project', scope: 'billing_key' }, schema: lookupSchema },
    async (request) => services.billingKeys.lookup(request.project, request.params.billing_key),
  );

  app.delete<{ Params: { billing_key: string } }>(
    '/v2/subscribe/billing_key/:billing_key',
    {
      config: { auth: 'project', scope: 'billing_key' },
      schema: {
        summary: 'Destroy a billing key',
        description: 'Revokes the key at the PG; later charges and lookups give 9423 BILLING_KEY_DESTROYED.',
        tags: ['billing'],
      },
    },
    async (request) => services.billingKeys.destroy(request.project, request.params.billing_key, request.log),
  );

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/receipt/:receipt_id',
    {
      config: { auth: 'project', scope: 'receipt' },
      schema: {
        summary: 'Payment receipt lookup',
        description: "Another project's receipt gives 1225 (APP_KEY_CHAIN_SESSION_INVALID); an unknown one 2000.",
        tags: ['billing'],
      },
    },
    async (request) => services.receipts.lookup(request.project, request.params.receipt_id),
  );

  app.post(
    '/v2/cancel',
    {
      config: { auth: 'project', scope: 'cancel' },
      ...idempotent,
      schema: {
        summary: 'Cancel (refund) a payment, fully or partly',
        description:
          'cancel_price omitted = everything that remains; more than remains -> 9424. A repeated cancel_id returns the ' +
          'first result; the same cancel_id with a different cancel_price or cancel_tax_free -> 9422. Fully refunded receipts move to status 20 (결제취소완료); partial refunds keep status 1 and raise ' +
          "cancelled_price. Unknown receipt 2000, another project's 1225; 9409 while another cancel of the receipt is running. " +
          'A cancel whose PG answer was lost (9502) carries receipt_id: paygate settles it, and GET /v2/receipt/{receipt_id} ' +
          'shows the refund once recorded.',
        tags: ['billing'],
      },
    },
    async (request) => services.cancels.cancel(request.project, parseCancelRequest(request.body), request.log),
  );
}

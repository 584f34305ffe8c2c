// The HTTP contract of the payments routes (payment-api.md): key-in billing keys, charges, receipts and cancels,
// and the answer shapes other areas' routes answer too (Receipt: escrow; the charge's example: reserves). The
// request bodies are the validators' own documentation (derived from the rules modules' stages), never written here.
import { z } from 'zod';
import { KEY_IN_METHOD } from '../gateways/card-rules.js';
import { PG_CALL_ERRORS } from '../gateways/index.js';
import {
  byId,
  component,
  EX,
  IDEMPOTENCY_ERRORS,
  metadata,
  type RouteContracts,
  resourceId,
  timestamp,
  won,
} from '../platform/http-contract.js';
import { describeFields } from '../platform/validation.js';
import { feedbackTargetStages } from '../webhooks/rules.js';
import { billingKeyRequestBody, chargeRequestStages, VERIFICATION_CHARGE_WON } from './billing-rules.js';
import { cancelRequestBody } from './receipt-rules.js';

const cardData = z.object({
  card_no: z.string().describe('masked: first 6 and last 4 digits at most'),
  card_quota: z.string().describe('instalment months, two digits; 00 = lump sum'),
  card_company: z.string(),
  card_company_code: z.string(),
  card_type: z.string().describe('credit | check'),
  card_approve_no: z.string().optional(),
});

const escrowData = z.object({
  status: z.number().int().describe('0 waiting for shipping, 3 shipping started, 1 purchase confirmed, ...'),
  status_locale: z.string(),
  shipping_started_at: timestamp.optional(),
  receipt_confirmed_at: timestamp.optional().describe('when the buyer confirmed the purchase (status 1)'),
  receipt_revoked_at: timestamp.optional().describe('when the buyer rejected it (status -2, -3, -1 after a rejection)'),
  escrow_confirm_url: z.string().optional().describe('where the buyer confirms (sandbox_escrow_a)'),
});

export const Receipt = component(
  'Receipt',
  z.object({
    receipt_id: resourceId,
    order_id: z.string(),
    price: won,
    tax_free: won,
    cancelled_price: won,
    cancelled_tax_free: won,
    order_name: z.string(),
    company_name: z.string().optional(),
    metadata: metadata.optional(),
    sandbox: z.boolean(),
    pg: z.string(),
    method: z.string(),
    method_symbol: z.string(),
    method_origin: z.string(),
    method_origin_symbol: z.string(),
    purchased_at: timestamp.optional(),
    requested_at: timestamp,
    cancelled_at: timestamp.optional(),
    status: z.number().int().describe('1 paid, 20 fully cancelled, 0 pending (PG outcome unknown), ...'),
    status_locale: z.string(),
    card_data: cardData.optional(),
    currency: z.literal('KRW'),
    escrow_data: escrowData.optional().describe('escrow payments only'),
  }),
);

const BillingKey = component(
  'BillingKey',
  z.object({
    billing_key: resourceId,
    billing_data: cardData.omit({ card_quota: true, card_approve_no: true }),
    billing_expire_at: timestamp,
    receipt_id: resourceId,
    subscription_id: z.string(),
    status: z.number().int().describe('11 issued'),
    status_locale: z.string(),
    pg: z.string(),
    method: z.string(),
    method_symbol: z.string(),
    method_origin: z.string(),
    method_origin_symbol: z.string(),
    published_at: timestamp,
    requested_at: timestamp,
    receipt_data: Receipt.optional().describe('only with extra.subscribe_test_payment: the verification charge, refunded'),
  }),
);

export const receiptExample = {
  receipt_id: EX.receiptId,
  order_id: 'order-1001',
  price: 1000,
  tax_free: 0,
  cancelled_price: 0,
  cancelled_tax_free: 0,
  order_name: 'Monthly plan, June',
  sandbox: true,
  pg: 'sandbox_card',
  method: KEY_IN_METHOD,
  method_symbol: 'card_rebill_rest',
  method_origin: KEY_IN_METHOD,
  method_origin_symbol: 'card_rebill_rest',
  requested_at: EX.now,
  status: 1,
  status_locale: '결제완료',
  currency: 'KRW',
  company_name: 'Sandbox Shop',
  purchased_at: EX.now,
  card_data: {
    card_no: '411111******1111',
    card_quota: '00',
    card_company: 'Sandbox VISA',
    card_company_code: 'SVS',
    card_type: 'credit',
    card_approve_no: '53228561',
  },
};

const billingKeyExample = {
  billing_key: EX.billingKey,
  billing_data: { card_no: '411111******1111', card_company: 'Sandbox VISA', card_company_code: 'SVS', card_type: 'credit' },
  billing_expire_at: '2030-12-31T23:59:59+09:00',
  receipt_id: EX.billingReceiptId,
  subscription_id: 'sub-001',
  status: 11,
  status_locale: '빌링키발급완료',
  pg: 'sandbox_card',
  method: KEY_IN_METHOD,
  method_symbol: 'card_rebill_rest',
  method_origin: KEY_IN_METHOD,
  method_origin_symbol: 'card_rebill_rest',
  published_at: EX.now,
  requested_at: EX.now,
};

/** The body of POST /v2/subscribe/payment: the charge's fields, then feedback_url and content_type. */
const chargeBody = describeFields([...chargeRequestStages, ...feedbackTargetStages]);
export const chargeExample = {
  billing_key: EX.billingKey,
  order_id: 'order-1001',
  order_name: 'Monthly plan, June',
  price: 1000,
};

const chargeErrors = [
  'SUBSCRIBE_BK_NOT_FOUND',
  'RC_NAME_BLANK',
  'RC_O_ID_BLANK',
  'INVALID_REQUEST',
  'APP_KEY_CHAIN_SESSION_INVALID',
  'BILLING_KEY_DESTROYED',
  'ORDER_ID_DUPLICATED',
  'PAYMENT_DECLINED',
  ...IDEMPOTENCY_ERRORS,
  ...PG_CALL_ERRORS,
  // the PG refused the charge's idempotency key as another request's (a paygate defect, logged)
  'PG_KEY_REUSED',
  // a relayed charge: the provider charged something other than what was asked, or named a receipt the project has
  'UPSTREAM_ANSWER_MISMATCH',
  'UPSTREAM_ID_REUSED',
] as const;

export const paymentsHttp: RouteContracts = {
  'POST /v2/request/subscribe': {
    operationId: 'issueBillingKey',
    tag: 'billing',
    summary: 'Issue a billing key from card data (key-in)',
    description:
      'Checks in order: 2300 pg missing; 2058 method missing or not 카드자동(REST); 2001 pg unknown or not enabled; ' +
      '2057 pg without billing keys; 2311-2315, 2003, 2005 blanks; 2084 month outside 01-12; 2304 (no pg_error_code) ' +
      'malformed or expired card refused locally; 2304 with pg_error_code refused by the PG; 2301 PG unreachable. ' +
      `extra.subscribe_test_payment: true charges ${VERIFICATION_CHARGE_WON} won and refunds it at once; that receipt is ` +
      'receipt_data (the only case with receipt_data).',
    body: billingKeyRequestBody,
    response: { status: 200, description: 'The issued billing key', schema: BillingKey },
    example: {
      request: {
        pg: 'sandbox_card',
        method: KEY_IN_METHOD,
        subscription_id: 'sub-001',
        order_name: 'Monthly plan',
        card_no: '4111111111111111',
        card_pw: '12',
        card_identity_no: '900101',
        card_expire_year: '30',
        card_expire_month: '12',
      },
      response: billingKeyExample,
    },
    errors: [
      'SUBSCRIBE_NEED_PG_METHOD',
      'RC_ONLY_REST_API',
      'RC_PG_NOT_FOUND',
      'RC_NOT_SUBSCRIBE',
      'SUBSCRIBE_CARD_NO_BLANK',
      'SUBSCRIBE_CARD_PW_BLANK',
      'SUBSCRIBE_CARD_IDENTITY_BLANK',
      'SUBSCRIBE_CARD_EX_YEAR_BLANK',
      'SUBSCRIBE_CARD_EX_MONTH_BLANK',
      'RC_NAME_BLANK',
      'RC_O_ID_BLANK',
      'RC_INVALID_EXP_MONTH',
      'SUBSCRIBE_PUBLISH_FAILED',
      'INVALID_REQUEST',
      'SUBSCRIBE_REQUEST_FAILED',
      ...IDEMPOTENCY_ERRORS,
      ...PG_CALL_ERRORS,
      // a relayed issuance whose provider answered with a billing key the project already holds
      'UPSTREAM_ID_REUSED',
    ],
  },
  'GET /v2/subscribe/billing_key/:receipt_id': {
    operationId: 'getBillingKeyByReceipt',
    tag: 'billing',
    summary: 'Billing key lookup',
    params: byId('receipt_id'),
    response: { status: 200, description: 'The billing key issued by this receipt', schema: BillingKey },
    example: { response: billingKeyExample },
    // the issuance record of an unknown receipt_id is 2309, as the spec names a missing issuance record
    errors: ['SUBSCRIBE_BK_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'BILLING_KEY_DESTROYED'],
  },
  'GET /v2/billing_key/:billing_key': {
    operationId: 'getBillingKey',
    tag: 'billing',
    summary: 'Billing key lookup',
    params: byId('billing_key'),
    response: { status: 200, description: 'The billing key', schema: BillingKey },
    example: { response: billingKeyExample },
    errors: ['SUBSCRIBE_BK_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'BILLING_KEY_DESTROYED'],
  },
  'DELETE /v2/subscribe/billing_key/:billing_key': {
    operationId: 'destroyBillingKey',
    tag: 'billing',
    summary: 'Destroy a billing key',
    description: 'Revokes the key at the PG; later charges and lookups give 9423 BILLING_KEY_DESTROYED.',
    params: byId('billing_key'),
    response: { status: 200, description: 'The destroyed key', schema: z.object({ billing_key: z.string() }) },
    example: { response: { billing_key: EX.billingKey } },
    errors: ['SUBSCRIBE_BK_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'BILLING_KEY_DESTROYED', ...PG_CALL_ERRORS],
  },
  'POST /v2/subscribe/payment': {
    operationId: 'chargeBillingKey',
    tag: 'billing',
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
    body: chargeBody,
    response: { status: 200, description: 'The payment receipt (status 1)', schema: Receipt },
    example: { request: chargeExample, response: receiptExample },
    errors: chargeErrors,
  },
  'GET /v2/receipt/:receipt_id': {
    operationId: 'getReceipt',
    tag: 'billing',
    summary: 'Payment receipt lookup',
    description: "Another project's receipt gives 1225 (APP_KEY_CHAIN_SESSION_INVALID); an unknown one 2000.",
    params: byId('receipt_id'),
    response: { status: 200, description: 'The payment receipt', schema: Receipt },
    example: { response: receiptExample },
    errors: ['RC_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID'],
  },
  'POST /v2/cancel': {
    operationId: 'cancelPayment',
    tag: 'billing',
    summary: 'Cancel (refund) a payment, fully or partly',
    description:
      'cancel_price omitted = everything that remains; more than remains -> 9424. A repeated cancel_id returns the ' +
      'first result; the same cancel_id with a different cancel_price or cancel_tax_free -> 9422. Fully refunded receipts move to status 20 (결제취소완료); partial refunds keep status 1 and raise ' +
      "cancelled_price. Unknown receipt 2000, another project's 1225; 9409 while another cancel of the receipt is running. " +
      'A cancel whose PG answer was lost (9502) carries receipt_id: paygate settles it, and GET /v2/receipt/{receipt_id} ' +
      'shows the refund once recorded.',
    body: cancelRequestBody,
    response: { status: 200, description: 'The receipt after the cancel', schema: Receipt },
    example: {
      request: { receipt_id: EX.receiptId, cancel_id: 'cancel-1', cancel_price: 400, cancel_message: 'partial refund' },
      response: { ...receiptExample, cancelled_price: 400, cancelled_at: EX.now },
    },
    errors: [
      'RC_NOT_FOUND',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'INVALID_REQUEST',
      'CANCEL_PRICE_EXCEEDED',
      'RECEIPT_NOT_CANCELLABLE',
      ...IDEMPOTENCY_ERRORS,
      ...PG_CALL_ERRORS,
      'PG_KEY_REUSED',
    ],
  },
};

// Documentation of the spec's routes (payment-api.md): the legacy token, key-in billing, receipts and
// cancels, identity verification and escrow. The request bodies are the validators' own documentation
// (derived from the rules modules' stages), never written here.
import { z } from 'zod';
import { shippingStartBody } from '../../escrow/rules.js';
import { KEY_IN_METHOD } from '../../gateways/card-rules.js';
import { billingKeyRequestBody, chargeRequestStages } from '../../payments/billing-rules.js';
import { cancelRequestBody } from '../../payments/receipt-rules.js';
import { describeFields } from '../../platform/validation.js';
import { tokenRequestSchema } from '../../projects/index.js';
import { confirmRequestBody, receiptIdRequestBody, verificationRequestBody } from '../../verification/rules.js';
import { feedbackTargetStages } from '../../webhooks/rules.js';
import { byId, EX, type RouteDocs } from './route-doc.js';
import { BillingKey, Receipt, timestamp, VerificationRequested, VerificationResult } from './schemas.js';

const receiptExample = {
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

const escrowReceiptExample = {
  ...receiptExample,
  receipt_id: EX.escrowReceiptId,
  order_id: 'order-2001',
  price: 30000,
  order_name: 'Desk lamp',
  pg: 'sandbox_escrow_a',
  method: 'card',
  method_symbol: 'card',
  method_origin: 'card',
  method_origin_symbol: 'card',
  card_data: { ...receiptExample.card_data, card_no: '4000-00**-****-0000', card_approve_no: '49305992' },
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

const verificationBase = {
  receipt_id: EX.verificationId,
  authentication_id: 'auth-1',
  metadata: {},
  pg: 'sandbox_identity',
  method: 'auth',
  method_symbol: 'auth',
  method_origin: '본인인증',
  method_origin_symbol: 'auth',
  requested_at: EX.now,
};
const verificationRequestedExample = {
  ...verificationBase,
  status: 51,
  authenticate_data: { tid: 'sid_7f1c7c29831c1f6b017652dc', number_of_realarms: 0 },
};
const verificationResultExample = {
  ...verificationBase,
  gateway_url: 'https://pay.example.com',
  status: 12,
  status_locale: '본인인증완료',
  authenticated_at: EX.now,
  authenticate_data: {
    name: '홍길동',
    phone: '01091234567',
    birth: '19900101',
    gender: 1,
    foreigner: '0',
    carrier: 'SKT',
    unique: 'F+EKj3TrctN/M1JXwggmPqZq3okmGriL3S34X3eUH7CBsZJuLzuMQAwwMCVBmS+cj9uV78us2GHUUm6mWNoPHQ==',
    di: '/P4hQIPnpbatxCXSYOJd8WiAZESrSHKO+3osNFaU7IL35zZ1uS1lbwxlK7uj5Nw107h1TgezlKgzZSnwb2i9pw==',
    tid: 'sid_7f1c7c29831c1f6b017652dc',
  },
};

/** The body of POST /v2/subscribe/payment: the charge's fields, then feedback_url and content_type. */
const chargeBody = describeFields([...chargeRequestStages, ...feedbackTargetStages]);
export const chargeExample = {
  billing_key: EX.billingKey,
  order_id: 'order-1001',
  order_name: 'Monthly plan, June',
  price: 1000,
};
export { receiptExample };

const chargeErrors = [
  'SUBSCRIBE_BK_NOT_FOUND',
  'RC_NAME_BLANK',
  'RC_O_ID_BLANK',
  'INVALID_REQUEST',
  'APP_KEY_CHAIN_SESSION_INVALID',
  'BILLING_KEY_DESTROYED',
  'ORDER_ID_DUPLICATED',
  'PAYMENT_DECLINED',
  'IDEMPOTENCY_IN_PROGRESS',
  'IDEMPOTENCY_KEY_REUSED',
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_TIMEOUT',
] as const;

export const specRouteDocs: RouteDocs = {
  'POST /v2/request/token': {
    operationId: 'requestToken',
    tag: 'auth',
    summary: 'Issue a legacy access token',
    body: tokenRequestSchema,
    response: {
      status: 200,
      description: 'A Bearer token valid for 30 minutes, carrying the project scopes',
      schema: z.object({ access_token: z.string(), expired_at: timestamp, expire_in: z.number().int() }),
    },
    example: {
      request: { application_id: EX.applicationId, private_key: '1xHCo_x8aYV0XMhSGIHlZ7HepGlb517RrHNw6T0IlUk' },
      response: { access_token: 'ivu7sdVkTymXh7RF5dOaTtHyBoBlztFnXSIzdEr2f9Q', expired_at: EX.now, expire_in: 1800 },
    },
    errors: ['INVALID_REQUEST', 'APP_CLIENT_KEY_NOT_FOUND', 'APP_SK_NOT_MATCHED', 'APP_FIREWALL_BLOCKED', 'TOO_MANY_REQUESTS'],
  },
  'POST /v2/request/subscribe': {
    operationId: 'issueBillingKey',
    tag: 'billing',
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
      'IDEMPOTENCY_IN_PROGRESS',
      'IDEMPOTENCY_KEY_REUSED',
    ],
  },
  'GET /v2/subscribe/billing_key/:receipt_id': {
    operationId: 'getBillingKeyByReceipt',
    tag: 'billing',
    params: byId('receipt_id'),
    response: { status: 200, description: 'The billing key issued by this receipt', schema: BillingKey },
    example: { response: billingKeyExample },
    errors: ['RC_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'BILLING_KEY_DESTROYED'],
  },
  'GET /v2/billing_key/:billing_key': {
    operationId: 'getBillingKey',
    tag: 'billing',
    params: byId('billing_key'),
    response: { status: 200, description: 'The billing key', schema: BillingKey },
    example: { response: billingKeyExample },
    errors: ['SUBSCRIBE_BK_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'BILLING_KEY_DESTROYED'],
  },
  'DELETE /v2/subscribe/billing_key/:billing_key': {
    operationId: 'destroyBillingKey',
    tag: 'billing',
    params: byId('billing_key'),
    response: { status: 200, description: 'The destroyed key', schema: z.object({ billing_key: z.string() }) },
    example: { response: { billing_key: EX.billingKey } },
    errors: ['SUBSCRIBE_BK_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'BILLING_KEY_DESTROYED', 'GATEWAY_UNAVAILABLE'],
  },
  'POST /v2/subscribe/payment': {
    operationId: 'chargeBillingKey',
    tag: 'billing',
    body: chargeBody,
    response: { status: 200, description: 'The payment receipt (status 1)', schema: Receipt },
    example: { request: chargeExample, response: receiptExample },
    errors: chargeErrors,
  },
  'GET /v2/receipt/:receipt_id': {
    operationId: 'getReceipt',
    tag: 'billing',
    params: byId('receipt_id'),
    response: { status: 200, description: 'The payment receipt', schema: Receipt },
    example: { response: receiptExample },
    errors: ['RC_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID'],
  },
  'POST /v2/cancel': {
    operationId: 'cancelPayment',
    tag: 'billing',
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
      'IDEMPOTENCY_IN_PROGRESS',
      'IDEMPOTENCY_KEY_REUSED',
      'GATEWAY_UNAVAILABLE',
      'GATEWAY_TIMEOUT',
    ],
  },
  'POST /v2/request/authentication': {
    operationId: 'requestVerification',
    tag: 'verification',
    body: verificationRequestBody,
    response: { status: 200, description: 'The verification, awaiting the OTP (status 51)', schema: VerificationRequested },
    example: {
      request: {
        pg: 'sandbox_identity',
        method: '본인인증',
        order_name: 'Sign-up',
        authentication_id: 'auth-1',
        username: '홍길동',
        identity_no: '9001011',
        phone: '01091234567',
        carrier: 'SKT',
      },
      response: verificationRequestedExample,
    },
    errors: [
      'AUTH_NEED_PG_METHOD',
      'RC_PG_NOT_FOUND',
      'AUTH_CONFIRM_METHOD_NOT_FOUND',
      'RC_NAME_BLANK',
      'RC_O_ID_BLANK',
      'AUTH_CONFIRM_READY_FAILED',
      'AUTH_REQUEST_FAILED',
      'VERIFICATION_SEND_LIMIT',
      'INVALID_REQUEST',
      'IDEMPOTENCY_IN_PROGRESS',
      'IDEMPOTENCY_KEY_REUSED',
      'SERVICE_UNAVAILABLE',
    ],
  },
  'POST /v2/authenticate/realarm': {
    operationId: 'resendVerificationOtp',
    tag: 'verification',
    body: receiptIdRequestBody,
    response: { status: 200, description: 'The verification, number_of_realarms counted', schema: VerificationRequested },
    example: {
      request: { receipt_id: EX.verificationId },
      response: {
        ...verificationRequestedExample,
        authenticate_data: { tid: 'sid_7f1c7c29831c1f6b017652dc', number_of_realarms: 1 },
      },
    },
    errors: [
      'AUTH_NOT_FOUND',
      'RC_NOT_AUTH',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'AUTH_NOT_READY',
      'AUTH_REALARM_NOT_ABLE',
      'AUTH_REALARM_FAILED',
      'VERIFICATION_SEND_LIMIT',
      'IDEMPOTENCY_IN_PROGRESS',
      'IDEMPOTENCY_KEY_REUSED',
    ],
  },
  'POST /v2/authenticate/confirm': {
    operationId: 'confirmVerification',
    tag: 'verification',
    body: confirmRequestBody,
    response: { status: 200, description: 'The verified person (status 12)', schema: VerificationResult },
    example: { request: { receipt_id: EX.verificationId, otp: '940642' }, response: verificationResultExample },
    errors: [
      'AUTH_NOT_FOUND',
      'RC_NOT_AUTH',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'AUTH_NOT_READY',
      'AUTH_CONFIRM_FAILED',
      'IDEMPOTENCY_IN_PROGRESS',
      'IDEMPOTENCY_KEY_REUSED',
    ],
  },
  'GET /v2/certificate/:receipt_id': {
    operationId: 'getVerificationCertificate',
    tag: 'verification',
    params: byId('receipt_id'),
    response: { status: 200, description: 'The verified person', schema: VerificationResult },
    example: { response: verificationResultExample },
    errors: ['AUTH_NOT_FOUND', 'RC_NOT_AUTH', 'APP_KEY_CHAIN_SESSION_INVALID', 'AUTH_NOT_CONFIRMED', 'AUTH_EXPIRED'],
  },
  'PUT /v2/escrow/shipping/start/:receipt_id': {
    operationId: 'startEscrowShipping',
    tag: 'escrow',
    params: byId('receipt_id'),
    body: shippingStartBody,
    response: { status: 200, description: 'The receipt, escrow_data.status 3', schema: Receipt },
    example: {
      request: { delivery_corp: 'CJ대한통운', tracking_number: '123456789012' },
      response: {
        ...escrowReceiptExample,
        escrow_data: {
          status: 3,
          status_locale: '배송시작',
          shipping_started_at: EX.now,
          escrow_confirm_url: 'https://escrow-a.sandbox.invalid/confirm/spy_13868011b85ccbb6e2253d00',
        },
      },
    },
    errors: [
      'RC_NOT_FOUND',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'RC_NOT_ESCROW',
      'RC_NOT_CONFIRMED',
      'RC_ESCROW_NOT_READY',
      'RC_TRACKING_NUMBER_BLANK',
      'RC_DELIVERY_CORP_BLANK',
      'RC_ESCROW_SHIPPING_NO_METHOD',
      'RC_PROVIDER_NAME_BLANK',
      'RC_PROVIDER_ADDR1_BLANK',
      'RC_PROVIDER_ADDR2_BLANK',
      'RC_PROVIDER_ZIP_BLANK',
      'RC_PROVIDER_PHONE_BLANK',
      'RC_USER_NAME_BLANK',
      'RC_USER_PHONE_BLANK',
      'RC_USER_ADDRESS_BLANK',
      'RC_USER_ZIPCODE_BLANK',
      'RC_ESCROW_SHIPPING_START_FAILED',
      'API_ONLY_SELLER',
    ],
  },
  'GET /v2/escrow/:receipt_id/events': {
    operationId: 'listEscrowEvents',
    tag: 'escrow',
    params: byId('receipt_id'),
    response: {
      status: 200,
      description: 'Every event of the order, oldest first',
      schema: z.object({
        list: z.array(
          z.object({
            seq: z.number().int(),
            event: z.string(),
            source: z.enum(['api', 'pg_notification', 'reconcile']),
            from_status: z.number().int().optional(),
            to_status: z.number().int().optional(),
            applied: z.boolean(),
            note: z.string().optional(),
            notification_id: z.string().optional(),
            delivery_id: z.string().optional(),
            occurred_at: timestamp,
            recorded_at: timestamp,
          }),
        ),
      }),
    },
    example: {
      response: {
        list: [
          {
            seq: 1,
            event: 'shipping_started',
            source: 'api',
            from_status: 0,
            to_status: 3,
            applied: true,
            delivery_id: EX.deliveryId,
            occurred_at: EX.now,
            recorded_at: EX.now,
          },
        ],
      },
    },
    errors: ['RC_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'RC_NOT_ESCROW'],
  },
  'POST /pg/v1/escrow/notifications/:pg': {
    operationId: 'receiveEscrowNotification',
    tag: 'escrow',
    params: z.object({ pg: z.string() }),
    body: z.looseObject({}).describe("the PG's signed notification, verified over the exact bytes"),
    response: {
      status: 200,
      description: 'Recorded and signalled to the order',
      schema: z.object({ received: z.literal(true) }),
    },
    example: { request: { notification_id: 'ntf_36eb5b34fe4d68d2b389f1a6' }, response: { received: true } },
    errors: ['PG_NOTIFICATION_INVALID', 'NOT_FOUND', 'INVALID_REQUEST'],
  },
};

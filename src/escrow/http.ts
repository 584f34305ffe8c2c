// The HTTP contract of the escrow routes (payment-api.md): shipping start, the order's events, the PGs'
// notifications, and the sandbox's payments, buyer events and what the sandbox PGs received. The request bodies
// and the query are the validators' own documentation (./rules.ts), never written here.
import { z } from 'zod';
import { receiptExample, Receipt } from '../payments/index.js';
import { PG_CALL_ERRORS } from '../gateways/index.js';
import { byId, EX, IDEMPOTENCY_ERRORS, type RouteContracts, timestamp } from '../platform/http-contract.js';
import { pgRequestsQueryDoc, sandboxBuyerEventBody, sandboxPaymentRequestBody, shippingStartBody } from './rules.js';

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

export const escrowHttp: RouteContracts = {
  'PUT /v2/escrow/shipping/start/:receipt_id': {
    operationId: 'startEscrowShipping',
    tag: 'escrow',
    summary: 'Escrow shipping start',
    description:
      'Registers carrier and tracking number with the escrow PG and moves escrow_data.status from 0 to 3. Checks in ' +
      'order: 2000, 2703, 2069, 2700 (also a repeated call), 2706, 2707, 2702 (HTTP 404), then for sandbox_escrow_a ' +
      'the merchant registration (2708-2712) and the recipient after its fallbacks (2713-2716), then the PG (2701, ' +
      'HTTP 500, with pg_error_code). A PG that cannot be reached gives 9502 (HTTP 502) or 9504 (HTTP 504) with the ' +
      'receipt_id (9481, HTTP 503, while an upstream provider is down): send the same start again; the next one asks ' +
      'the PG first, so one registered under a lost answer is recorded, never sent twice. receipt_id / receipt_url ' +
      'in the body are ignored.',
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
      ...PG_CALL_ERRORS,
    ],
  },
  'GET /v2/escrow/:receipt_id/events': {
    operationId: 'listEscrowEvents',
    tag: 'escrow',
    summary: 'Escrow events history',
    description:
      'Every event of the escrow order, oldest first: the transitions (applied) and the notifications recorded and ' +
      'ignored (duplicates, events that did not fit the state), with their source (api, pg_notification, reconcile) and ' +
      'the ESCROW_STATUS_CHANGED webhook delivery each transition produced.',
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
    summary: 'Escrow PG notification (called by the PG)',
    description: "A buyer's event on an escrow order, signed by the PG; it is signalled to the order's workflow.",
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

  // ---- sandbox helpers (sandbox mode only)
  'POST /sandbox/v1/payments': {
    operationId: 'makeSandboxPayment',
    tag: 'sandbox',
    summary: 'Make a sandbox payment',
    description:
      'Body {pg, price, order_id, order_name, tax_free?, escrow?, user?: {username, phone, email, address, zipcode}, ' +
      'metadata?}: the PG approves at once and the full receipt (status 1) is returned; with escrow: true it carries ' +
      'escrow_data.status 0 and, for sandbox_escrow_a / sandbox_escrow_b, the order starts its workflow. The buyer is ' +
      'stored sealed, for the recipient fallbacks of shipping start. Sandbox mode only.',
    body: sandboxPaymentRequestBody,
    response: { status: 200, description: 'The approved receipt (status 1)', schema: Receipt },
    example: {
      request: { pg: 'sandbox_escrow_a', price: 30000, order_id: 'order-2001', order_name: 'Desk lamp', escrow: true },
      response: {
        ...receiptExample,
        receipt_id: EX.escrowReceiptId,
        order_id: 'order-2001',
        price: 30000,
        order_name: 'Desk lamp',
        pg: 'sandbox_escrow_a',
        escrow_data: { status: 0, status_locale: '에스크로대기' },
      },
    },
    errors: ['RC_PG_NOT_FOUND', 'INVALID_REQUEST', 'ORDER_ID_DUPLICATED', ...IDEMPOTENCY_ERRORS, 'GATEWAY_UNAVAILABLE'],
  },
  'POST /sandbox/v1/escrow/:receipt_id/events': {
    operationId: 'sendSandboxBuyerEvent',
    tag: 'sandbox',
    summary: "Play the buyer's side of an escrow order",
    description:
      'Body {event: purchase_confirmed | purchase_rejected | rejection_approved | settlement_held, duplicate?}: the ' +
      "sandbox PG records the buyer's act and sends its signed notification to paygate (twice with duplicate: true), " +
      'which moves the order. 202. Sandbox mode only.',
    params: byId('receipt_id'),
    body: sandboxBuyerEventBody,
    response: {
      status: 202,
      description: 'The sandbox PG sent its signed notification',
      schema: z.object({ notification_id: z.string(), sent: z.boolean() }),
    },
    example: {
      request: { event: 'purchase_confirmed' },
      response: { notification_id: 'ntf_36eb5b34fe4d68d2b389f1a6', sent: true },
    },
    errors: ['RC_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'RC_NOT_ESCROW', 'INVALID_REQUEST', ...IDEMPOTENCY_ERRORS],
  },
  'GET /sandbox/v1/pg-requests': {
    operationId: 'listSandboxPgRequests',
    tag: 'sandbox',
    summary: 'What the sandbox PG received for a payment',
    description:
      'Every request the sandbox PGs received for the receipt (payment, shipping start, status inquiries), newest first.',
    querystring: pgRequestsQueryDoc,
    response: {
      status: 200,
      description: 'What the sandbox PGs received for the payment, newest first',
      schema: z.object({
        list: z.array(
          z.object({ pg: z.string(), operation: z.string(), body: z.record(z.string(), z.unknown()), received_at: z.string() }),
        ),
      }),
    },
    example: {
      response: {
        list: [
          {
            pg: 'sandbox_escrow_a',
            operation: 'escrow.ship',
            body: { invoice_no: '123456789012', dlv_company_code: '04', prepay: 'SH', dlv_day: 5 },
            received_at: '2026-11-25T00:00:00.000Z',
          },
        ],
      },
    },
    errors: ['RC_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID'],
  },
};

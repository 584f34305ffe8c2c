// Documentation of the sandbox helpers: the SMS inbox, payments and buyer events, what the PGs received, faults, the clock.
// The bodies and queries are the validators' own documentation, never written here.
import { z } from 'zod';
import { pgRequestsQueryDoc, sandboxBuyerEventBody, sandboxPaymentRequestBody } from '../../escrow/rules.js';
import { faultKindDoc, faultOperationDoc, sandboxFaultBody } from '../../gateways/index.js';
import { sandboxInboxQueryDoc } from '../../verification/rules.js';
import { advanceBody } from '../routes/sandbox-clock.js';
import { byId, EX, IDEMPOTENCY_ERRORS, type RouteDocs } from './route-doc.js';
import { receiptExample } from './routes-spec.js';
import { Receipt, timestamp } from './schemas.js';

const sandboxFault = z.object({
  fault_id: z.string(),
  pg: z.string(),
  operation: faultOperationDoc,
  fault: faultKindDoc,
  count: z.number().int(),
  remaining: z.number().int(),
  created_at: timestamp,
});
const faultExample = {
  fault_id: 'flt_3f1c0d9a2b7e4c51a0d2e6f7',
  pg: 'sandbox_card',
  operation: 'charge',
  fault: 'timeout',
  count: 1,
  remaining: 1,
  created_at: EX.now,
};

export const sandboxRouteDocs: RouteDocs = {
  'GET /sandbox/v1/sms': {
    operationId: 'listSandboxSms',
    tag: 'sandbox',
    querystring: sandboxInboxQueryDoc,
    response: {
      status: 200,
      description: 'The SMS the sandbox identity gateway sent to the phone, newest first',
      schema: z.object({
        list: z.array(z.object({ phone: z.string(), message: z.string(), otp: z.string(), sent_at: timestamp })),
      }),
    },
    example: {
      response: {
        list: [
          {
            phone: '01091234567',
            message: '[paygate sandbox] Your verification code is 940642. It expires in 30 minutes.',
            otp: '940642',
            sent_at: EX.now,
          },
        ],
      },
    },
    errors: ['INVALID_REQUEST', 'GATEWAY_UNAVAILABLE'],
  },
  'POST /sandbox/v1/payments': {
    operationId: 'makeSandboxPayment',
    tag: 'sandbox',
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
  'POST /sandbox/v1/faults': {
    operationId: 'armSandboxFault',
    tag: 'sandbox',
    body: sandboxFaultBody,
    response: { status: 201, description: 'The armed fault', schema: sandboxFault },
    example: { request: { pg: 'sandbox_card', operation: 'charge', fault: 'timeout' }, response: faultExample },
    errors: [
      'SANDBOX_FAULT_INVALID',
      'SANDBOX_FAULT_PG_UNKNOWN',
      'SANDBOX_FAULT_OPERATION_UNSUPPORTED',
      'SANDBOX_FAULT_KIND_UNSUPPORTED',
      'SANDBOX_FAULTS_TOO_MANY',
      ...IDEMPOTENCY_ERRORS,
      'GATEWAY_UNAVAILABLE',
    ],
  },
  'GET /sandbox/v1/faults': {
    operationId: 'listSandboxFaults',
    tag: 'sandbox',
    response: { status: 200, description: 'The armed faults, oldest first', schema: z.object({ list: z.array(sandboxFault) }) },
    example: { response: { list: [faultExample] } },
    errors: ['GATEWAY_UNAVAILABLE'],
  },
  'DELETE /sandbox/v1/faults': {
    operationId: 'disarmSandboxFaults',
    tag: 'sandbox',
    response: { status: 200, description: 'How many were disarmed', schema: z.object({ disarmed: z.number().int() }) },
    example: { response: { disarmed: 1 } },
    errors: ['GATEWAY_UNAVAILABLE'],
  },
  'GET /sandbox/v1/clock': {
    operationId: 'getSandboxClock',
    tag: 'sandbox',
    response: { status: 200, description: 'The sandbox time', schema: z.object({ now: timestamp }) },
    example: { response: { now: EX.now } },
    errors: [],
  },
  'POST /sandbox/v1/clock/advance': {
    operationId: 'advanceSandboxClock',
    tag: 'sandbox',
    body: advanceBody,
    response: {
      status: 200,
      description: 'The new time, and whether everything due has run',
      schema: z.object({ now: timestamp, settled: z.boolean() }),
    },
    example: { request: { seconds: 86400 }, response: { now: '2026-11-26T09:00:00+09:00', settled: true } },
    errors: ['SANDBOX_CLOCK_INVALID', 'INVALID_REQUEST'],
  },
};

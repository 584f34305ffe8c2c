// Documentation of paygate's routes beyond the spec's core: reserved charges, subscription schedules,
// the messaging webhook API and the sandbox helpers.
import { z } from 'zod';
import { byId, EX, type RouteDocs } from './route-doc.js';
import { chargeBody, chargeExample, receiptExample } from './routes-spec.js';
import {
  Delivery,
  DeliveryQueued,
  messageEventCode,
  Receipt,
  Reserve,
  resourceId,
  Schedule,
  ScheduleCharge,
  timestamp,
  WebhookConfig,
} from './schemas.js';

const scheduleExample = {
  schedule_id: EX.scheduleId,
  billing_key: EX.billingKey,
  order_name: 'Pro plan',
  price: 9900,
  tax_free: 0,
  interval: 'month',
  interval_count: 1,
  start_at: EX.now,
  status: 'active',
  next_charge_at: EX.now,
  charges_made: 0,
  created_at: EX.now,
  updated_at: EX.now,
  metadata: {},
};
const { next_charge_at: _next, ...pausedSchedule } = scheduleExample;

const webhookConfigExample = {
  configured: true,
  url: 'https://shop.example.com/hooks/alimtalk',
  events: [301, 302, 304],
  enabled: true,
  secret: 'whsec_IHFzd8**************************************',
  consecutive_failures: 0,
  auto_disabled_at: null,
  retry_count: 10,
};

export const deliveryExample = {
  delivery_id: EX.deliveryId,
  event: 'alimtalk.send.succeeded',
  event_code: 301,
  url: 'https://shop.example.com/hooks/alimtalk',
  status: 'done',
  retry_count: 1,
  max_retry: 10,
  tags: [EX.messageId, 'ref-1', 'WELCOME_01'],
  created_at: EX.now,
  attempts: [{ attempt: 1, attempted_at: EX.now, duration_ms: 66, http_status: 200, response_body: 'ok' }],
};
export const queuedExample = { delivery_id: EX.deliveryId, url: 'https://shop.example.com/hooks/alimtalk', queued: true };
export const pageQuery = z.object({
  page: z.coerce.number().int().min(1).optional(),
  limit: z.coerce.number().int().min(1).optional(),
});
export const page = { page: z.number().int(), per: z.number().int(), count: z.number().int() };

const idempotent = ['IDEMPOTENCY_IN_PROGRESS', 'IDEMPOTENCY_KEY_REUSED'] as const;
const scheduleLookup = ['SCHEDULE_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID'] as const;
const buyer = z.looseObject({
  username: z.string().optional(),
  phone: z.string().optional(),
  email: z.string().optional(),
  address: z.string().optional(),
  zipcode: z.string().optional(),
});

const faultOperation = z.enum([
  'issue_billing_key',
  'charge',
  'cancel',
  'destroy_billing_key',
  'payment',
  'send_otp',
  'resend_otp',
  'confirm_otp',
  'shipping_start',
  'escrow_status',
  'escrow_notification',
]);
const faultKind = z
  .enum(['timeout', 'error', 'lost_response', 'drop'])
  .describe(
    'timeout: held past the timeout, then executed; error: HTTP 500, nothing executed; lost_response: executed, no answer; drop: escrow_notification only, never sent',
  );
const sandboxFault = z.object({
  fault_id: z.string(),
  pg: z.string(),
  operation: faultOperation,
  fault: faultKind,
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

export const extensionRouteDocs: RouteDocs = {
  // ---- reserved charges
  'POST /v2/subscribe/payment/reserve': {
    operationId: 'reserveCharge',
    tag: 'reserves',
    body: chargeBody.extend({
      reserve_execute_at: timestamp.describe('after now, at most 1 year ahead'),
      user: z.record(z.string(), z.unknown()).optional(),
      items: z.array(z.record(z.string(), z.unknown())).optional(),
    }),
    response: {
      status: 200,
      description: 'The reserve; the charge runs at reserve_execute_at',
      schema: z.object({ reserve_id: resourceId, reserve_execute_at: timestamp }),
    },
    example: {
      request: { ...chargeExample, order_id: 'order-1002', reserve_execute_at: EX.later },
      response: { reserve_id: EX.reserveId, reserve_execute_at: EX.later },
    },
    errors: [
      'SUBSCRIBE_BK_NOT_FOUND',
      'RC_NAME_BLANK',
      'RC_O_ID_BLANK',
      'INVALID_REQUEST',
      'RESERVE_EXECUTE_AT_INVALID',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'BILLING_KEY_DESTROYED',
      'ORDER_ID_DUPLICATED',
      ...idempotent,
      'SERVICE_UNAVAILABLE',
    ],
  },
  'GET /v2/subscribe/payment/reserve/:reserve_id': {
    operationId: 'getReserve',
    tag: 'reserves',
    params: byId('reserve_id'),
    response: { status: 200, description: 'The reserved charge', schema: Reserve },
    example: {
      response: {
        reserve_id: EX.reserveId,
        order_id: 'order-1002',
        price: 1000,
        tax_free: 0,
        order_name: 'Monthly plan, June',
        user: {},
        metadata: {},
        reserve_requested_at: EX.now,
        reserve_execute_at: EX.later,
        status: 'reserved',
      },
    },
    errors: ['RESERVE_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID'],
  },
  'DELETE /v2/subscribe/payment/reserve/:reserve_id': {
    operationId: 'revokeReserve',
    tag: 'reserves',
    params: byId('reserve_id'),
    response: {
      status: 200,
      description: 'Revoked',
      schema: z.object({ reserve_id: resourceId, success: z.literal(true) }),
    },
    example: { response: { reserve_id: EX.reserveId, success: true } },
    errors: ['RESERVE_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'RESERVE_NOT_REVOKABLE', 'SERVICE_UNAVAILABLE'],
  },

  // ---- subscription schedules
  'POST /v2/subscribe/schedules': {
    operationId: 'createSchedule',
    tag: 'schedules',
    body: z.object({
      billing_key: z.string(),
      order_name: z.string(),
      price: z.number().int().min(1),
      tax_free: z.number().int().min(0).optional(),
      interval: z.enum(['day', 'week', 'month', 'year']),
      interval_count: z.number().int().min(1).max(365).optional(),
      start_at: timestamp.optional().describe('default now; at most 5 minutes in the past'),
      max_charges: z.number().int().min(1).optional(),
      end_at: timestamp.optional(),
      retry: z
        .object({
          delays: z
            .array(z.union([z.string(), z.number().int()]))
            .max(10)
            .describe('ISO 8601 durations or seconds'),
          on_exhausted: z.enum(['pause', 'cancel']),
        })
        .partial()
        .optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
    }),
    response: { status: 201, description: 'The schedule', schema: Schedule },
    example: {
      request: { billing_key: EX.billingKey, order_name: 'Pro plan', price: 9900, interval: 'month', start_at: EX.now },
      response: scheduleExample,
    },
    errors: [
      'SUBSCRIBE_BK_NOT_FOUND',
      'INVALID_REQUEST',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'BILLING_KEY_DESTROYED',
      ...idempotent,
      'SERVICE_UNAVAILABLE',
    ],
  },
  'GET /v2/subscribe/schedules': {
    operationId: 'listSchedules',
    tag: 'schedules',
    querystring: pageQuery.extend({
      billing_key: z.string().optional(),
      status: z.enum(['active', 'past_due', 'paused', 'cancelled', 'completed']).optional(),
    }),
    response: {
      status: 200,
      description: 'Schedules, newest first',
      schema: z.object({ list: z.array(Schedule), ...page }),
    },
    example: { response: { list: [scheduleExample], page: 1, per: 20, count: 1 } },
    errors: ['INVALID_REQUEST'],
  },
  'GET /v2/subscribe/schedules/:schedule_id': {
    operationId: 'getSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The schedule', schema: Schedule },
    example: { response: scheduleExample },
    errors: [...scheduleLookup],
  },
  'GET /v2/subscribe/schedules/:schedule_id/charges': {
    operationId: 'listScheduleCharges',
    tag: 'schedules',
    params: byId('schedule_id'),
    response: { status: 200, description: "The schedule's periods", schema: z.object({ list: z.array(ScheduleCharge) }) },
    example: {
      response: {
        list: [
          {
            period: 1,
            order_id: `${EX.scheduleId}-1`,
            due_at: EX.now,
            status: 'paid',
            attempts: 1,
            receipt_id: EX.receiptId,
            charged_at: EX.now,
          },
        ],
      },
    },
    errors: [...scheduleLookup],
  },
  'GET /v2/subscribe/schedules/:schedule_id/upcoming': {
    operationId: 'listScheduleUpcoming',
    tag: 'schedules',
    params: byId('schedule_id'),
    querystring: z.object({ count: z.coerce.number().int().min(1).max(100).optional() }),
    response: {
      status: 200,
      description: 'The next due times',
      schema: z.object({ schedule_id: resourceId, list: z.array(timestamp) }),
    },
    example: {
      response: { schedule_id: EX.scheduleId, list: ['2026-11-25T09:00:00+09:00', '2026-12-25T09:00:00+09:00'] },
    },
    errors: [...scheduleLookup, 'INVALID_REQUEST'],
  },
  'POST /v2/subscribe/schedules/:schedule_id/pause': {
    operationId: 'pauseSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The paused schedule', schema: Schedule },
    example: { response: { ...pausedSchedule, status: 'paused' } },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', ...idempotent, 'SERVICE_UNAVAILABLE'],
  },
  'POST /v2/subscribe/schedules/:schedule_id/resume': {
    operationId: 'resumeSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The active schedule', schema: Schedule },
    example: { response: scheduleExample },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', ...idempotent, 'SERVICE_UNAVAILABLE'],
  },
  'PATCH /v2/subscribe/schedules/:schedule_id': {
    operationId: 'updateSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    body: z.object({
      price: z.number().int().min(1).optional(),
      order_name: z.string().optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
    }),
    response: { status: 200, description: 'The schedule; applies from the next period', schema: Schedule },
    example: { request: { price: 12900 }, response: { ...scheduleExample, price: 12900 } },
    errors: [...scheduleLookup, 'INVALID_REQUEST', 'SCHEDULE_STATE_INVALID', 'SERVICE_UNAVAILABLE'],
  },
  'DELETE /v2/subscribe/schedules/:schedule_id': {
    operationId: 'cancelSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The cancelled schedule', schema: Schedule },
    example: { response: { ...pausedSchedule, status: 'cancelled' } },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', 'SERVICE_UNAVAILABLE'],
  },

  // ---- the messaging sub-service's webhook
  'GET /message/alimtalk/webhook': {
    operationId: 'getMessageWebhook',
    tag: 'message webhooks',
    response: { status: 200, description: 'The configuration, secret masked', schema: WebhookConfig },
    example: { response: webhookConfigExample },
    errors: [],
  },
  'PUT /message/alimtalk/webhook': {
    operationId: 'updateMessageWebhook',
    tag: 'message webhooks',
    body: z.looseObject({
      url: z.string().optional(),
      events: z.array(messageEventCode).max(64).optional(),
      enabled: z.boolean().optional(),
      retry_count: z.number().int().optional(),
    }),
    response: { status: 200, description: 'The configuration', schema: WebhookConfig },
    example: {
      request: { url: 'https://shop.example.com/hooks/alimtalk', events: [301, 302, 304] },
      response: webhookConfigExample,
    },
    errors: ['WEBHOOK_URL_INVALID', 'INVALID_REQUEST'],
  },
  'POST /message/alimtalk/webhook/secret': {
    operationId: 'rotateMessageWebhookSecret',
    tag: 'message webhooks',
    response: { status: 200, description: 'The configuration with the new secret, unmasked', schema: WebhookConfig },
    example: { response: { ...webhookConfigExample, secret: 'whsec_VSDklMuCuB+fpaDnXlNDKDueYro9USlR93ST6WPosZ4=' } },
    errors: ['WEBHOOK_NOT_CONFIGURED', ...idempotent],
  },
  'POST /message/alimtalk/webhook/test': {
    operationId: 'sendMessageWebhookTest',
    tag: 'message webhooks',
    response: { status: 200, description: 'The queued test delivery', schema: DeliveryQueued },
    example: { response: queuedExample },
    errors: ['WEBHOOK_NOT_CONFIGURED', ...idempotent, 'SERVICE_UNAVAILABLE'],
  },
  'GET /message/alimtalk/webhook/deliveries': {
    operationId: 'listMessageWebhookDeliveries',
    tag: 'message webhooks',
    querystring: pageQuery,
    response: {
      status: 200,
      description: 'Deliveries, newest first, with their attempts',
      schema: z.object({ list: z.array(Delivery), ...page }),
    },
    example: { response: { list: [deliveryExample], page: 1, per: 20, count: 1 } },
    errors: ['INVALID_REQUEST'],
  },
  'POST /message/alimtalk/webhook/deliveries/:delivery_id/retry': {
    operationId: 'retryMessageWebhookDelivery',
    tag: 'message webhooks',
    params: byId('delivery_id'),
    response: { status: 200, description: 'The queued attempt', schema: DeliveryQueued },
    example: { response: queuedExample },
    errors: ['WEBHOOK_DELIVERY_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FAILED', ...idempotent, 'SERVICE_UNAVAILABLE'],
  },
  'POST /message/alimtalk/webhook/deliveries/retry': {
    operationId: 'replayMessageWebhookDeliveries',
    tag: 'message webhooks',
    body: z.object({ since: timestamp }),
    response: {
      status: 200,
      description: 'The failed deliveries queued again (at most 1000 per call)',
      schema: z.object({ queued: z.number().int(), delivery_ids: z.array(resourceId), replayed_at: timestamp }),
    },
    example: {
      request: { since: '2026-11-25T08:00:00+09:00' },
      response: { queued: 1, delivery_ids: [EX.deliveryId], replayed_at: EX.now },
    },
    errors: ['INVALID_REQUEST', ...idempotent, 'SERVICE_UNAVAILABLE'],
  },

  // ---- sandbox helpers (sandbox mode only)
  'GET /sandbox/v1/sms': {
    operationId: 'listSandboxSms',
    tag: 'sandbox',
    querystring: z.object({ phone: z.string().regex(/^01\d{8,9}$/) }),
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
  'POST /sandbox/v1/messages': {
    operationId: 'sendSandboxMessage',
    tag: 'sandbox',
    body: z.object({
      phone: z.string().regex(/^01\d{8,9}$/),
      template_code: z.string(),
      ref_id: z.string().optional(),
      outcome: z.enum(['delivered', 'failed', 'fallback_sms']).optional(),
    }),
    response: {
      status: 200,
      description: 'The stored message and the events sent for it',
      schema: z.object({
        receipt_id: resourceId,
        ref_id: z.string().optional(),
        template_code: z.string(),
        phone: z.string(),
        outcome: z.enum(['delivered', 'failed', 'fallback_sms']),
        created_at: timestamp,
        events: z.array(z.object({ event: z.string(), event_code: messageEventCode, delivery_id: resourceId.nullable() })),
      }),
    },
    example: {
      request: { phone: '01091234567', template_code: 'WELCOME_01', ref_id: 'ref-1' },
      response: {
        receipt_id: EX.messageId,
        ref_id: 'ref-1',
        template_code: 'WELCOME_01',
        phone: '01091234567',
        outcome: 'delivered',
        created_at: EX.now,
        events: [
          { event: 'alimtalk.send.accepted', event_code: 300, delivery_id: null },
          { event: 'alimtalk.send.succeeded', event_code: 301, delivery_id: EX.deliveryId },
        ],
      },
    },
    errors: ['INVALID_REQUEST', ...idempotent],
  },
  'POST /sandbox/v1/payments': {
    operationId: 'makeSandboxPayment',
    tag: 'sandbox',
    body: z.object({
      pg: z.string(),
      price: z.number().int().min(1),
      order_id: z.string(),
      order_name: z.string(),
      tax_free: z.number().int().min(0).optional(),
      escrow: z.boolean().optional(),
      user: buyer.optional(),
      metadata: z.record(z.string(), z.unknown()).optional(),
    }),
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
    errors: ['RC_PG_NOT_FOUND', 'INVALID_REQUEST', 'ORDER_ID_DUPLICATED', ...idempotent, 'GATEWAY_UNAVAILABLE'],
  },
  'POST /sandbox/v1/escrow/:receipt_id/events': {
    operationId: 'sendSandboxBuyerEvent',
    tag: 'sandbox',
    params: byId('receipt_id'),
    body: z.object({
      event: z.enum(['purchase_confirmed', 'purchase_rejected', 'rejection_approved', 'settlement_held']),
      duplicate: z.boolean().optional(),
    }),
    response: {
      status: 202,
      description: 'The sandbox PG sent its signed notification',
      schema: z.object({ notification_id: z.string(), sent: z.boolean() }),
    },
    example: {
      request: { event: 'purchase_confirmed' },
      response: { notification_id: 'ntf_36eb5b34fe4d68d2b389f1a6', sent: true },
    },
    errors: ['RC_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID', 'RC_NOT_ESCROW', 'INVALID_REQUEST', ...idempotent],
  },
  'GET /sandbox/v1/pg-requests': {
    operationId: 'listSandboxPgRequests',
    tag: 'sandbox',
    querystring: z.object({ receipt_id: resourceId }),
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
    body: z.object({
      pg: z.string(),
      operation: faultOperation,
      fault: faultKind,
      count: z.number().int().min(1).max(100).optional().describe('the next count calls fail (default 1)'),
    }),
    response: { status: 201, description: 'The armed fault', schema: sandboxFault },
    example: { request: { pg: 'sandbox_card', operation: 'charge', fault: 'timeout' }, response: faultExample },
    errors: [
      'SANDBOX_FAULT_INVALID',
      'SANDBOX_FAULT_PG_UNKNOWN',
      'SANDBOX_FAULT_OPERATION_UNSUPPORTED',
      'SANDBOX_FAULT_KIND_UNSUPPORTED',
      'SANDBOX_FAULTS_TOO_MANY',
      ...idempotent,
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
    body: z.union([
      z.object({ seconds: z.number().int().min(1) }),
      z.object({ to: timestamp.describe('later than the sandbox clock') }),
    ]),
    response: {
      status: 200,
      description: 'The new time, and whether everything due has run',
      schema: z.object({ now: timestamp, settled: z.boolean() }),
    },
    example: { request: { seconds: 86400 }, response: { now: '2026-11-26T09:00:00+09:00', settled: true } },
    errors: ['SANDBOX_CLOCK_INVALID', 'INVALID_REQUEST', ...idempotent],
  },
};

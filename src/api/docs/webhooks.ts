// Documentation of the messaging sub-service's webhook API and the sandbox messages that produce its events.
// The bodies and queries are the validators' own documentation (src/webhooks/rules.ts).
import { z } from 'zod';
import { pageQueryDoc, replayRequestBody, sandboxMessageBody, webhookConfigChangeBody } from '../../webhooks/rules.js';
import { byId, EX, IDEMPOTENCY_ERRORS, type RouteDocs } from './route-doc.js';
import { Delivery, DeliveryQueued, messageEventCode, resourceId, timestamp, WebhookConfig } from './schemas.js';

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
export const page = { page: z.number().int(), per: z.number().int(), count: z.number().int() };

export const webhookRouteDocs: RouteDocs = {
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
    body: webhookConfigChangeBody,
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
    errors: ['WEBHOOK_NOT_CONFIGURED', ...IDEMPOTENCY_ERRORS],
  },
  'POST /message/alimtalk/webhook/test': {
    operationId: 'sendMessageWebhookTest',
    tag: 'message webhooks',
    response: { status: 200, description: 'The queued test delivery', schema: DeliveryQueued },
    example: { response: queuedExample },
    errors: ['WEBHOOK_NOT_CONFIGURED', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },
  'GET /message/alimtalk/webhook/deliveries': {
    operationId: 'listMessageWebhookDeliveries',
    tag: 'message webhooks',
    querystring: pageQueryDoc,
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
    errors: ['WEBHOOK_DELIVERY_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FAILED', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },
  'POST /message/alimtalk/webhook/deliveries/retry': {
    operationId: 'replayMessageWebhookDeliveries',
    tag: 'message webhooks',
    body: replayRequestBody,
    response: {
      status: 200,
      description: 'The failed deliveries queued again (at most 1000 per call)',
      schema: z.object({ queued: z.number().int(), delivery_ids: z.array(resourceId), replayed_at: timestamp }),
    },
    example: {
      request: { since: '2026-11-25T08:00:00+09:00' },
      response: { queued: 1, delivery_ids: [EX.deliveryId], replayed_at: EX.now },
    },
    errors: ['INVALID_REQUEST', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },

  // ---- sandbox helpers (sandbox mode only)
  'POST /sandbox/v1/messages': {
    operationId: 'sendSandboxMessage',
    tag: 'sandbox',
    body: sandboxMessageBody,
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
    errors: ['INVALID_REQUEST', ...IDEMPOTENCY_ERRORS],
  },
};

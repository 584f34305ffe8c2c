// The HTTP contract of the webhook routes: the messaging sub-service's webhook API, the sandbox messages that
// produce its events, and the admin API's view of a project's own deliveries (webhook_url, feedback_url) and
// signing secret. The bodies and queries are the validators' own documentation (./rules.ts), never written here.
import { z } from 'zod';
import {
  byId,
  component,
  EX,
  IDEMPOTENCY_ERRORS,
  page,
  type RouteContracts,
  resourceId,
  timestamp,
} from '../platform/http-contract.js';
import {
  DeliveryStatus,
  messageEventCodeDoc,
  pageQueryDoc,
  projectDeliveryQueryDoc,
  replayRequestBody,
  sandboxMessageBody,
  webhookConfigChangeBody,
} from './rules.js';

const WebhookConfig = component(
  'WebhookConfig',
  z.object({
    configured: z.boolean(),
    url: z.string().optional().describe('absent until configured'),
    events: z.array(z.number().int()),
    enabled: z.boolean(),
    secret: z
      .string()
      .optional()
      .describe('masked to its first 12 characters, except right after a rotation; absent until configured'),
    last_sent_at: timestamp.optional().describe('the last attempt, once there was one'),
    last_status: z.number().int().optional().describe("the last attempt's HTTP status; absent when it got no answer"),
    consecutive_failures: z.number().int(),
    auto_disabled_at: timestamp.nullable(),
    retry_count: z.number().int(),
  }),
);

const Delivery = component(
  'Delivery',
  z.object({
    delivery_id: resourceId,
    event: z.string(),
    event_code: z.number().int(),
    url: z.string(),
    status: z.enum(Object.keys(DeliveryStatus) as [keyof typeof DeliveryStatus]).describe('done | ready | doing | failed'),
    retry_count: z.number().int().describe('attempts made'),
    max_retry: z.number().int(),
    tags: z.array(z.string()),
    created_at: timestamp,
    attempts: z.array(
      z.object({
        attempt: z.number().int(),
        attempted_at: timestamp,
        duration_ms: z.number().int(),
        http_status: z.number().int().optional(),
        response_body: z.string().optional(),
        error: z.string().optional(),
      }),
    ),
  }),
);

const DeliveryQueued = component(
  'DeliveryQueued',
  z.object({ delivery_id: resourceId, url: z.string(), queued: z.literal(true) }),
);

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

const deliveryExample = {
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
const queuedExample = { delivery_id: EX.deliveryId, url: 'https://shop.example.com/hooks/alimtalk', queued: true };

const applicationId = byId('application_id');

export const webhooksHttp: RouteContracts = {
  'GET /message/alimtalk/webhook': {
    operationId: 'getMessageWebhook',
    tag: 'message webhooks',
    summary: 'Read the webhook configuration',
    description: 'The secret is masked to its first 12 characters; configured is false while no receiving URL is stored.',
    response: { status: 200, description: 'The configuration, secret masked', schema: WebhookConfig },
    example: { response: webhookConfigExample },
    errors: [],
  },
  'PUT /message/alimtalk/webhook': {
    operationId: 'updateMessageWebhook',
    tag: 'message webhooks',
    summary: 'Change the webhook configuration',
    description:
      'Body {url?, events?, enabled?, retry_count?}. The first save issues a signing secret. https only in production mode (http to loopback in sandbox mode), else 3028. Unknown event codes are dropped; an empty list means the default set. enabled: true re-enables an auto-disabled webhook and clears its failure counter.',
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
    summary: 'Rotate the signing secret',
    description:
      'Answers the configuration with the new secret unmasked (the only time it is shown). The previous secret keeps signing beside it for 24 hours.',
    response: { status: 200, description: 'The configuration with the new secret, unmasked', schema: WebhookConfig },
    example: { response: { ...webhookConfigExample, secret: 'whsec_VSDklMuCuB+fpaDnXlNDKDueYro9USlR93ST6WPosZ4=' } },
    errors: ['WEBHOOK_NOT_CONFIGURED', ...IDEMPOTENCY_ERRORS],
  },
  'POST /message/alimtalk/webhook/test': {
    operationId: 'sendMessageWebhookTest',
    tag: 'message webhooks',
    summary: 'Send a test event',
    description:
      'Queues the 301 test card (tags ["test"]) through the real delivery path, also while the webhook is disabled. 3029 without a stored URL.',
    response: { status: 200, description: 'The queued test delivery', schema: DeliveryQueued },
    example: { response: queuedExample },
    errors: ['WEBHOOK_NOT_CONFIGURED', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },
  'GET /message/alimtalk/webhook/deliveries': {
    operationId: 'listMessageWebhookDeliveries',
    tag: 'message webhooks',
    summary: 'List deliveries',
    description: 'Newest first; page default 1, limit default 20 (over 100 is served as 100). Each record carries its attempts.',
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
    summary: 'Retry a failed delivery',
    description:
      'One more attempt now, under the same webhook-id, sent even while the webhook is disabled. Only a failed delivery (9427).',
    params: byId('delivery_id'),
    response: { status: 200, description: 'The queued attempt', schema: DeliveryQueued },
    example: { response: queuedExample },
    errors: [
      'WEBHOOK_DELIVERY_NOT_FOUND',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'WEBHOOK_DELIVERY_NOT_FAILED',
      ...IDEMPOTENCY_ERRORS,
      'SERVICE_UNAVAILABLE',
    ],
  },
  'POST /message/alimtalk/webhook/deliveries/retry': {
    operationId: 'replayMessageWebhookDeliveries',
    tag: 'message webhooks',
    summary: 'Replay failed deliveries since a time',
    description:
      'Body {since}: every failed delivery created since then gets one more attempt (at most 1000 per call; call again for more).',
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
    summary: 'Send a sandbox message',
    description:
      'Body {phone, template_code, ref_id?, outcome?: delivered (default) | failed | fallback_sms}. Stores the message ' +
      'and sends event 300 (accepted) and then 301 (delivered), 302 (failed) or 304 (SMS fallback) to the messaging ' +
      'webhook, each a delivery of its own (tags [receipt_id, ref_id, template_code]) when the webhook is configured, ' +
      'enabled and subscribed to the code (300 only on request). Sandbox mode only.',
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
        events: z.array(z.object({ event: z.string(), event_code: messageEventCodeDoc, delivery_id: resourceId.nullable() })),
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

  // ---- the admin API (ADMIN_TOKEN): a project's own notifications and their signing secret
  'POST /admin/v1/projects/:application_id/webhook/secret': {
    operationId: 'rotateProjectWebhookSecret',
    tag: 'admin',
    summary: "Rotate the project's webhook signing secret",
    params: applicationId,
    response: {
      status: 200,
      description: 'The new signing secret, shown once; the previous one signs 24 h more',
      schema: z.object({
        application_id: resourceId,
        webhook_secret: z.string(),
        previous_webhook_secret_expires_at: timestamp.optional(),
      }),
    },
    example: {
      response: {
        application_id: EX.applicationId,
        webhook_secret: 'whsec_1PAJTIx0kZLOqY2vs6QYBQZBjkR/Ua03vRP2ezV2thI=',
        previous_webhook_secret_expires_at: EX.later,
      },
    },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'GET /admin/v1/projects/:application_id/webhook/deliveries': {
    operationId: 'listProjectWebhookDeliveries',
    tag: 'admin',
    summary: "The deliveries of the project's webhook_url and feedback_url notifications",
    params: applicationId,
    querystring: projectDeliveryQueryDoc,
    response: {
      status: 200,
      description: 'Deliveries, newest first, with their attempts',
      schema: z.object({ list: z.array(Delivery.extend({ destination: z.enum(['project', 'feedback']) })), ...page }),
    },
    example: {
      response: {
        list: [{ ...deliveryExample, event: 'payment.feedback', event_code: 100, tags: [EX.receiptId], destination: 'feedback' }],
        page: 1,
        per: 20,
        count: 1,
      },
    },
    errors: ['PROJECT_NOT_FOUND', 'INVALID_REQUEST'],
  },
  'POST /admin/v1/projects/:application_id/webhook/deliveries/:delivery_id/retry': {
    operationId: 'retryProjectWebhookDelivery',
    tag: 'admin',
    summary: 'Retry a failed project delivery now, under the same webhook-id',
    params: z.object({ application_id: resourceId, delivery_id: resourceId }),
    response: { status: 200, description: 'The queued attempt', schema: DeliveryQueued },
    example: { response: queuedExample },
    errors: ['PROJECT_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FOUND', 'WEBHOOK_DELIVERY_NOT_FAILED', 'SERVICE_UNAVAILABLE'],
  },
};

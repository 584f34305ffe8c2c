// The response shapes of the API reference, as zod schemas. They document what the handlers answer; they
// are never attached to a route's `schema.response` (Fastify would serialize replies through them and drop
// whatever they do not declare), only merged into the OpenAPI document by the swagger transform
// (./openapi.ts). Request bodies and queries are not written here: each is the documentation its validator
// carries (the staged checks of the rules modules document each field where they check it, and
// describeFields() in src/platform/validation.ts derives the schema), or the plain zod validator itself.
import { z } from 'zod';
import { DeliveryStatus, messageEventCodeDoc } from '../../webhooks/rules.js';
import { SCOPES } from '../../projects/scopes.js';
import { wonDoc } from '../../platform/validation.js';

import { ApiErrorBody, component, docRegistry, resourceId, timestamp } from '../../platform/http-contract.js';

export { ApiErrorBody, docRegistry, resourceId, timestamp };
const won = wonDoc(0).describe('won (KRW), a whole number');
const metadata = z.record(z.string(), z.unknown()).describe('merchant data, returned as given (at most 8 KB)');

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

export const BillingKey = component(
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

const verificationBase = {
  receipt_id: resourceId,
  authentication_id: z.string(),
  metadata,
  pg: z.string(),
  method: z.string(),
  method_symbol: z.string(),
  method_origin: z.string(),
  method_origin_symbol: z.string(),
  requested_at: timestamp,
};

export const VerificationRequested = component(
  'VerificationRequested',
  z.object({
    ...verificationBase,
    status: z.number().int().describe('51 awaiting the OTP'),
    authenticate_data: z.object({ tid: z.string(), number_of_realarms: z.number().int() }),
  }),
);

export const VerificationResult = component(
  'VerificationResult',
  z.object({
    ...verificationBase,
    gateway_url: z.string(),
    status: z.number().int().describe('12 verified'),
    status_locale: z.string(),
    authenticated_at: timestamp,
    authenticate_data: z.object({
      name: z.string(),
      phone: z.string(),
      birth: z.string().describe('YYYYMMDD'),
      gender: z.number().int().describe('1 male, 0 female'),
      foreigner: z.string().describe('"0" Korean, "1" foreigner'),
      carrier: z.string(),
      unique: z.string().describe('CI'),
      di: z.string(),
      tid: z.string(),
    }),
  }),
);

export const Reserve = component(
  'Reserve',
  z.object({
    reserve_id: resourceId,
    order_id: z.string(),
    price: won,
    tax_free: won,
    order_name: z.string(),
    user: z.record(z.string(), z.unknown()),
    metadata,
    feedback_url: z.string().optional(),
    content_type: z.string().optional(),
    status: z.enum(['reserved', 'executing', 'paid', 'failed', 'revoked']),
    reserve_requested_at: timestamp,
    reserve_execute_at: timestamp,
    reserve_started_at: timestamp.optional(),
    reserve_finished_at: timestamp.optional(),
    reserve_revoked_at: timestamp.optional(),
    receipt_id: resourceId.optional().describe('once paid'),
    error_code: z.string().optional().describe('once failed'),
    pg_error_code: z.string().optional(),
  }),
);

export const Schedule = component(
  'Schedule',
  z.object({
    schedule_id: resourceId,
    billing_key: resourceId,
    order_name: z.string(),
    price: won,
    tax_free: won,
    interval: z.enum(['day', 'week', 'month', 'year']),
    interval_count: z.number().int().min(1).max(365),
    start_at: timestamp,
    end_at: timestamp.optional(),
    max_charges: z.number().int().optional(),
    status: z.enum(['active', 'past_due', 'paused', 'cancelled', 'completed']),
    next_charge_at: timestamp.optional().describe('absent while paused, cancelled or completed'),
    charges_made: z.number().int(),
    created_at: timestamp,
    updated_at: timestamp,
    metadata,
  }),
);

export const ScheduleCharge = component(
  'ScheduleCharge',
  z.object({
    period: z.number().int(),
    order_id: z.string().describe('<schedule_id>-<period>'),
    due_at: timestamp,
    status: z.enum(['paid', 'failed', 'retrying', 'skipped']),
    attempts: z.number().int(),
    receipt_id: resourceId.optional(),
    pg_error_code: z.string().optional(),
    charged_at: timestamp.optional(),
  }),
);

const merchant = z.object({
  company_name: z.string().optional(),
  addr1: z.string().optional(),
  addr2: z.string().optional(),
  zipcode: z.string().optional(),
  phone: z.string().optional(),
});

const projectFields = {
  application_id: resourceId,
  name: z.string(),
  client_key: z.string(),
  seller: z.boolean(),
  scopes: z.array(z.enum(SCOPES)),
  allowed_ips: z.array(z.string()),
  api_version: z.string(),
  merchant: merchant.optional(),
  webhook_url: z.string().optional(),
  key_expires_at: timestamp.optional(),
  pgs: z.array(z.string()),
  escrow_reconcile_hours: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
};

export const Project = component('Project', z.object(projectFields));

export const ProjectWithSecrets = component(
  'ProjectWithSecrets',
  z.object({
    ...projectFields,
    secret_key: z.string().describe('shown once'),
    private_key: z.string().describe('shown once; for POST /v2/request/token'),
    webhook_secret: z.string().optional().describe('shown once, when webhook_url is set'),
  }),
);

export const WebhookConfig = component(
  'WebhookConfig',
  z.object({
    configured: z.boolean(),
    url: z.string().nullable(),
    events: z.array(z.number().int()),
    enabled: z.boolean(),
    secret: z.string().nullable().describe('masked to its first 12 characters, except right after a rotation'),
    consecutive_failures: z.number().int(),
    auto_disabled_at: timestamp.nullable(),
    retry_count: z.number().int(),
  }),
);

export const Delivery = component(
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

export const DeliveryQueued = component(
  'DeliveryQueued',
  z.object({ delivery_id: resourceId, url: z.string(), queued: z.literal(true) }),
);

export const messageEventCode = messageEventCodeDoc;

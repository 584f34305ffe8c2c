// Outbound webhooks, the pure part: event codes, delivery states, the retry ladder (retry-ladder.ts), which URLs and
// addresses a webhook may reach (address-rules.ts), the request rules (each field documented where it is checked, for the
// OpenAPI document) and the response shapes. No I/O:
// signing and the guarded HTTP client are in src/webhooks/, the delivery workflow in src/workflows/.
import { z } from 'zod';
import { checkWebhookUrl, type UrlPolicy } from './address-rules.js';
import { ApiError } from '../platform/errors.js';
import { formatOptionalTimestamp, formatTimestamp } from '../platform/time.js';
import { describeFields, documented, fails, fields, timestampDoc, validate } from '../platform/validation.js';

// ---- events

/** Message events (extensions.md, "Messaging sub-service webhook configuration"). */
export const MESSAGE_EVENTS = {
  300: 'alimtalk.send.accepted',
  301: 'alimtalk.send.succeeded',
  302: 'alimtalk.send.failed',
  303: 'alimtalk.reservation.cancelled',
  304: 'alimtalk.send.fallback',
  310: 'alimtalk.template.approved',
  311: 'alimtalk.template.rejected',
  320: 'alimtalk.optout.registered',
} as const satisfies Record<number, string>;

export type MessageEventCode = keyof typeof MESSAGE_EVENTS;

/** Subscribed when a configuration names none (300 and 320 only on request). */
export const DEFAULT_MESSAGE_EVENTS: readonly MessageEventCode[] = [301, 302, 303, 304, 310, 311];

export function isMessageEventCode(code: number): code is MessageEventCode {
  return Object.hasOwn(MESSAGE_EVENTS, code);
}

/** The documentation of a message event code, in requests and responses alike. */
export const messageEventCodeDoc = z
  .number()
  .int()
  .describe(
    `one of ${Object.entries(MESSAGE_EVENTS)
      .map(([code, name]) => `${code} ${name}`)
      .join(', ')}`,
  );

/** One event as a producer hands it to the delivery engine. */
export interface OutboundEvent {
  /** the alias, e.g. 'alimtalk.send.succeeded' */
  readonly event: string;
  readonly eventCode: number;
  /** the JSON body the receiver gets, byte for byte on every attempt */
  readonly payload: Record<string, unknown>;
  readonly tags: readonly string[];
}

/** The test card of POST {message_url}/alimtalk/webhook/test: event 301, tags ['test'], no created_at. */
export function testMessageEvent(receiptId: string): OutboundEvent {
  const tags = ['test'];
  return {
    event: MESSAGE_EVENTS[301],
    eventCode: 301,
    tags,
    payload: {
      event: MESSAGE_EVENTS[301],
      event_code: 301,
      receipt_id: receiptId,
      ref_id: 'test',
      template_code: 'TEST_TEMPLATE',
      phone: '01000000000',
      message: 'A test event from paygate.',
      tags,
    },
  };
}

// ---- delivery states

/** Spec "Webhook delivery" statuses: the key is what the API shows, the number what the spec lists. */
export const DeliveryStatus = { done: 1, ready: 2, doing: 3, failed: -1 } as const;
export type DeliveryState = keyof typeof DeliveryStatus;

/** The configuration's retry_count when none was set: attempts per delivery. */
export const DEFAULT_MAX_ATTEMPTS = 10;
export const MIN_MAX_ATTEMPTS = 1;
export const MAX_MAX_ATTEMPTS = 20;
/** Consecutive failed sends after which a webhook disables itself. */
export const AUTO_DISABLE_AFTER_FAILURES = 10;
/** After a rotation the previous secret signs too, for this long. */
export const SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** One attempt: connect, send, headers and the body excerpt, all within this. */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/** The part of a response body kept in an attempt record. */
export const RESPONSE_EXCERPT_BYTES = 2048;

/**
 * What an attempt leaves the delivery in. `endpointGone`: the receiver answered 410, or the endpoint was
 * disabled (by this attempt or before it) and the delivery is not one sent regardless (tests, manual retries).
 */
export function stateAfterAttempt(a: {
  readonly succeeded: boolean;
  readonly attempt: number;
  readonly lastAttempt: number;
  readonly endpointGone: boolean;
}): DeliveryState {
  if (a.succeeded) return 'done';
  if (a.endpointGone || a.attempt >= a.lastAttempt) return 'failed';
  return 'ready';
}

// ---- the retry ladder lives in retry-ladder.ts (the delivery workflow imports it without this module)

export { JITTER, ladderDelayMs, RETRY_LADDER_MS, retryDelayMs } from './retry-ladder.js';

/** Retry-After as delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return undefined;
  return Math.max(at - now.getTime(), 0);
}

// ---- where a webhook may go: address-rules.ts (re-exported here for the area's users)

export * from './address-rules.js';

// ---- secrets

export const SECRET_PREFIX = 'whsec_';
/** The secret as GET shows it: the first 12 characters, then `*` only. */
export function maskSecret(secret: string): string {
  return secret.slice(0, 12) + '*'.repeat(Math.max(secret.length - 12, 0));
}

// ---- requests

const invalid = (payloadMessage: string) => fails('INVALID_REQUEST', { payloadMessage });
const urlInvalid = (payloadMessage: string) => fails('WEBHOOK_URL_INVALID', { payloadMessage });

export interface WebhookConfigChange {
  readonly url?: string;
  /** known codes only, deduplicated; an empty list means the default set */
  readonly events?: readonly number[];
  readonly enabled?: boolean;
  readonly retryCount?: number;
}

const MAX_EVENTS = 64;

const configChangeSchema = z.object({
  url: documented(
    z.string().optional(),
    z
      .custom<string>((v) => typeof v === 'string' && v.trim() !== '', urlInvalid('url must be a non-empty string'))
      .transform((v) => v.trim())
      .optional(),
  ),
  events: documented(
    z.array(messageEventCodeDoc).max(MAX_EVENTS).optional(),
    z
      .custom<unknown[]>(Array.isArray, invalid('events must be an array of event codes'))
      .refine((v) => v.length <= MAX_EVENTS, invalid(`events has more than ${MAX_EVENTS} entries`))
      .refine((v) => v.every((c) => Number.isSafeInteger(c)), invalid('events must be integer event codes'))
      .transform((v) => [...new Set((v as number[]).filter(isMessageEventCode))].sort((a, b) => a - b))
      .optional(),
  ),
  enabled: documented(
    z.boolean().optional(),
    z.custom<boolean>((v) => typeof v === 'boolean', invalid('enabled must be true or false')).optional(),
  ),
  retry_count: documented(
    z.number().int().min(MIN_MAX_ATTEMPTS).max(MAX_MAX_ATTEMPTS).optional(),
    z
      .custom<number>(
        (v) => Number.isInteger(v) && (v as number) >= MIN_MAX_ATTEMPTS && (v as number) <= MAX_MAX_ATTEMPTS,
        invalid(`retry_count must be an integer from ${MIN_MAX_ATTEMPTS} to ${MAX_MAX_ATTEMPTS}`),
      )
      .optional(),
  ),
});

/** The body of PUT {message_url}/alimtalk/webhook as the OpenAPI document shows it. */
export const webhookConfigChangeBody = describeFields([configChangeSchema]);

/** PUT {message_url}/alimtalk/webhook: every present field checked; unknown fields ignored. */
export function parseWebhookConfigChange(body: unknown): WebhookConfigChange {
  const parsed = validate(configChangeSchema, body ?? {});
  return {
    ...(parsed.url !== undefined ? { url: parsed.url } : {}),
    ...(parsed.events !== undefined ? { events: parsed.events } : {}),
    ...(parsed.enabled !== undefined ? { enabled: parsed.enabled } : {}),
    ...(parsed.retry_count !== undefined ? { retryCount: parsed.retry_count } : {}),
  };
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
const MAX_PAGE = 1_000_000;

/** A positive integer in a query string, `fallback` when absent; above `max` is refused. */
function positiveInteger(name: string, fallback: number, max: number) {
  return z
    .custom<string | undefined>(
      (value) => value === undefined || (typeof value === 'string' && /^[1-9]\d{0,99}$/.test(value)),
      invalid(`${name} must be a positive integer`),
    )
    .transform((value) => (value === undefined ? fallback : Number(value)))
    .refine((n) => n <= max, invalid(`${name} must be at most ${max}`));
}

const pageFields = {
  page: documented(z.coerce.number().int().min(1).max(MAX_PAGE).optional(), positiveInteger('page', 1, MAX_PAGE)),
  // a larger limit is served as MAX_PAGE_SIZE
  limit: documented(
    z.coerce.number().int().min(1).optional(),
    positiveInteger('limit', DEFAULT_PAGE_SIZE, Number.POSITIVE_INFINITY),
  ),
};
const pageQuery = fields(pageFields);

/** The query of the delivery lists as the OpenAPI document shows it: page and limit. */
export const pageQueryDoc = describeFields([pageQuery]);

export interface PageQuery {
  readonly page: number;
  readonly per: number;
}

/** page default 1, limit default 20; a limit over 100 is served as 100; anything but a positive integer is 9400. */
export function parsePageQuery(query: unknown): PageQuery {
  const { page, limit } = validate(pageQuery, query);
  return { page, per: Math.min(limit, MAX_PAGE_SIZE) };
}

/** The admin API's delivery history of a project: `destination` project (its webhook_url) or feedback (feedback_url). */
export type ProjectDeliveryDestination = 'project' | 'feedback';

export interface ProjectDeliveryQuery extends PageQuery {
  /** both when absent */
  readonly destination?: ProjectDeliveryDestination;
}

const PROJECT_DELIVERY_DESTINATIONS = ['project', 'feedback'] as const satisfies readonly ProjectDeliveryDestination[];

const projectDeliveryQuery = fields({
  ...pageFields,
  destination: documented(
    z.enum(PROJECT_DELIVERY_DESTINATIONS).optional(),
    z.custom<ProjectDeliveryDestination | undefined>(
      (value) => value === undefined || (PROJECT_DELIVERY_DESTINATIONS as readonly unknown[]).includes(value),
      invalid('destination must be project or feedback'),
    ),
  ),
});

/** The query of a project's delivery list (admin API) as the OpenAPI document shows it. */
export const projectDeliveryQueryDoc = describeFields([projectDeliveryQuery]);

/** page and limit as parsePageQuery; destination project|feedback or absent (both); anything else is 9400. */
export function parseProjectDeliveryQuery(query: unknown): ProjectDeliveryQuery {
  const { page, limit, destination } = validate(projectDeliveryQuery, query);
  const paging = { page, per: Math.min(limit, MAX_PAGE_SIZE) };
  return destination === undefined ? paging : { ...paging, destination };
}

const ISO_WITH_OFFSET = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|[+-]\d\d:\d\d)$/;

const replayBody = fields({
  since: documented(
    timestampDoc,
    z
      .custom<string>(
        (since) => typeof since === 'string' && ISO_WITH_OFFSET.test(since.trim()) && !Number.isNaN(Date.parse(since.trim())),
        invalid('since must be an ISO 8601 time with an offset, e.g. 2026-01-02T03:04:05+09:00'),
      )
      .transform((since) => new Date(since.trim())),
  ),
});

/** The body of POST .../deliveries/retry as the OpenAPI document shows it. */
export const replayRequestBody = describeFields([replayBody]);

/** POST .../deliveries/retry {since}: an ISO 8601 time with an offset. */
export function parseReplaySince(body: unknown): Date {
  return validate(replayBody, body).since;
}

// ---- responses

export interface WebhookConfigView {
  readonly url: string | null;
  readonly events: readonly number[];
  readonly enabled: boolean;
  readonly secret: string | null;
  readonly lastSentAt: Date | null;
  readonly lastStatus: number | null;
  readonly consecutiveFailures: number;
  readonly autoDisabledAt: Date | null;
  readonly retryCount: number;
}

/** The spec's "Webhook configuration"; the secret masked unless `revealSecret` (the rotation answer only). */
export function renderWebhookConfig(view: WebhookConfigView, revealSecret: boolean): Record<string, unknown> {
  return {
    configured: view.url !== null,
    ...(view.url !== null ? { url: view.url } : {}),
    events: [...view.events],
    enabled: view.enabled,
    ...(view.secret !== null ? { secret: revealSecret ? view.secret : maskSecret(view.secret) } : {}),
    ...(view.lastSentAt !== null ? { last_sent_at: formatTimestamp(view.lastSentAt) } : {}),
    ...(view.lastStatus !== null ? { last_status: view.lastStatus } : {}),
    consecutive_failures: view.consecutiveFailures,
    auto_disabled_at: formatOptionalTimestamp(view.autoDisabledAt) ?? null,
    retry_count: view.retryCount,
  };
}

export interface AttemptView {
  readonly attempt: number;
  readonly attemptedAt: Date;
  readonly durationMs: number;
  readonly httpStatus: number | null;
  readonly responseBody: string | null;
  readonly error: string | null;
}

/** Where a delivery goes: its endpoint's URL, or (project endpoint only) a charge's feedback_url. */
export type DeliveryDestination = 'endpoint' | 'feedback';

export interface DeliveryView {
  readonly deliveryId: string;
  readonly event: string;
  readonly eventCode: number;
  readonly url: string;
  readonly destination: DeliveryDestination;
  readonly state: DeliveryState;
  readonly retryCount: number;
  readonly maxRetry: number;
  readonly tags: readonly string[];
  readonly createdAt: Date;
  readonly attempts: readonly AttemptView[];
}

/** The spec's "Webhook delivery record" plus the per-attempt log. */
export function renderDelivery(d: DeliveryView): Record<string, unknown> {
  return {
    delivery_id: d.deliveryId,
    event: d.event,
    event_code: d.eventCode,
    url: d.url,
    status: d.state,
    retry_count: d.retryCount,
    max_retry: d.maxRetry,
    tags: [...d.tags],
    created_at: formatTimestamp(d.createdAt),
    attempts: d.attempts.map((a) => ({
      attempt: a.attempt,
      attempted_at: formatTimestamp(a.attemptedAt),
      duration_ms: a.durationMs,
      ...(a.httpStatus !== null ? { http_status: a.httpStatus } : {}),
      ...(a.responseBody !== null ? { response_body: a.responseBody } : {}),
      ...(a.error !== null ? { error: a.error } : {}),
    })),
  };
}

/** A project delivery as the admin API lists it: the record plus where it went (project or feedback). */
export function renderProjectDelivery(d: DeliveryView): Record<string, unknown> {
  return { ...renderDelivery(d), destination: d.destination === 'feedback' ? 'feedback' : 'project' };
}

// ---- the project's own notifications: its webhook_url (admin API) and a charge's feedback_url

/** Events sent to a project's webhook_url or a charge's feedback_url (codes apart from the message events'). */
export const PROJECT_EVENTS = {
  100: 'payment.feedback',
  200: 'escrow.status_changed',
} as const satisfies Record<number, string>;

export type DeliveryContentType = 'application/json' | 'application/x-www-form-urlencoded';
export const DELIVERY_CONTENT_TYPES = [
  'application/json',
  'application/x-www-form-urlencoded',
] as const satisfies readonly DeliveryContentType[];

/** Where and how a charge's result is posted (the charge request's feedback_url and content_type). */
export interface FeedbackTarget {
  readonly url: string;
  readonly contentType: DeliveryContentType;
}

/** The receipt of a completed charge, as its feedback_url receives it. */
export function receiptFeedbackEvent(receipt: Record<string, unknown>): OutboundEvent {
  const receiptId = typeof receipt.receipt_id === 'string' ? receipt.receipt_id : '';
  const orderId = typeof receipt.order_id === 'string' ? receipt.order_id : '';
  return { event: PROJECT_EVENTS[100], eventCode: 100, tags: [receiptId, orderId], payload: receipt };
}

/**
 * The body of a delivery in its content type: JSON text, or a form body of the top-level fields (objects and
 * arrays as JSON text, null and absent fields left out) — the same bytes on every attempt.
 */
export function encodeDeliveryBody(payload: Record<string, unknown>, contentType: DeliveryContentType): string {
  if (contentType === 'application/json') return JSON.stringify(payload);
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(payload)) {
    if (value === null || value === undefined) continue;
    form.append(key, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  return form.toString();
}

// content_type is read only when there is a feedback_url: two stages.
const feedbackUrl = fields({
  feedback_url: documented(
    z
      .string()
      .optional()
      .describe(
        'receives the receipt as a signed webhook once the charge completes. https to a host whose every address ' +
          'is global unicast, resolved now and again at every delivery (sandbox mode: loopback too, http included); ' +
          'otherwise 9400 naming feedback_url, before anything is charged or saved',
      ),
    z
      .custom<string | null | undefined>(
        (url) => url === undefined || url === null || typeof url === 'string',
        invalid('feedback_url must be a URL'),
      )
      .transform((url) => (url === undefined || url === null || url === '' ? undefined : url.trim())),
  ),
});
const feedbackContentType = fields({
  content_type: documented(
    z.enum(DELIVERY_CONTENT_TYPES).optional(),
    z
      .custom<DeliveryContentType | null | undefined>(
        (type) => type === undefined || type === null || (DELIVERY_CONTENT_TYPES as readonly unknown[]).includes(type),
        invalid(`content_type must be one of ${DELIVERY_CONTENT_TYPES.join(', ')}`),
      )
      .transform((type) => type ?? 'application/json'),
  ),
});

/** The stages of feedback_url and content_type: for the documentation of the charge bodies that carry them. */
export const feedbackTargetStages = [feedbackUrl, feedbackContentType] as const;

/**
 * feedback_url and content_type of a charge request: undefined without a feedback_url; the URL under the
 * webhook rules of the mode (https, or http to loopback in sandbox mode); content_type one of the two, JSON
 * by default. Anything else is 9400 naming the field.
 */
export function parseFeedbackTarget(body: unknown, policy: UrlPolicy): FeedbackTarget | undefined {
  const url = validate(feedbackUrl, body).feedback_url;
  if (url === undefined) return undefined;
  const checked = checkWebhookUrl(url, policy);
  if ('reason' in checked) throw new ApiError('INVALID_REQUEST', { payloadMessage: `feedback_url: ${checked.reason}` });
  return { url, contentType: validate(feedbackContentType, body).content_type };
}

// ---- sandbox messages (POST /sandbox/v1/messages)

export const MESSAGE_OUTCOMES = ['delivered', 'failed', 'fallback_sms'] as const;
export type MessageOutcome = (typeof MESSAGE_OUTCOMES)[number];

/** The events a message's outcome produces, in order: accepted (300), then its result (301 / 302 / 304). */
export const OUTCOME_EVENTS: Record<MessageOutcome, readonly MessageEventCode[]> = {
  delivered: [300, 301],
  failed: [300, 302],
  fallback_sms: [300, 304],
};

export interface SandboxMessageRequest {
  readonly phone: string;
  readonly templateCode: string;
  readonly refId: string | null;
  readonly outcome: MessageOutcome;
}

const MOBILE_PHONE = /^01\d{8,9}$/;
const TEMPLATE_CODE = /^[A-Za-z0-9_-]{1,64}$/;
const REF_ID = /^[\x21-\x7e]*$/;

const sandboxMessageSchema = z.object({
  phone: documented(
    z.string().regex(MOBILE_PHONE),
    z.custom<string>(
      (v) => typeof v === 'string' && MOBILE_PHONE.test(v),
      invalid('phone must be a mobile number of 10-11 digits'),
    ),
  ),
  template_code: documented(
    z.string().regex(TEMPLATE_CODE),
    z.custom<string>(
      (v) => typeof v === 'string' && TEMPLATE_CODE.test(v),
      invalid('template_code must be 1-64 letters, digits, _ or -'),
    ),
  ),
  ref_id: documented(
    z.string().max(100).regex(REF_ID).optional(),
    z
      .custom<string | null>(
        (v) => v === null || (typeof v === 'string' && v.length <= 100 && REF_ID.test(v)),
        invalid('ref_id must be at most 100 printable ASCII characters'),
      )
      .optional(),
  ),
  outcome: documented(
    z.enum(MESSAGE_OUTCOMES).optional(),
    z
      .custom<MessageOutcome>(
        (v) => MESSAGE_OUTCOMES.includes(v as MessageOutcome),
        invalid(`outcome must be one of ${MESSAGE_OUTCOMES.join(', ')}`),
      )
      .optional(),
  ),
});

/** The body of POST /sandbox/v1/messages as the OpenAPI document shows it. */
export const sandboxMessageBody = describeFields([sandboxMessageSchema]);

/** POST /sandbox/v1/messages {phone, template_code, ref_id?, outcome?}: 9400 naming the first bad field. */
export function parseSandboxMessage(body: unknown): SandboxMessageRequest {
  const parsed = validate(sandboxMessageSchema, body ?? {});
  return {
    phone: parsed.phone,
    templateCode: parsed.template_code,
    refId: parsed.ref_id === undefined || parsed.ref_id === '' ? null : parsed.ref_id,
    outcome: parsed.outcome ?? 'delivered',
  };
}

export interface MessageEventInput {
  readonly receiptId: string;
  readonly refId: string | null;
  readonly templateCode: string;
  readonly phone: string;
  readonly createdAt: Date;
}

/** One event of a message: tags [receipt_id, ref_id, template_code] (ref_id '' when none), as the spec lists them. */
export function messageEvent(code: MessageEventCode, m: MessageEventInput): OutboundEvent {
  const tags = [m.receiptId, m.refId ?? '', m.templateCode];
  return {
    event: MESSAGE_EVENTS[code],
    eventCode: code,
    tags,
    payload: {
      event: MESSAGE_EVENTS[code],
      event_code: code,
      receipt_id: m.receiptId,
      ...(m.refId !== null ? { ref_id: m.refId } : {}),
      template_code: m.templateCode,
      phone: m.phone,
      tags,
      created_at: formatTimestamp(m.createdAt),
    },
  };
}

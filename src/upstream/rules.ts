// The upstream connector's rules: what a project's provider configuration may say, how it is shown (the secret
// masked), where the provider's notifications come in, and which provider answers are catalog errors to pass
// through unchanged. Pure code: no I/O.
import { z } from 'zod';
import { formatTimestamp } from '../platform/time.js';
import { ApiError } from '../platform/errors.js';
import { validate } from '../platform/validation.js';
import { blockedAddressReason, MAX_URL_LENGTH, unbracketed } from '../webhooks/rules.js';
import { type AnswerDisagreement, type Carrier, CARRIERS, type FieldDisagreement } from '../gateways/rules.js';

/** Where a provider posts its notifications for a project: `{PUBLIC_BASE_URL}/upstream/v1/notifications/{application_id}`. */
export const UPSTREAM_NOTIFICATION_PATH = '/upstream/v1/notifications';

export function notificationUrl(publicBaseUrl: string, applicationId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}${UPSTREAM_NOTIFICATION_PATH}/${applicationId}`;
}

/** At most this many PG names per provider (as a project's own `pgs`). */
export const MAX_UPSTREAM_PGS = 50;
const MAX_PG_NAME_LENGTH = 100;

export interface UpstreamUrlPolicy {
  /** sandbox mode: http and any host (a provider on this laptop); production: https to a public address only */
  readonly sandbox: boolean;
}

/**
 * The provider's {base_url} or {message_url} as stored: http(s), no credentials, query or fragment, no trailing
 * '/'. The paths paygate calls are appended to it (`/v2/...`), so a base_url that already ends in /v2 is refused
 * with a hint rather than silently doubled. Production mode: https only, and a host written as an address must be
 * a public one (a name is checked again at every connection, see ./client.ts).
 */
export function checkUpstreamUrl(raw: string, policy: UpstreamUrlPolicy): { url: string } | { reason: string } {
  if (raw.length > MAX_URL_LENGTH) return { reason: `the URL is longer than ${MAX_URL_LENGTH} characters` };
  if (!URL.canParse(raw)) return { reason: 'the URL cannot be parsed' };
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { reason: 'only http and https URLs are accepted' };
  if (url.username !== '' || url.password !== '') return { reason: 'the URL must not carry credentials' };
  if (url.hostname === '') return { reason: 'the URL has no host' };
  if (url.search !== '' || url.hash !== '') return { reason: 'the URL must not carry a query or a fragment' };
  const path = url.pathname.replace(/\/+$/, '');
  if (/\/v2$/i.test(path)) return { reason: 'give the address before /v2 (paygate appends /v2/... itself)' };
  if (!policy.sandbox) {
    if (url.protocol !== 'https:') return { reason: 'only https URLs are accepted in production mode' };
    const host = unbracketed(url.hostname).toLowerCase();
    if (host === 'localhost' || host.endsWith('.localhost')) return { reason: 'a loopback host is refused in production mode' };
    if (/^[\d.]+$/.test(host) || host.includes(':')) {
      const reason = blockedAddressReason(host, { sandbox: false });
      if (reason !== undefined) return { reason };
    }
  }
  return { url: `${url.origin}${path}` };
}

/**
 * The body of PUT /admin/v1/projects/{application_id}/upstream: one schema validates it and documents it (the admin
 * API reference). The URLs are checked against the mode's policy after it (checkUpstreamUrl).
 */
export const upstreamConfigBody = z.strictObject({
  base_url: z
    .string()
    .max(MAX_URL_LENGTH)
    .describe("the provider's address before /v2; https to a public host in production mode"),
  client_key: z.string().trim().min(1).max(200).describe("the project's client key at the provider"),
  secret_key: z.string().min(1).max(500).describe("the project's secret key at the provider; sealed at rest, never shown again"),
  pgs: z
    .array(z.string().trim().min(1).max(MAX_PG_NAME_LENGTH))
    .min(1)
    .max(MAX_UPSTREAM_PGS)
    .describe('the PG names, as merchants send them in `pg`, that the provider serves for this project'),
  message_url: z.string().max(MAX_URL_LENGTH).optional().describe("the provider's messaging address ({message_url})"),
});

export interface UpstreamConfigInput {
  readonly baseUrl: string;
  readonly clientKey: string;
  readonly secretKey: string;
  /** unique, in the order given */
  readonly pgs: readonly string[];
  readonly messageUrl: string | undefined;
}

function checkedUrl(field: string, raw: string, policy: UpstreamUrlPolicy): string {
  const checked = checkUpstreamUrl(raw, policy);
  if ('reason' in checked) throw new ApiError('UPSTREAM_URL_INVALID', { payloadMessage: `${field}: ${checked.reason}` });
  return checked.url;
}

/** The PUT body: a malformed field is 9400; a URL the mode's policy refuses is 9476 naming the field and the reason. */
export function parseUpstreamConfig(body: unknown, policy: UpstreamUrlPolicy): UpstreamConfigInput {
  const parsed = validate(upstreamConfigBody, body);
  return {
    baseUrl: checkedUrl('base_url', parsed.base_url, policy),
    clientKey: parsed.client_key,
    secretKey: parsed.secret_key,
    pgs: [...new Set(parsed.pgs)],
    messageUrl: parsed.message_url === undefined ? undefined : checkedUrl('message_url', parsed.message_url, policy),
  };
}

/** A provider secret as GET shows it: the first 4 characters, then a fixed run of '*' that does not tell its length. */
export function maskProviderSecret(secret: string): string {
  return secret.length <= 8 ? '********' : `${secret.slice(0, 4)}********`;
}

export interface UpstreamView {
  readonly applicationId: string;
  readonly baseUrl: string;
  readonly clientKey: string;
  /** already masked: the plain secret never reaches a view */
  readonly maskedSecretKey: string;
  readonly pgs: readonly string[];
  readonly messageUrl: string | null;
  readonly lastError: { readonly code: number; readonly errorCode: string; readonly message: string; readonly at: Date } | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** `health`: the provider's health as this process saw it (UpstreamService renders it), shown under `health`. */
export function renderUpstream(
  view: UpstreamView,
  publicBaseUrl: string,
  health?: Record<string, unknown>,
): Record<string, unknown> {
  return {
    application_id: view.applicationId,
    base_url: view.baseUrl,
    client_key: view.clientKey,
    secret_key: view.maskedSecretKey,
    pgs: view.pgs,
    ...(view.messageUrl !== null ? { message_url: view.messageUrl } : {}),
    notification_url: notificationUrl(publicBaseUrl, view.applicationId),
    ...(view.lastError !== null
      ? {
          last_error: {
            code: view.lastError.code,
            error_code: view.lastError.errorCode,
            message: view.lastError.message,
            at: formatTimestamp(view.lastError.at),
          },
        }
      : {}),
    ...(health !== undefined ? { health } : {}),
    created_at: formatTimestamp(view.createdAt),
    updated_at: formatTimestamp(view.updatedAt),
  };
}

// ---- the provider's answers

/**
 * A provider's catalog error as it sent it: the keys a merchant reads (error_code, code, message, pg_error_code,
 * payload), kept verbatim. The provider may answer one at any HTTP status (the spec puts some at 500).
 */
export interface ProviderErrorBody {
  readonly error_code: string;
  readonly code?: number;
  readonly message: string;
  readonly pg_error_code?: string;
  readonly payload?: Record<string, unknown>;
}

const providerError = z.object({
  error_code: z.union([z.string().min(1).max(100), z.number().int()]),
  code: z.number().int().optional(),
  message: z.string().max(2000),
  pg_error_code: z.union([z.string().max(200), z.number()]).optional(),
  payload: z.record(z.string(), z.unknown()).optional(),
});

/** The catalog error in a provider's answer, or undefined when the body is not one (garbage, an HTML 502 page). */
export function parseProviderError(body: unknown): ProviderErrorBody | undefined {
  const parsed = providerError.safeParse(body);
  if (!parsed.success) return undefined;
  const { error_code, code, message, pg_error_code, payload } = parsed.data;
  return {
    error_code: String(error_code),
    ...(code !== undefined ? { code } : {}),
    message,
    ...(pg_error_code !== undefined ? { pg_error_code: String(pg_error_code) } : {}),
    ...(payload !== undefined ? { payload } : {}),
  };
}

/** The provider refused paygate's keys for the project: the configuration is wrong, not the merchant's request. */
export const PROVIDER_KEY_ERRORS: ReadonlySet<string> = new Set([
  'APP_SK_NOT_MATCHED',
  'APP_CLIENT_KEY_NOT_FOUND',
  '1204',
  '1216',
]);

export function isProviderKeyError(error: ProviderErrorBody): boolean {
  return PROVIDER_KEY_ERRORS.has(error.error_code) || error.code === 1204 || error.code === 1216;
}

// ---- the provider's results, read as paygate's gateway contract needs them

/** What the provider's catalog error means for an operation that may have changed something there. */
export type ProviderOutcome =
  /** the provider refused: nothing was done, and the same request would be refused again */
  | 'refused'
  /** the provider may or may not have done it (its PG did not answer, it is busy with the same key): ask again */
  | 'unknown'
  /** the provider saw the Idempotency-Key with another request: a defect of ours, never the card's answer */
  | 'key_reused';

/** The spec's catalog errors answered at HTTP 500 that are refusals (the spec's tables), not outages. */
const REFUSALS_AT_500: ReadonlySet<string> = new Set([
  'AUTH_CONFIRM_FAILED',
  'AUTH_REALARM_FAILED',
  'RC_ESCROW_SHIPPING_START_FAILED',
]);
/** Catalog errors that say "not now" rather than "no": the same request under the same key may still succeed. */
const NOT_NOW: ReadonlySet<string> = new Set(['IDEMPOTENCY_IN_PROGRESS', 'TOO_MANY_REQUESTS', 'REQUEST_TIMEOUT']);

export function providerOutcome(statusCode: number, error: ProviderErrorBody): ProviderOutcome {
  if (error.error_code === 'IDEMPOTENCY_KEY_REUSED') return 'key_reused';
  if (NOT_NOW.has(error.error_code)) return 'unknown';
  if (statusCode >= 500 && !REFUSALS_AT_500.has(error.error_code)) return 'unknown';
  return 'refused';
}

const providerTime = z.iso.datetime({ offset: true }).transform((value) => new Date(value));
const providerCard = z.object({
  card_no: z.string().min(1).max(40),
  card_company: z.string().max(100).default(''),
  card_company_code: z.string().max(40).default(''),
  card_type: z.string().max(20).optional(),
});
const providerId = z.string().min(1).max(100);

/** The provider's billing key issuance response (the spec's "Billing key issuance response"). */
export const providerBillingKey = z.object({
  billing_key: providerId,
  receipt_id: providerId,
  billing_data: providerCard,
  billing_expire_at: providerTime,
  published_at: providerTime.optional(),
  status: z.literal(11),
});

/** The provider's receipt, as far as a charge, a cancel, a refresh or an escrow order reads it. */
export const providerReceipt = z.object({
  receipt_id: providerId,
  order_id: z.string().max(200).optional(),
  status: z.number().int(),
  purchased_at: providerTime.optional(),
  cancelled_at: providerTime.optional(),
  cancelled_price: z.number().optional(),
  cancelled_tax_free: z.number().optional(),
  card_data: providerCard
    .extend({ card_quota: z.string().max(2).optional(), card_approve_no: z.string().max(40).optional() })
    .optional(),
  // an escrow payment's: the escrow status is read only from here (the top-level status is the payment's)
  escrow_data: z.object({ status: z.number().int(), escrow_confirm_url: z.string().max(2000).optional() }).nullish(),
  order_name: z.string().max(500).optional(),
  price: z.number().int().min(0).optional(),
  tax_free: z.number().int().min(0).optional(),
  pg: z.string().max(100).optional(),
  requested_at: providerTime.optional(),
  // a billing payment's key, when the provider names it (its webhook payloads do; null for another payment)
  billing_key: z.string().max(200).nullish(),
});

/** What paygate asked the provider to charge: what its answer is checked against. */
export interface AskedCharge {
  readonly orderId: string;
  readonly price: number;
  readonly taxFree: number;
  readonly pg: string;
  /** the provider's billing key the charge was sent with */
  readonly billingKey: string;
}

/**
 * Where a provider's paid receipt disagrees with the charge paygate asked for: undefined when it is that charge. The
 * provider's receipt is the truth about the money: the amounts to record are its own (the request's only where its are
 * missing or impossible: not a positive price, or tax_free outside 0..price). A field the answer leaves out counts
 * only where the charge cannot be checked without it (order_id, price, and tax_free when some was asked).
 */
export function chargeAnswerDisagreement(
  asked: AskedCharge,
  answer: z.output<typeof providerReceipt>,
): AnswerDisagreement | undefined {
  const fields: Record<string, FieldDisagreement> = {};
  const check = (field: string, wanted: string | number, got: string | number | null | undefined, required: boolean) => {
    if (got === undefined || got === null) {
      if (required) fields[field] = { asked: wanted, answered: null };
    } else if (got !== wanted) {
      fields[field] = { asked: wanted, answered: got };
    }
  };
  check('order_id', asked.orderId, answer.order_id, true);
  check('price', asked.price, answer.price, true);
  check('tax_free', asked.taxFree, answer.tax_free, asked.taxFree !== 0);
  check('pg', asked.pg, answer.pg, false);
  check('billing_key', asked.billingKey, answer.billing_key, false);
  if (Object.keys(fields).length === 0) return undefined;
  const price = answer.price ?? asked.price;
  const taxFree = answer.tax_free ?? 0;
  const usable = price > 0 && taxFree >= 0 && taxFree <= price;
  return { price: usable ? price : asked.price, taxFree: usable ? taxFree : asked.taxFree, fields };
}

/** A card type the contract knows; a provider's other words for a check card are read as such. */
export function cardTypeOf(value: string | undefined): 'credit' | 'check' {
  return value === 'check' || value === '체크' ? 'check' : 'credit';
}

/** The provider's authentication request response (status 51): its receipt_id is the verification's. */
export const providerAuthenticationRequested = z.object({
  receipt_id: providerId,
  status: z.literal(51),
  authenticate_data: z.object({ tid: z.string().max(200).optional() }).optional(),
});

/** The provider's authentication result (confirm response): status 12 with the verified person. */
export const providerAuthenticationResult = z.object({
  receipt_id: providerId,
  status: z.literal(12),
  authenticate_data: z.object({
    name: z.string().max(200),
    phone: z.string().max(40),
    birth: z.string().max(20),
    gender: z
      .union([z.literal(0), z.literal(1), z.literal('0'), z.literal('1')])
      .transform((g) => (Number(g) === 1 ? 1 : 0) as 0 | 1),
    // the spec: its type varies per PG; compared after normalising to a string
    foreigner: z.union([z.string(), z.number()]).transform((f) => (String(f) === '1' ? '1' : '0') as '0' | '1'),
    carrier: z.enum(CARRIERS as [Carrier, ...Carrier[]]),
    unique: z.string().min(1).max(200),
    di: z.string().min(1).max(200),
  }),
});

const notifiedId = z.string().regex(/^[A-Za-z0-9_-]{1,100}$/);

/**
 * The body of a provider's notification (JSON or form), as far as paygate reads it: the receipt it names, at the top
 * (the spec's payment and escrow webhook payloads are the receipt) or in a `receipt` object. Nothing else is read:
 * what happened is asked of the provider.
 */
export const providerNotificationBody = z
  .looseObject({
    receipt_id: notifiedId.optional().describe("the provider's receipt_id"),
    receipt: z.looseObject({ receipt_id: notifiedId.optional() }).optional().describe('or the receipt, nested'),
  })
  .describe("the provider's notification: only the receipt it names is read, everything else is asked of the provider");

/** The receipt a provider's notification names; undefined when it names none well-formed. */
export function notifiedReceiptId(body: unknown): string | undefined {
  const parsed = providerNotificationBody.safeParse(body);
  if (!parsed.success) return undefined;
  return parsed.data.receipt_id ?? parsed.data.receipt?.receipt_id;
}

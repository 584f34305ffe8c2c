// Key-in billing rules: request validation in a fixed, documented order (each field documented where it is
// first checked: the OpenAPI document's request bodies are derived from these stages), the issuance response
// shape, and the derived idempotency keys sent to gateways. Pure code: no I/O.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { CardDetails, MaskedCard } from '../gateways/card-rules.js';
import {
  KEY_IN_METHOD,
  KEY_IN_METHOD_SYMBOL,
  isCardExpired,
  isCardNumberWellFormed,
  isCardPasswordWellFormed,
  isExpireMonthValid,
  isExpireYearWellFormed,
  isIdentityNoWellFormed,
} from '../gateways/card-rules.js';
import type { ErrorName } from '../platform/errors.js';
import { formatTimestamp } from '../platform/time.js';
import { BILLING_KEY_ISSUED, isResourceId, statusLocale } from './receipt-rules.js';
import {
  describeFields,
  documented,
  fails,
  fields,
  isBlank,
  isRecord,
  MAX_WON,
  merchantId,
  validate,
  wonDoc,
} from '../platform/validation.js';

/** Upper bounds on merchant-chosen strings, so a 100 KB field is refused instead of stored. */
const MAX_ID_LENGTH = 100;
const MAX_NAME_LENGTH = 200;
const MAX_METADATA_BYTES = 8 * 1024;

const invalid = (message: string) => fails('INVALID_REQUEST', { message });

/** A card refused before it reaches any gateway: 2304 without pg_error_code (no PG was asked). */
const localRefusal = (message: string) => fails('SUBSCRIBE_PUBLISH_FAILED', { message });

/** A required string, not trimmed: blank -> `blank` with its catalog message; another type -> `blank` saying so. */
function requiredString(field: string, blank: ErrorName) {
  return z
    .custom<string>((value) => !isBlank(value), fails(blank))
    .refine((value) => typeof value === 'string', fails(blank, { message: `${field} must be a string.` }));
}

function atMost(field: string, max: number) {
  return z.string().refine((value) => value.length <= max, invalid(`${field} is longer than ${max} characters.`));
}

export interface PgSelection {
  readonly pg: string;
}

// pg's length is checked only once the method is known to be the REST one.
const pgAndMethod = fields({
  pg: documented(
    z.string().max(MAX_ID_LENGTH),
    z.custom<string>((pg) => typeof pg === 'string' && pg.trim() !== '', fails('SUBSCRIBE_NEED_PG_METHOD')),
  ),
  method: documented(
    z.literal(KEY_IN_METHOD),
    z.custom<typeof KEY_IN_METHOD>((method) => method === KEY_IN_METHOD, fails('RC_ONLY_REST_API')),
  ),
}).refine((body) => body.pg.length <= MAX_ID_LENGTH, invalid(`pg is longer than ${MAX_ID_LENGTH} characters.`));

/**
 * Step 1 of POST /v2/request/subscribe: pg missing -> 2300; method missing or not
 * '카드자동(REST)' -> 2058 (the server default for an omitted method is a non-REST value).
 * The caller then resolves the PG: unknown or not enabled for the project -> 2001, no
 * billing-key capability -> 2057.
 */
export function parsePgAndMethod(rawBody: unknown): PgSelection {
  return { pg: validate(pgAndMethod, rawBody).pg };
}

/** extra.subscribe_test_payment: a charge of this many won, refunded at once, proves the card works. */
export const VERIFICATION_CHARGE_WON = 100;

export interface BillingKeyRequest {
  readonly subscriptionId: string;
  readonly orderName: string;
  /** extra.subscribe_test_payment was true: charge VERIFICATION_CHARGE_WON and refund it (receipt_data) */
  readonly verificationCharge: boolean;
  /** raw card data: hand it to the gateway adapter and drop it */
  readonly card: CardDetails;
}

// The issuance checks come in three stages, as the spec orders them: every blank first, then the card
// itself (month range before the local refusals, expiry last), then the merchant's own fields.
const issuanceBlanks = fields({
  card_no: documented(
    z.string().describe('15-16 digits, no separators; never stored or logged'),
    requiredString('card_no', 'SUBSCRIBE_CARD_NO_BLANK'),
  ),
  card_pw: documented(
    z.string().describe('the first 2 digits of the card password'),
    requiredString('card_pw', 'SUBSCRIBE_CARD_PW_BLANK'),
  ),
  card_identity_no: documented(
    z.string().describe('6-digit birth date or 10-digit business registration number'),
    requiredString('card_identity_no', 'SUBSCRIBE_CARD_IDENTITY_BLANK'),
  ),
  card_expire_year: documented(z.string().describe('YY'), requiredString('card_expire_year', 'SUBSCRIBE_CARD_EX_YEAR_BLANK')),
  card_expire_month: documented(z.string().describe('MM'), requiredString('card_expire_month', 'SUBSCRIBE_CARD_EX_MONTH_BLANK')),
  order_name: documented(z.string().max(MAX_NAME_LENGTH), requiredString('order_name', 'RC_NAME_BLANK')),
  subscription_id: documented(z.string().max(MAX_ID_LENGTH), requiredString('subscription_id', 'RC_O_ID_BLANK')),
});

const cardRules = fields({
  card_expire_month: z.string().refine(isExpireMonthValid, fails('RC_INVALID_EXP_MONTH')),
  card_no: z
    .string()
    .refine(isCardNumberWellFormed, localRefusal('card_no must be a valid 15-16 digit card number without separators.')),
  card_pw: z.string().refine(isCardPasswordWellFormed, localRefusal('card_pw must be the first 2 digits of the card password.')),
  card_identity_no: z
    .string()
    .refine(
      isIdentityNoWellFormed,
      localRefusal('card_identity_no must be a 6-digit birth date or a 10-digit business registration number.'),
    ),
  card_expire_year: z.string().refine(isExpireYearWellFormed, localRefusal('card_expire_year must be 2 digits (YY).')),
});

const cardRulesAt = (now: Date) =>
  cardRules.refine(
    (card) => !isCardExpired(card.card_expire_year, card.card_expire_month, now),
    localRefusal('The card has expired.'),
  );

/** extra.subscribe_test_payment: absent or null (or no extra at all) is no verification charge. */
const verificationOption = z
  .custom<Record<string, unknown>>(isRecord, invalid('extra must be an object.'))
  .transform((extra) => extra.subscribe_test_payment)
  .pipe(
    z
      .custom<boolean>((option) => typeof option === 'boolean', invalid('extra.subscribe_test_payment must be a boolean.'))
      .nullish(),
  )
  .nullish()
  .transform((option) => option ?? false);

const issuanceMerchantFields = fields({
  subscription_id: merchantId('subscription_id', atMost('subscription_id', MAX_ID_LENGTH)),
  order_name: atMost('order_name', MAX_NAME_LENGTH),
  extra: documented(z.looseObject({ subscribe_test_payment: z.boolean().nullish() }).nullish(), verificationOption),
});

/** The body of POST /v2/request/subscribe as the OpenAPI document shows it: the fields of both steps. */
export const billingKeyRequestBody = describeFields([pgAndMethod, issuanceBlanks, cardRules, issuanceMerchantFields]);

/**
 * Step 2 of POST /v2/request/subscribe, after the PG is known:
 * blanks in the order 2311 card_no, 2312 card_pw, 2313 card_identity_no, 2314 card_expire_year,
 * 2315 card_expire_month, 2003 order_name, 2005 subscription_id; then 2084 for a month outside
 * 01-12; then local refusals (2304, no pg_error_code) for a malformed card number (not 15-16
 * digits, or Luhn-invalid), password, identity number, year, or an expired card; then
 * INVALID_REQUEST for over-long merchant strings or a malformed extra. Messages never echo the
 * card values.
 */
export function parseBillingKeyRequest(rawBody: unknown, now: Date): BillingKeyRequest {
  const body = validate(issuanceBlanks, rawBody);
  validate(cardRulesAt(now), body);
  const merchant = validate(issuanceMerchantFields, body);
  return {
    subscriptionId: merchant.subscription_id,
    orderName: merchant.order_name,
    verificationCharge: merchant.extra,
    card: {
      number: body.card_no,
      password2: body.card_pw,
      identityNo: body.card_identity_no,
      expireYear: body.card_expire_year,
      expireMonth: body.card_expire_month,
    },
  };
}

/** The order_id of an issuance's verification charge: derived from the issuance receipt, so unique. */
export function verificationOrderId(issuanceReceiptId: string): string {
  return `verification-${issuanceReceiptId}`;
}

/** What paygate keeps about an issued billing key (no raw card data; the gateway key stays server-side). */
export interface BillingKeyView {
  readonly billingKey: string;
  readonly receiptId: string;
  readonly subscriptionId: string;
  readonly pg: string;
  readonly card: MaskedCard;
  readonly expiresAt: Date;
  readonly publishedAt: Date;
  readonly requestedAt: Date;
}

export interface BillingData {
  card_no: string;
  card_company: string;
  card_company_code: string;
  card_type: string;
}

export interface BillingKeyResponse {
  billing_key: string;
  billing_data: BillingData;
  billing_expire_at: string;
  receipt_id: string;
  subscription_id: string;
  status: number;
  status_locale: string;
  pg: string;
  method: string;
  method_symbol: string;
  method_origin: string;
  method_origin_symbol: string;
  published_at: string;
  requested_at: string;
  /** the verification charge's receipt (extra.subscribe_test_payment) */
  receipt_data?: Record<string, unknown>;
}

function billingData(card: MaskedCard): BillingData {
  return {
    card_no: card.maskedNumber,
    card_company: card.cardCompany,
    card_company_code: card.cardCompanyCode,
    card_type: card.cardType,
  };
}

/** The billing key issuance response; receipt_data is added only when a verification charge happened. */
export function renderBillingKey(view: BillingKeyView): BillingKeyResponse {
  return {
    billing_key: view.billingKey,
    billing_data: billingData(view.card),
    billing_expire_at: formatTimestamp(view.expiresAt),
    receipt_id: view.receiptId,
    subscription_id: view.subscriptionId,
    status: BILLING_KEY_ISSUED,
    status_locale: statusLocale(BILLING_KEY_ISSUED),
    pg: view.pg,
    method: KEY_IN_METHOD,
    method_symbol: KEY_IN_METHOD_SYMBOL,
    method_origin: KEY_IN_METHOD,
    method_origin_symbol: KEY_IN_METHOD_SYMBOL,
    published_at: formatTimestamp(view.publishedAt),
    requested_at: formatTimestamp(view.requestedAt),
  };
}

/** The largest charge paygate accepts: 10,000,000,000 won (tax_free is at most price, cancels at most what remains). */
export const MAX_PRICE_WON = MAX_WON;

export interface ChargeParams {
  readonly billingKey: string;
  readonly orderName: string;
  readonly orderId: string;
  readonly price: number;
  readonly taxFree: number;
  /** instalment months, 0 = lump sum */
  readonly quota: number;
  readonly metadata: Record<string, unknown> | undefined;
}

function nonNegativeWon(field: string) {
  return z.custom<number>(
    (value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0,
    invalid(`${field} must be a non-negative integer amount in won.`),
  );
}

// The identifiers and amounts first (tax_free against price once both are known), then the rest.
const chargeAmounts = fields({
  billing_key: documented(
    z.string(),
    requiredString('billing_key', 'SUBSCRIBE_BK_NOT_FOUND').refine(isResourceId, fails('SUBSCRIBE_BK_NOT_FOUND')),
  ),
  order_name: documented(z.string().max(MAX_NAME_LENGTH), requiredString('order_name', 'RC_NAME_BLANK')),
  order_id: documented(
    z.string().max(MAX_ID_LENGTH).describe('unique per project; compared, stored and echoed in Unicode NFC'),
    requiredString('order_id', 'RC_O_ID_BLANK'),
  ),
  price: documented(
    wonDoc(1),
    nonNegativeWon('price')
      .refine((price) => price !== 0, invalid('price must be at least 1 won.'))
      .refine((price) => price <= MAX_PRICE_WON, invalid(`price must be at most ${MAX_PRICE_WON} won.`)),
  ),
  tax_free: documented(
    wonDoc(0).optional().describe('at most price'),
    nonNegativeWon('tax_free')
      .nullish()
      .transform((taxFree) => taxFree ?? 0),
  ),
}).refine((charge) => charge.tax_free <= charge.price, invalid('tax_free cannot exceed price.'));

/** Instalment months, 0 to 24, as a number or its digits ('03'); absent, null or '' is a lump sum. */
const quota = z
  .custom<number | string>(
    (value) => value === '' || ((typeof value === 'number' || typeof value === 'string') && isQuota(String(value))),
    invalid('card_quota must be the instalment months, 0 to 24.'),
  )
  .nullish()
  .transform((value) => (value === undefined || value === null || value === '' ? 0 : Number(String(value))));

function isQuota(text: string): boolean {
  return /^\d{1,2}$/.test(text) && Number(text) <= 24;
}

/** An object of at most 8 KB as UTF-8 JSON, kept as given; absent or null is none. */
const metadata = z
  .custom<Record<string, unknown>>(isRecord, invalid('metadata must be an object.'))
  .refine(
    (value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_METADATA_BYTES,
    invalid(`metadata is larger than ${MAX_METADATA_BYTES} bytes.`),
  )
  .nullish()
  .transform((value) => value ?? undefined);

const chargeOptions = fields({
  order_name: atMost('order_name', MAX_NAME_LENGTH),
  order_id: merchantId('order_id', atMost('order_id', MAX_ID_LENGTH)),
  card_quota: documented(z.number().int().min(0).max(24).optional().describe('instalment months; 0 or absent = lump sum'), quota),
  metadata: documented(z.record(z.string(), z.unknown()).optional(), metadata),
});

/** The stages of a charge's fields, in order: for the documentation of the bodies that carry a charge. */
export const chargeRequestStages = [chargeAmounts, chargeOptions] as const;

/**
 * POST /v2/subscribe/payment: billing_key blank -> 2309; order_name blank -> 2003; order_id blank
 * -> 2005; then price (an integer in won, 1..MAX_PRICE_WON), tax_free (0..price), order_id (at most
 * 100 characters, no control or bidi characters), card_quota ('0'-'24' or a number), metadata (an
 * object of at most 8 KB) -> INVALID_REQUEST.
 */
export function parseChargeRequest(rawBody: unknown): ChargeParams {
  const charge = validate(chargeAmounts, rawBody);
  const options = validate(chargeOptions, charge);
  return {
    billingKey: charge.billing_key,
    orderName: options.order_name,
    orderId: options.order_id,
    price: charge.price,
    taxFree: charge.tax_free,
    quota: options.card_quota,
    metadata: options.metadata,
  };
}

/**
 * What makes a second request under the same order_id "the same charge": a retry of it re-drives
 * the PG with the same derived key; anything else is ORDER_ID_DUPLICATED.
 */
export function chargeHash(params: ChargeParams): string {
  return sha256Hex(JSON.stringify([params.billingKey, params.price, params.taxFree, params.quota, params.orderName]));
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The gateway idempotency key of a charge: one per (project, order_id), never random per attempt,
 * so a retry after a timeout reaches the gateway with the same key and cannot charge twice.
 */
export function chargeIdempotencyKey(projectId: string, orderId: string): string {
  return `chg_${sha256Hex(`charge\u0000${projectId}\u0000${orderId}`).slice(0, 40)}`;
}

/** The gateway key of an issuance: one per issuance receipt, reused by every attempt of that request. */
export function issuanceIdempotencyKey(projectId: string, receiptId: string): string {
  return `iss_${sha256Hex(`issue\u0000${projectId}\u0000${receiptId}`).slice(0, 40)}`;
}

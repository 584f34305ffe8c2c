// Key-in billing rules: request validation in a fixed, documented order, the issuance response
// shape, and the derived idempotency keys sent to gateways. Pure code: no I/O.
import { createHash } from 'node:crypto';
import type { CardDetails, MaskedCard } from './card.js';
import {
  isCardExpired,
  isCardNumberWellFormed,
  isCardPasswordWellFormed,
  isExpireMonthValid,
  isExpireYearWellFormed,
  isIdentityNoWellFormed,
} from './card.js';
import { ApiError, type ErrorName } from './errors.js';
import { formatTimestamp } from './time.js';
import { BILLING_KEY_ISSUED, isResourceId, statusLocale } from './receipt.js';

/** The only method that can issue a billing key over REST. */
export const KEY_IN_METHOD = '카드자동(REST)';
export const KEY_IN_METHOD_SYMBOL = 'card_rebill_rest';

/** Upper bounds on merchant-chosen strings, so a 100 KB field is refused instead of stored. */
const MAX_ID_LENGTH = 100;
const MAX_NAME_LENGTH = 200;
const MAX_METADATA_BYTES = 8 * 1024;

type Body = Record<string, unknown>;

/** Any JSON value as a field map; arrays and scalars have no fields. */
function asFields(body: unknown): Body {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Body) : {};
}

/** A present, non-blank string, or undefined for missing / blank / non-string values. */
function presentString(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}

function required(body: Body, field: string, error: ErrorName): string {
  const value = body[field];
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    throw new ApiError(error);
  }
  if (typeof value !== 'string') throw new ApiError(error, { message: `${field} must be a string.` });
  return value;
}

function bounded(value: string, field: string, max: number): string {
  if (value.length > max) throw new ApiError('INVALID_REQUEST', { message: `${field} is longer than ${max} characters.` });
  return value;
}

/** A card refused before it reaches any gateway: 2304 without pg_error_code (no PG was asked). */
function localRefusal(message: string): ApiError {
  return new ApiError('SUBSCRIBE_PUBLISH_FAILED', { message });
}

export interface PgSelection {
  readonly pg: string;
}

/**
 * Step 1 of POST /v2/request/subscribe: pg missing -> 2300; method missing or not
 * '카드자동(REST)' -> 2058 (the server default for an omitted method is a non-REST value).
 * The caller then resolves the PG: unknown or not enabled for the project -> 2001, no
 * billing-key capability -> 2057.
 */
export function parsePgAndMethod(rawBody: unknown): PgSelection {
  const body = asFields(rawBody);
  const pg = presentString(body.pg);
  if (pg === undefined) throw new ApiError('SUBSCRIBE_NEED_PG_METHOD');
  if (body.method !== KEY_IN_METHOD) throw new ApiError('RC_ONLY_REST_API');
  return { pg: bounded(pg, 'pg', MAX_ID_LENGTH) };
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
  const body = asFields(rawBody);
  const number = required(body, 'card_no', 'SUBSCRIBE_CARD_NO_BLANK');
  const password2 = required(body, 'card_pw', 'SUBSCRIBE_CARD_PW_BLANK');
  const identityNo = required(body, 'card_identity_no', 'SUBSCRIBE_CARD_IDENTITY_BLANK');
  const expireYear = required(body, 'card_expire_year', 'SUBSCRIBE_CARD_EX_YEAR_BLANK');
  const expireMonth = required(body, 'card_expire_month', 'SUBSCRIBE_CARD_EX_MONTH_BLANK');
  const orderName = required(body, 'order_name', 'RC_NAME_BLANK');
  const subscriptionId = required(body, 'subscription_id', 'RC_O_ID_BLANK');

  if (!isExpireMonthValid(expireMonth)) throw new ApiError('RC_INVALID_EXP_MONTH');
  if (!isCardNumberWellFormed(number)) {
    throw localRefusal('card_no must be a valid 15-16 digit card number without separators.');
  }
  if (!isCardPasswordWellFormed(password2)) throw localRefusal('card_pw must be the first 2 digits of the card password.');
  if (!isIdentityNoWellFormed(identityNo)) {
    throw localRefusal('card_identity_no must be a 6-digit birth date or a 10-digit business registration number.');
  }
  if (!isExpireYearWellFormed(expireYear)) throw localRefusal('card_expire_year must be 2 digits (YY).');
  if (isCardExpired(expireYear, expireMonth, now)) throw localRefusal('The card has expired.');

  return {
    subscriptionId: bounded(subscriptionId, 'subscription_id', MAX_ID_LENGTH),
    orderName: bounded(orderName, 'order_name', MAX_NAME_LENGTH),
    verificationCharge: parseVerificationOption(body.extra),
    card: { number, password2, identityNo, expireYear, expireMonth },
  };
}

function parseVerificationOption(extra: unknown): boolean {
  if (extra === undefined || extra === null) return false;
  if (typeof extra !== 'object' || Array.isArray(extra)) throw new ApiError('INVALID_REQUEST', { message: 'extra must be an object.' });
  const option = (extra as Record<string, unknown>).subscribe_test_payment;
  if (option === undefined || option === null) return false;
  if (typeof option !== 'boolean') throw new ApiError('INVALID_REQUEST', { message: 'extra.subscribe_test_payment must be a boolean.' });
  return option;
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

function nonNegativeWon(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ApiError('INVALID_REQUEST', { message: `${field} must be a non-negative integer amount in won.` });
  }
  return value;
}

/**
 * POST /v2/subscribe/payment: billing_key blank -> 2309; order_name blank -> 2003; order_id blank
 * -> 2005; then price (a positive integer in won), tax_free (0..price), card_quota ('0'-'24' or
 * a number), metadata (an object of at most 8 KB) -> INVALID_REQUEST.
 */
export function parseChargeRequest(rawBody: unknown): ChargeParams {
  const body = asFields(rawBody);
  const billingKey = required(body, 'billing_key', 'SUBSCRIBE_BK_NOT_FOUND');
  if (!isResourceId(billingKey)) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
  const orderName = required(body, 'order_name', 'RC_NAME_BLANK');
  const orderId = required(body, 'order_id', 'RC_O_ID_BLANK');
  const price = nonNegativeWon(body.price, 'price');
  if (price === 0) throw new ApiError('INVALID_REQUEST', { message: 'price must be at least 1 won.' });
  const taxFree = body.tax_free === undefined || body.tax_free === null ? 0 : nonNegativeWon(body.tax_free, 'tax_free');
  if (taxFree > price) throw new ApiError('INVALID_REQUEST', { message: 'tax_free cannot exceed price.' });
  return {
    billingKey,
    orderName: bounded(orderName, 'order_name', MAX_NAME_LENGTH),
    orderId: bounded(orderId, 'order_id', MAX_ID_LENGTH),
    price,
    taxFree,
    quota: parseQuota(body.card_quota),
    metadata: parseMetadata(body.metadata),
  };
}

function parseQuota(value: unknown): number {
  if (value === undefined || value === null || value === '') return 0;
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,2}$/.test(text) || Number(text) > 24) {
    throw new ApiError('INVALID_REQUEST', { message: 'card_quota must be the instalment months, 0 to 24.' });
  }
  return Number(text);
}

function parseMetadata(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ApiError('INVALID_REQUEST', { message: 'metadata must be an object.' });
  }
  if (Buffer.byteLength(JSON.stringify(value)) > MAX_METADATA_BYTES) {
    throw new ApiError('INVALID_REQUEST', { message: `metadata is larger than ${MAX_METADATA_BYTES} bytes.` });
  }
  return value as Record<string, unknown>;
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

// Payment receipts: status numbers and their labels, the receipt response shape, cancel rules.
// Pure code: no I/O.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { MaskedCard } from '../gateways/card-rules.js';
import type { FieldDisagreement } from '../gateways/rules.js';
import { ApiError } from '../platform/errors.js';
import { formatOptionalTimestamp, formatTimestamp } from '../platform/time.js';
import {
  describeFields,
  documented,
  fails,
  fields,
  isRecord,
  isWon,
  MAX_WON,
  merchantId,
  validate,
  wonDoc,
} from '../platform/validation.js';

/** Charge accepted locally, gateway answer not yet recorded (a retry with the same order_id re-drives it). */
export const PAYMENT_PENDING = 0;
export const PAYMENT_COMPLETE = 1;
export const BILLING_KEY_ISSUED = 11;
/** Every won refunded; a partial cancel keeps status 1 and raises cancelled_price. */
export const PAYMENT_CANCELLED = 20;

const STATUS_LOCALES: Readonly<Record<number, string>> = {
  [PAYMENT_PENDING]: '결제대기',
  [PAYMENT_COMPLETE]: '결제완료',
  [BILLING_KEY_ISSUED]: '빌링키발급완료',
  [PAYMENT_CANCELLED]: '결제취소완료',
};

export function statusLocale(status: number): string {
  return STATUS_LOCALES[status] ?? String(status);
}

export const CURRENCY = 'KRW';

/** paygate's receipt ids and billing keys: 24 lowercase hex characters. Anything else names nothing. */
const RESOURCE_ID = /^[0-9a-f]{24}$/;

export function isResourceId(value: string): boolean {
  return RESOURCE_ID.test(value);
}

/** Why a receipt needs an operator's attention, as stored on it and shown by the dashboard. */
export interface ReceiptAttention {
  readonly kind: 'answer_mismatch';
  readonly operation: 'charge';
  /** ISO 8601 */
  readonly at: string;
  readonly fields: Readonly<Record<string, FieldDisagreement>>;
}

/** The error a charge whose PG answer disagreed with the request answers with, every time it is asked again. */
export function answerMismatchMessage(fields: Readonly<Record<string, FieldDisagreement>>): string {
  const parts = Object.entries(fields).map(
    ([field, { asked, answered }]) =>
      `${field}: asked ${String(asked)}, answered ${answered === null ? 'nothing' : String(answered)}`,
  );
  return `The provider's answer does not match the request (${parts.join('; ')}). The payment is recorded as the provider made it and marked for attention: look up the receipt, and cancel it if it is wrong.`;
}

/** escrow_data inside an escrow payment's receipt (escrow/rules.ts renders it). */
export interface EscrowData {
  status: number;
  status_locale: string;
  shipping_started_at?: string;
  receipt_confirmed_at?: string;
  receipt_revoked_at?: string;
  escrow_confirm_url?: string;
}

export interface ReceiptView {
  readonly receiptId: string;
  readonly orderId: string;
  readonly orderName: string;
  readonly price: number;
  readonly taxFree: number;
  readonly cancelledPrice: number;
  readonly cancelledTaxFree: number;
  readonly status: number;
  readonly pg: string;
  readonly method: string;
  readonly methodSymbol: string;
  readonly sandbox: boolean;
  readonly requestedAt: Date;
  readonly purchasedAt?: Date | undefined;
  readonly cancelledAt?: Date | undefined;
  readonly card?: MaskedCard | undefined;
  readonly cardQuota: number;
  readonly approvalNo?: string | undefined;
  readonly metadata?: Record<string, unknown> | undefined;
  readonly companyName?: string | undefined;
}

export interface CardData {
  card_approve_no?: string;
  card_no: string;
  card_quota: string;
  card_company: string;
  card_company_code: string;
  card_type: string;
}

export interface ReceiptResponse {
  receipt_id: string;
  order_id: string;
  price: number;
  tax_free: number;
  cancelled_price: number;
  cancelled_tax_free: number;
  order_name: string;
  company_name?: string;
  metadata?: Record<string, unknown>;
  sandbox: boolean;
  pg: string;
  method: string;
  method_symbol: string;
  method_origin: string;
  method_origin_symbol: string;
  purchased_at?: string;
  requested_at: string;
  cancelled_at?: string;
  status: number;
  status_locale: string;
  card_data?: CardData;
  currency: string;
  /** escrow payments only */
  escrow_data?: EscrowData;
}

/** Receipt lookup / charge / cancel response. Keys without a value are left out, never null. */
export function renderReceipt(view: ReceiptView): ReceiptResponse {
  const body: ReceiptResponse = {
    receipt_id: view.receiptId,
    order_id: view.orderId,
    price: view.price,
    tax_free: view.taxFree,
    cancelled_price: view.cancelledPrice,
    cancelled_tax_free: view.cancelledTaxFree,
    order_name: view.orderName,
    sandbox: view.sandbox,
    pg: view.pg,
    method: view.method,
    method_symbol: view.methodSymbol,
    method_origin: view.method,
    method_origin_symbol: view.methodSymbol,
    requested_at: formatTimestamp(view.requestedAt),
    status: view.status,
    status_locale: statusLocale(view.status),
    currency: CURRENCY,
  };
  if (view.companyName !== undefined) body.company_name = view.companyName;
  if (view.metadata !== undefined) body.metadata = view.metadata;
  const purchasedAt = formatOptionalTimestamp(view.purchasedAt);
  if (purchasedAt !== undefined) body.purchased_at = purchasedAt;
  const cancelledAt = formatOptionalTimestamp(view.cancelledAt);
  if (cancelledAt !== undefined) body.cancelled_at = cancelledAt;
  if (view.card !== undefined) {
    const cardData: CardData = {
      card_no: view.card.maskedNumber,
      card_quota: String(view.cardQuota).padStart(2, '0'),
      card_company: view.card.cardCompany,
      card_company_code: view.card.cardCompanyCode,
      card_type: view.card.cardType,
    };
    if (view.approvalNo !== undefined) cardData.card_approve_no = view.approvalNo;
    body.card_data = cardData;
  }
  return body;
}

export interface CancelRequest {
  readonly receiptId: string;
  /** omitted = the whole remaining amount */
  readonly cancelPrice: number | undefined;
  readonly cancelTaxFree: number | undefined;
  readonly cancelId: string | undefined;
  readonly cancelMessage: string | undefined;
}

const MAX_CANCEL_ID_LENGTH = 100;
const MAX_CANCEL_MESSAGE_LENGTH = 500;

const invalid = (message: string) => fails('INVALID_REQUEST', { message });

/** A positive integer amount in won, or undefined when absent or null; `zero` also lets 0 (and -0) through, as 0. */
function optionalWon(field: string, { zero = false } = {}) {
  return z
    .custom<number>(
      (value) => isWon(value, zero ? 0 : 1),
      invalid(`${field} must be a positive integer amount in won, at most ${MAX_WON}.`),
    )
    .nullish()
    .transform((value) => (value === 0 ? 0 : (value ?? undefined)));
}

/** A string of at most `max` characters, or undefined when absent, null or ''. */
function optionalText(field: string, max: number) {
  return z
    .custom<string>(
      (value) => typeof value === 'string' && value.length <= max,
      invalid(`${field} must be a string of at most ${max} characters.`),
    )
    .nullish()
    .transform((value) => (value === '' || value === null ? undefined : value));
}

const cancelBody = fields({
  receipt_id: documented(
    z.string(),
    z
      .custom<string>(
        (id) => typeof id === 'string' && id.trim() !== '',
        fails('RC_NOT_FOUND', { message: 'receipt_id is required.' }),
      )
      .refine(isResourceId, fails('RC_NOT_FOUND')),
  ),
  cancel_username: documented(
    z.string().max(MAX_CANCEL_ID_LENGTH).optional(),
    optionalText('cancel_username', MAX_CANCEL_ID_LENGTH),
  ),
  refund: documented(
    z.record(z.string(), z.unknown()).optional().describe('accepted and not kept: a card refund goes back to the card'),
    z.custom(isRecord, invalid('refund must be an object.')).nullish(),
  ),
  cancel_price: documented(wonDoc(1).optional().describe('omitted = everything that remains'), optionalWon('cancel_price')),
  cancel_tax_free: documented(wonDoc(0).optional(), optionalWon('cancel_tax_free', { zero: true })),
  cancel_id: documented(
    z.string().max(MAX_CANCEL_ID_LENGTH).optional().describe('makes the cancel idempotent; compared in Unicode NFC'),
    merchantId('cancel_id', optionalText('cancel_id', MAX_CANCEL_ID_LENGTH)),
  ),
  cancel_message: documented(
    z.string().max(MAX_CANCEL_MESSAGE_LENGTH).optional(),
    optionalText('cancel_message', MAX_CANCEL_MESSAGE_LENGTH),
  ),
});

/** The body of POST /v2/cancel as the OpenAPI document shows it. */
export const cancelRequestBody = describeFields([cancelBody]);

/**
 * POST /v2/cancel body. receipt_id blank -> RC_NOT_FOUND; wrong types or over-long strings ->
 * INVALID_REQUEST. cancel_username and refund are accepted and not kept (a person's name and a
 * bank account are not stored; card refunds go back to the card).
 */
export function parseCancelRequest(rawBody: unknown): CancelRequest {
  const body = validate(cancelBody, rawBody);
  return {
    receiptId: body.receipt_id,
    cancelPrice: body.cancel_price,
    cancelTaxFree: body.cancel_tax_free,
    cancelId: body.cancel_id,
    cancelMessage: body.cancel_message,
  };
}

export interface CancellableAmounts {
  readonly status: number;
  readonly price: number;
  readonly taxFree: number;
  readonly cancelledPrice: number;
  readonly cancelledTaxFree: number;
}

export interface CancelPlan {
  readonly amount: number;
  readonly taxFree: number;
  /** the receipt moves to 20 when nothing remains */
  readonly fullyCancelled: boolean;
}

/**
 * How much one cancel refunds. Only a complete payment (status 1, possibly partly refunded) can be
 * cancelled; the refund cannot exceed what remains, and the tax-free part left over can never
 * exceed the amount left over. When cancel_tax_free is omitted, the tax-free part is refunded only
 * as far as needed to keep that rule.
 */
export function planCancel(
  receipt: CancellableAmounts,
  request: Pick<CancelRequest, 'cancelPrice' | 'cancelTaxFree'>,
): CancelPlan {
  if (receipt.status === PAYMENT_CANCELLED) {
    throw new ApiError('RECEIPT_NOT_CANCELLABLE', { message: 'The payment has already been fully cancelled.' });
  }
  if (receipt.status !== PAYMENT_COMPLETE) {
    throw new ApiError('RECEIPT_NOT_CANCELLABLE', { message: 'Only a completed payment can be cancelled.' });
  }
  const remaining = receipt.price - receipt.cancelledPrice;
  const remainingTaxFree = receipt.taxFree - receipt.cancelledTaxFree;
  const amount = request.cancelPrice ?? remaining;
  if (amount > remaining) {
    throw new ApiError('CANCEL_PRICE_EXCEEDED', { message: `The cancel amount exceeds the remaining ${remaining} won.` });
  }
  const minimumTaxFree = Math.max(0, remainingTaxFree - (remaining - amount));
  const taxFree = request.cancelTaxFree ?? minimumTaxFree;
  if (taxFree > amount || taxFree > remainingTaxFree || taxFree < minimumTaxFree) {
    throw new ApiError('CANCEL_PRICE_EXCEEDED', {
      message: `cancel_tax_free must be between ${minimumTaxFree} and ${Math.min(amount, remainingTaxFree)} won.`,
    });
  }
  return { amount, taxFree, fullyCancelled: amount === remaining };
}

/** A cancel as recorded: what it refunded, and the receipt's refunded totals just before it. */
export interface RecordedCancel {
  readonly amount: number;
  readonly taxFree: number;
  readonly cancelledPriceBefore: number;
  readonly cancelledTaxFreeBefore: number;
}

/**
 * Whether a repeated cancel_id asks for the refund its first cancel made: planned against the receipt
 * as that first cancel found it, the repeat must refund the same amount and tax-free part. So omitted
 * amounts mean what they meant the first time (the whole remainder; the least tax-free part), and
 * anything else is a different cancel under a used id (IDEMPOTENCY_KEY_REUSED, never the first result).
 */
export function isSameCancel(
  receipt: { readonly price: number; readonly taxFree: number },
  first: RecordedCancel,
  request: Pick<CancelRequest, 'cancelPrice' | 'cancelTaxFree'>,
): boolean {
  try {
    const plan = planCancel(
      {
        status: PAYMENT_COMPLETE,
        price: receipt.price,
        taxFree: receipt.taxFree,
        cancelledPrice: first.cancelledPriceBefore,
        cancelledTaxFree: first.cancelledTaxFreeBefore,
      },
      request,
    );
    return plan.amount === first.amount && plan.taxFree === first.taxFree;
  } catch (err) {
    if (err instanceof ApiError) return false;
    throw err;
  }
}

/**
 * The gateway key of one cancel: from cancel_id when the merchant gave one, otherwise from the
 * receipt's refund state before this cancel, so a retry of the same cancel reuses the same key.
 */
export function cancelIdempotencyKey(
  receiptId: string,
  cancelId: string | undefined,
  cancelledPriceBefore: number,
  amount: number,
): string {
  const source = cancelId === undefined ? `state\u0000${cancelledPriceBefore}\u0000${amount}` : `id\u0000${cancelId}`;
  return `cxl_${createHash('sha256').update(`cancel\u0000${receiptId}\u0000${source}`).digest('hex').slice(0, 40)}`;
}

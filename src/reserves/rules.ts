// Reserved charges (extensions.md, "Scheduled (reserved) charges"): the request rules, the statuses and the
// response shape. The charge fields are the charge request's own (parseChargeRequest), so a reserve accepts
// exactly what POST /v2/subscribe/payment accepts; the reserve adds its execution time, user and items, each
// documented where it is checked (the OpenAPI document's body is derived from these stages).
import { z } from 'zod';
import { type ChargeParams, parseChargeRequest } from '../payments/billing-rules.js';
import { formatOptionalTimestamp, formatTimestamp } from '../platform/time.js';
import { documented, fails, fields, isRecord, timestampDoc, validate } from '../platform/validation.js';

export const RESERVE_STATUSES = ['reserved', 'executing', 'paid', 'failed', 'revoked'] as const;
export type ReserveStatus = (typeof RESERVE_STATUSES)[number];

/** A reserve runs at most this far ahead of its request. */
export const MAX_RESERVE_AHEAD_MS = 365 * 24 * 60 * 60 * 1000;
const MAX_USER_BYTES = 4 * 1024;
const MAX_ITEMS_BYTES = 16 * 1024;

export interface ReserveRequest {
  readonly charge: ChargeParams;
  readonly executeAt: Date;
  /** the buyer as given (personal data: stored sealed) */
  readonly user: Record<string, unknown> | undefined;
  readonly items: unknown[] | undefined;
}

/** ISO 8601 with a date, a time and an offset (Z or ±hh:mm); anything else is not a point in time. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

const notExecutable = (payloadMessage: string) => fails('RESERVE_EXECUTE_AT_INVALID', { payloadMessage });
const invalid = (payloadMessage: string) => fails('INVALID_REQUEST', { payloadMessage });

const executeAt = fields({
  reserve_execute_at: documented(
    timestampDoc.describe('after now, at most 1 year ahead'),
    z
      .custom<string>(
        (value) => typeof value === 'string' && ISO_INSTANT.test(value.trim()),
        notExecutable('reserve_execute_at must be an ISO 8601 time with an offset, e.g. 2026-01-31T09:00:00+09:00'),
      )
      .transform((value) => new Date(value.trim()))
      .refine((at) => !Number.isNaN(at.getTime()), notExecutable('reserve_execute_at is not a valid time')),
  ),
});

const executeAtFrom = (now: Date) =>
  executeAt
    .refine((body) => body.reserve_execute_at.getTime() > now.getTime(), notExecutable('reserve_execute_at is in the past'))
    .refine(
      (body) => body.reserve_execute_at.getTime() <= now.getTime() + MAX_RESERVE_AHEAD_MS,
      notExecutable('reserve_execute_at is more than 1 year ahead'),
    );

/** A JSON value of at most `maxBytes` as UTF-8 JSON text, kept as given; absent or null is none. */
function bounded<T>(check: z.ZodType<T>, field: string, maxBytes: number) {
  return check
    .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= maxBytes, invalid(`${field} is larger than ${maxBytes} bytes`))
    .nullish()
    .transform((value) => value ?? undefined);
}

const extras = fields({
  user: documented(
    z.record(z.string(), z.unknown()).optional(),
    bounded(z.custom<Record<string, unknown>>(isRecord, invalid('user must be an object')), 'user', MAX_USER_BYTES),
  ),
  items: documented(
    z.array(z.record(z.string(), z.unknown())).optional(),
    bounded(z.custom<unknown[]>(Array.isArray, invalid('items must be an array')), 'items', MAX_ITEMS_BYTES),
  ),
});

/** The stages of a reserve's own fields, after the charge's: for the documentation of its body. */
export const reserveRequestStages = [executeAt, extras] as const;

/**
 * POST /v2/subscribe/payment/reserve: the charge's checks first, in the charge's order (2309, 2003, 2005,
 * price, tax_free, order_id, metadata), then reserve_execute_at (9442: not a time, past, more than a year
 * ahead), then user (an object) and items (an array) -> 9400.
 */
export function parseReserveRequest(rawBody: unknown, now: Date): ReserveRequest {
  const charge = parseChargeRequest(rawBody);
  const { reserve_execute_at: executeAtTime } = validate(executeAtFrom(now), rawBody);
  const { user, items } = validate(extras, rawBody);
  return { charge, executeAt: executeAtTime, user, items };
}

export interface ReserveView {
  readonly reserveId: string;
  readonly receiptId: string | null;
  readonly orderId: string;
  readonly orderName: string;
  readonly price: number;
  readonly taxFree: number;
  readonly user: Record<string, unknown> | undefined;
  readonly items: unknown[] | undefined;
  readonly metadata: Record<string, unknown> | null;
  readonly feedbackUrl: string | null;
  readonly contentType: string | null;
  readonly status: ReserveStatus;
  readonly errorCode: string | null;
  readonly pgErrorCode: string | null;
  readonly requestedAt: Date;
  readonly executeAt: Date;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  readonly revokedAt: Date | null;
}

export interface ReserveResponse {
  readonly reserve_id: string;
  readonly receipt_id?: string;
  readonly order_id: string;
  readonly price: number;
  readonly tax_free: number;
  readonly order_name: string;
  readonly user: Record<string, unknown>;
  readonly items?: unknown[];
  readonly feedback_url?: string;
  readonly metadata: Record<string, unknown>;
  readonly content_type?: string;
  readonly reserve_requested_at: string;
  readonly reserve_execute_at: string;
  readonly reserve_started_at?: string;
  readonly reserve_finished_at?: string;
  readonly reserve_revoked_at?: string;
  readonly status: ReserveStatus;
  /** why a failed reserve failed: the catalog error name, and the PG's code when it refused */
  readonly error_code?: string;
  readonly pg_error_code?: string;
}

/** The GET answer (and the body a failed reserve's feedback_url receives): absent times are left out, never null. */
export function renderReserve(v: ReserveView): ReserveResponse {
  const optional = <K extends string, T>(key: K, value: T | null | undefined) =>
    (value === null || value === undefined ? {} : { [key]: value }) as Partial<Record<K, T>>;
  return {
    reserve_id: v.reserveId,
    ...optional('receipt_id', v.receiptId),
    order_id: v.orderId,
    price: v.price,
    tax_free: v.taxFree,
    order_name: v.orderName,
    user: v.user ?? {},
    ...optional('items', v.items),
    ...optional('feedback_url', v.feedbackUrl),
    metadata: v.metadata ?? {},
    ...optional('content_type', v.feedbackUrl === null ? null : v.contentType),
    reserve_requested_at: formatTimestamp(v.requestedAt),
    reserve_execute_at: formatTimestamp(v.executeAt),
    ...optional('reserve_started_at', formatOptionalTimestamp(v.startedAt)),
    ...optional('reserve_finished_at', formatOptionalTimestamp(v.finishedAt)),
    ...optional('reserve_revoked_at', formatOptionalTimestamp(v.revokedAt)),
    status: v.status,
    ...optional('error_code', v.errorCode),
    ...optional('pg_error_code', v.pgErrorCode),
  };
}

// Subscription schedules (paygate's own API, issue 12): the request rules, the Asia/Seoul billing calendar and
// the response shapes. Pure: the workflow computes its due times with these functions too.
import { ApiError } from '../platform/errors.js';
import { formatOptionalTimestamp, formatTimestamp } from '../platform/time.js';
import { isRecord } from '../platform/validation.js';

export const SCHEDULE_INTERVALS = ['day', 'week', 'month', 'year'] as const;
export type ScheduleInterval = (typeof SCHEDULE_INTERVALS)[number];
export const SCHEDULE_STATUSES = ['active', 'past_due', 'paused', 'cancelled', 'completed'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];
export const CHARGE_STATUSES = ['paid', 'failed', 'retrying', 'skipped'] as const;
export type ScheduleChargeStatus = (typeof CHARGE_STATUSES)[number];
export type OnExhausted = 'pause' | 'cancel';

export const MAX_INTERVAL_COUNT = 365;
export const MAX_RETRY_DELAYS = 10;
export const DEFAULT_RETRY_DELAYS_SECONDS: readonly number[] = [86_400, 3 * 86_400, 7 * 86_400];
export const MAX_UPCOMING = 100;
/** start_at may lag the server's clock by this much (the client's clock skew); earlier is refused. */
export const START_AT_TOLERANCE_MS = 5 * 60 * 1000;
const MAX_ORDER_NAME_LENGTH = 255;
const MAX_METADATA_BYTES = 16 * 1024;

/** Whatever the calendar needs: the anchor (start_at) and the step. */
export interface SchedulePlan {
  readonly startAt: string;
  readonly interval: ScheduleInterval;
  readonly intervalCount: number;
  readonly endAt?: string | undefined;
  readonly maxCharges?: number | undefined;
}

// Asia/Seoul has had no daylight saving since 1988: a fixed +09:00 is exact.
const KST_OFFSET_MS = 9 * 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

function daysInMonth(year: number, month0: number): number {
  return new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
}

/**
 * The due time of a period (1 = start_at). Days and weeks are fixed lengths in KST; months and years count
 * calendar months from the anchor's KST date, the anchor day clamped to the month's end (Jan 31 -> Feb 28/29,
 * Mar 31, Apr 30): computed from the anchor every time, so a short month never drifts the later ones.
 */
export function dueAt(plan: SchedulePlan, period: number): Date {
  const anchor = Date.parse(plan.startAt);
  const steps = (period - 1) * plan.intervalCount;
  if (plan.interval === 'day') return new Date(anchor + steps * DAY_MS);
  if (plan.interval === 'week') return new Date(anchor + steps * 7 * DAY_MS);
  const local = new Date(anchor + KST_OFFSET_MS);
  const months = plan.interval === 'month' ? steps : steps * 12;
  const total = local.getUTCMonth() + months;
  const year = local.getUTCFullYear() + Math.floor(total / 12);
  const month0 = ((total % 12) + 12) % 12;
  const day = Math.min(local.getUTCDate(), daysInMonth(year, month0));
  const msOfDay = anchor + KST_OFFSET_MS - Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate());
  return new Date(Date.UTC(year, month0, day) + msOfDay - KST_OFFSET_MS);
}

/** Whether a period lies beyond end_at or max_charges (given the charges made so far). */
export function isPastEnd(plan: SchedulePlan, period: number, chargesMade: number): boolean {
  if (plan.maxCharges !== undefined && chargesMade >= plan.maxCharges) return true;
  return plan.endAt !== undefined && dueAt(plan, period).getTime() > Date.parse(plan.endAt);
}

/** The first period due strictly after `now`, not before `from` (resume: the missed ones are skipped). */
export function firstPeriodAfter(plan: SchedulePlan, now: Date, from: number): number {
  let period = from;
  while (dueAt(plan, period).getTime() <= now.getTime()) period++;
  return period;
}

/** The next `count` due times from `period` on, stopping at end_at / max_charges. */
export function upcoming(plan: SchedulePlan, period: number, chargesMade: number, count: number): Date[] {
  const out: Date[] = [];
  for (let p = period, made = chargesMade; out.length < count && !isPastEnd(plan, p, made); p++, made++) {
    out.push(dueAt(plan, p));
  }
  return out;
}

// ---- requests

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const ISO_DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

const invalid = (payloadMessage: string) => new ApiError('INVALID_REQUEST', { payloadMessage });

function parseInstant(value: unknown, field: string): Date {
  if (typeof value !== 'string' || !ISO_INSTANT.test(value.trim())) {
    throw invalid(`${field} must be an ISO 8601 time with an offset, e.g. 2027-01-31T09:00:00+09:00`);
  }
  const at = new Date(value.trim());
  if (Number.isNaN(at.getTime())) throw invalid(`${field} is not a valid time`);
  return at;
}

/** A retry delay: positive seconds, or an ISO 8601 duration (P1D, PT12H, P1W, ...). */
export function parseDelaySeconds(value: unknown): number {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value > 0) return value;
  } else if (typeof value === 'string') {
    const m = ISO_DURATION.exec(value.trim());
    if (m && value.trim() !== 'P' && !value.trim().endsWith('T')) {
      const [w, d, h, min, s] = m.slice(1).map((part) => Number(part ?? 0)) as [number, number, number, number, number];
      const seconds = (((w * 7 + d) * 24 + h) * 60 + min) * 60 + s;
      if (seconds > 0) return seconds;
    }
  }
  throw invalid('retry.delays must be positive seconds or ISO 8601 durations (P1D, PT12H)');
}

function positiveWon(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    throw invalid(`${field} must be a positive integer`);
  return value;
}

function orderName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_ORDER_NAME_LENGTH) {
    throw invalid(`order_name must be text of 1-${MAX_ORDER_NAME_LENGTH} characters`);
  }
  return value;
}

function metadata(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw invalid('metadata must be an object');
  if (Buffer.byteLength(JSON.stringify(value)) > MAX_METADATA_BYTES)
    throw invalid(`metadata is larger than ${MAX_METADATA_BYTES} bytes`);
  return value;
}

export interface ScheduleRequest {
  readonly billingKey: string;
  readonly orderName: string;
  readonly price: number;
  readonly taxFree: number;
  readonly plan: Required<Pick<SchedulePlan, 'startAt' | 'interval' | 'intervalCount'>> &
    Pick<SchedulePlan, 'endAt' | 'maxCharges'>;
  readonly retryDelaysSeconds: readonly number[];
  readonly onExhausted: OnExhausted;
  readonly metadata: Record<string, unknown> | undefined;
}

/** POST /v2/subscribe/schedules: every field checked (9400 naming it) before anything is looked up. */
export function parseScheduleRequest(rawBody: unknown, now: Date): ScheduleRequest {
  const body = isRecord(rawBody) ? rawBody : {};
  if (typeof body.billing_key !== 'string' || body.billing_key === '') throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
  const name = orderName(body.order_name);
  const price = positiveWon(body.price, 'price');
  let taxFree = 0;
  if (body.tax_free !== undefined && body.tax_free !== null) {
    if (typeof body.tax_free !== 'number' || !Number.isSafeInteger(body.tax_free) || body.tax_free < 0) {
      throw invalid('tax_free must be a non-negative integer');
    }
    if (body.tax_free > price) throw invalid('tax_free must not exceed price');
    taxFree = body.tax_free;
  }
  if (!SCHEDULE_INTERVALS.includes(body.interval as ScheduleInterval)) {
    throw invalid(`interval must be one of ${SCHEDULE_INTERVALS.join(', ')}`);
  }
  const interval = body.interval as ScheduleInterval;
  let intervalCount = 1;
  if (body.interval_count !== undefined && body.interval_count !== null) {
    const c = body.interval_count;
    if (typeof c !== 'number' || !Number.isInteger(c) || c < 1 || c > MAX_INTERVAL_COUNT) {
      throw invalid(`interval_count must be an integer 1-${MAX_INTERVAL_COUNT}`);
    }
    intervalCount = c;
  }
  const startAt = body.start_at === undefined || body.start_at === null ? now : parseInstant(body.start_at, 'start_at');
  // a start in the past would charge every period since then at once
  if (startAt.getTime() < now.getTime() - START_AT_TOLERANCE_MS) throw invalid('start_at is in the past');
  let endAt: string | undefined;
  if (body.end_at !== undefined && body.end_at !== null) {
    const end = parseInstant(body.end_at, 'end_at');
    if (end.getTime() <= startAt.getTime()) throw invalid('end_at must be after start_at');
    endAt = end.toISOString();
  }
  let maxCharges: number | undefined;
  if (body.max_charges !== undefined && body.max_charges !== null) {
    const m = body.max_charges;
    if (typeof m !== 'number' || !Number.isSafeInteger(m) || m < 1) throw invalid('max_charges must be a positive integer');
    maxCharges = m;
  }
  let retryDelaysSeconds = DEFAULT_RETRY_DELAYS_SECONDS;
  let onExhausted: OnExhausted = 'pause';
  if (body.retry !== undefined && body.retry !== null) {
    if (!isRecord(body.retry)) throw invalid('retry must be an object');
    if (body.retry.delays !== undefined) {
      if (!Array.isArray(body.retry.delays) || body.retry.delays.length > MAX_RETRY_DELAYS) {
        throw invalid(`retry.delays must be an array of at most ${MAX_RETRY_DELAYS} delays`);
      }
      retryDelaysSeconds = body.retry.delays.map(parseDelaySeconds);
    }
    if (body.retry.on_exhausted !== undefined) {
      if (body.retry.on_exhausted !== 'pause' && body.retry.on_exhausted !== 'cancel') {
        throw invalid('retry.on_exhausted must be pause or cancel');
      }
      onExhausted = body.retry.on_exhausted;
    }
  }
  return {
    billingKey: body.billing_key,
    orderName: name,
    price,
    taxFree,
    plan: { startAt: startAt.toISOString(), interval, intervalCount, endAt, maxCharges },
    retryDelaysSeconds,
    onExhausted,
    metadata: metadata(body.metadata),
  };
}

export interface SchedulePatch {
  readonly price?: number;
  readonly orderName?: string;
  readonly metadata?: Record<string, unknown>;
}

/** PATCH: price?, order_name?, metadata?; at least one, nothing else. tax_free stays within the new price. */
export function parseSchedulePatch(rawBody: unknown): SchedulePatch {
  if (!isRecord(rawBody)) throw invalid('the body must be an object');
  const unknown = Object.keys(rawBody).filter((k) => !['price', 'order_name', 'metadata'].includes(k));
  if (unknown.length > 0) throw invalid(`only price, order_name and metadata can be changed (not ${unknown.join(', ')})`);
  const patch: { price?: number; orderName?: string; metadata?: Record<string, unknown> } = {};
  if (rawBody.price !== undefined) patch.price = positiveWon(rawBody.price, 'price');
  if (rawBody.order_name !== undefined) patch.orderName = orderName(rawBody.order_name);
  if (rawBody.metadata !== undefined) patch.metadata = metadata(rawBody.metadata) ?? {};
  if (Object.keys(patch).length === 0) throw invalid('nothing to change: give price, order_name or metadata');
  return patch;
}

export interface ScheduleListQuery {
  readonly billingKey?: string;
  readonly status?: ScheduleStatus;
  readonly page: number;
  readonly limit: number;
}

export function parseScheduleListQuery(raw: unknown): ScheduleListQuery {
  const q = isRecord(raw) ? raw : {};
  const int = (value: unknown, field: string, min: number, max: number, fallback: number): number => {
    if (value === undefined || value === '') return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw invalid(`${field} must be an integer ${min}-${max}`);
    return n;
  };
  if (q.status !== undefined && !SCHEDULE_STATUSES.includes(q.status as ScheduleStatus)) {
    throw invalid(`status must be one of ${SCHEDULE_STATUSES.join(', ')}`);
  }
  return {
    ...(typeof q.billing_key === 'string' && q.billing_key !== '' ? { billingKey: q.billing_key } : {}),
    ...(q.status !== undefined ? { status: q.status as ScheduleStatus } : {}),
    page: int(q.page, 'page', 1, 1_000_000, 1),
    limit: int(q.limit, 'limit', 1, 100, 20),
  };
}

export function parseUpcomingCount(raw: unknown): number {
  const value = isRecord(raw) ? raw.count : undefined;
  if (value === undefined || value === '') return 12;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_UPCOMING) throw invalid(`count must be an integer 1-${MAX_UPCOMING}`);
  return n;
}

// ---- responses

export interface ScheduleView {
  readonly scheduleId: string;
  readonly billingKey: string;
  readonly orderName: string;
  readonly price: number;
  readonly taxFree: number;
  readonly interval: ScheduleInterval;
  readonly intervalCount: number;
  readonly startAt: Date;
  readonly endAt: Date | null;
  readonly maxCharges: number | null;
  readonly status: ScheduleStatus;
  readonly nextChargeAt: Date | null;
  readonly chargesMade: number;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly metadata: Record<string, unknown> | null;
}

export function renderSchedule(v: ScheduleView): Record<string, unknown> {
  return {
    schedule_id: v.scheduleId,
    billing_key: v.billingKey,
    order_name: v.orderName,
    price: v.price,
    tax_free: v.taxFree,
    interval: v.interval,
    interval_count: v.intervalCount,
    start_at: formatTimestamp(v.startAt),
    ...(v.endAt !== null ? { end_at: formatTimestamp(v.endAt) } : {}),
    ...(v.maxCharges !== null ? { max_charges: v.maxCharges } : {}),
    status: v.status,
    ...(v.nextChargeAt !== null && (v.status === 'active' || v.status === 'past_due')
      ? { next_charge_at: formatTimestamp(v.nextChargeAt) }
      : {}),
    charges_made: v.chargesMade,
    created_at: formatTimestamp(v.createdAt),
    updated_at: formatTimestamp(v.updatedAt),
    metadata: v.metadata ?? {},
  };
}

export interface ScheduleChargeView {
  readonly period: number;
  readonly orderId: string;
  readonly dueAt: Date;
  readonly status: ScheduleChargeStatus;
  readonly attempts: number;
  readonly receiptId: string | null;
  readonly pgErrorCode: string | null;
  readonly chargedAt: Date | null;
}

export function renderScheduleCharge(c: ScheduleChargeView): Record<string, unknown> {
  return {
    period: c.period,
    order_id: c.orderId,
    due_at: formatTimestamp(c.dueAt),
    status: c.status,
    attempts: c.attempts,
    ...(c.receiptId !== null ? { receipt_id: c.receiptId } : {}),
    ...(c.pgErrorCode !== null ? { pg_error_code: c.pgErrorCode } : {}),
    ...(formatOptionalTimestamp(c.chargedAt) ? { charged_at: formatOptionalTimestamp(c.chargedAt) } : {}),
  };
}

/** The order_id of a period's charge; a dunning retry gets its own (the PG answers a reused one's decline again). */
export function scheduleOrderId(scheduleId: string, period: number, attempt: number): string {
  return attempt <= 1 ? `${scheduleId}-${period}` : `${scheduleId}-${period}-r${attempt}`;
}

export const SUBSCRIPTION_EVENTS = {
  SUBSCRIPTION_CHARGED: 401,
  SUBSCRIPTION_CHARGE_FAILED: 402,
  SUBSCRIPTION_PAST_DUE: 403,
  SUBSCRIPTION_PAUSED: 404,
  SUBSCRIPTION_CANCELLED: 405,
  SUBSCRIPTION_COMPLETED: 406,
} as const;
export type SubscriptionEvent = keyof typeof SUBSCRIPTION_EVENTS;

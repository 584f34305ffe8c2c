// Subscription schedules (paygate's own API, issue 12): the request rules and the response shapes; the billing
// calendar is calendar-rules.ts (the workflow's), re-exported here.
import { z } from 'zod';
import { ApiError } from '../platform/errors.js';
import { formatOptionalTimestamp, formatTimestamp } from '../platform/time.js';
import {
  describeFields,
  documented,
  fails,
  failsWith,
  fields,
  isRecord,
  isWon,
  MAX_WON,
  timestampDoc,
  validate,
  wonDoc,
} from '../platform/validation.js';

export {
  dueAt,
  firstPeriodAfter,
  isPastEnd,
  SCHEDULE_INTERVALS,
  SCHEDULE_STATUSES,
  type ScheduleInterval,
  type SchedulePlan,
  type ScheduleStatus,
  upcoming,
} from './calendar-rules.js';
import {
  SCHEDULE_INTERVALS,
  SCHEDULE_STATUSES,
  type ScheduleInterval,
  type SchedulePlan,
  type ScheduleStatus,
} from './calendar-rules.js';

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

// ---- requests
// Every field is checked, and documented, where its stage reads it: the OpenAPI document's bodies and queries are
// derived from these stages. The stages run in the order the checks always ran: amounts, the calendar, end_at
// (after start_at), then the rest; each error is 9400 naming the field (the billing key's is 2309).

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const ISO_DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

const invalid = (payloadMessage: string) => fails('INVALID_REQUEST', { payloadMessage });

/** An ISO 8601 time with an offset, as a Date. */
function instant(field: string) {
  return z
    .custom<string>(
      (value) => typeof value === 'string' && ISO_INSTANT.test(value.trim()),
      invalid(`${field} must be an ISO 8601 time with an offset, e.g. 2027-01-31T09:00:00+09:00`),
    )
    .transform((value) => new Date(value.trim()))
    .refine((at) => !Number.isNaN(at.getTime()), invalid(`${field} is not a valid time`));
}

/** A retry delay in seconds: positive seconds, or an ISO 8601 duration (P1D, PT12H, P1W, ...); undefined otherwise. */
function delaySeconds(value: unknown): number | undefined {
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
  return undefined;
}

const BAD_DELAY = 'retry.delays must be positive seconds or ISO 8601 durations (P1D, PT12H)';

/** A retry delay: positive seconds, or an ISO 8601 duration (P1D, PT12H, P1W, ...). */
export function parseDelaySeconds(value: unknown): number {
  const seconds = delaySeconds(value);
  if (seconds === undefined) throw new ApiError('INVALID_REQUEST', { payloadMessage: BAD_DELAY });
  return seconds;
}

const positiveWon = (field: string) =>
  z.custom<number>((value) => isWon(value, 1), invalid(`${field} must be a positive integer, at most ${MAX_WON}`));

const orderName = z.custom<string>(
  (value) => typeof value === 'string' && value.trim() !== '' && value.length <= MAX_ORDER_NAME_LENGTH,
  invalid(`order_name must be text of 1-${MAX_ORDER_NAME_LENGTH} characters`),
);
const orderNameDoc = z.string().min(1).max(MAX_ORDER_NAME_LENGTH);

/** An object of at most 16 KB as UTF-8 JSON, kept as given. */
const metadataObject = z
  .custom<Record<string, unknown>>(isRecord, invalid('metadata must be an object'))
  .refine(
    (value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_METADATA_BYTES,
    invalid(`metadata is larger than ${MAX_METADATA_BYTES} bytes`),
  );
const metadataDoc = z.record(z.string(), z.unknown()).optional();

const amounts = fields({
  billing_key: documented(
    z.string(),
    z.custom<string>((value) => typeof value === 'string' && value !== '', fails('SUBSCRIBE_BK_NOT_FOUND')),
  ),
  order_name: documented(orderNameDoc, orderName),
  price: documented(wonDoc(1), positiveWon('price')),
  tax_free: documented(
    wonDoc(0).optional().describe('at most price'),
    z
      .custom<number>((value) => isWon(value, 0), invalid(`tax_free must be a non-negative integer, at most ${MAX_WON}`))
      .nullish()
      .transform((value) => value ?? 0),
  ),
}).refine((body) => body.tax_free <= body.price, invalid('tax_free must not exceed price'));

const calendar = fields({
  interval: documented(
    z.enum(SCHEDULE_INTERVALS),
    z.custom<ScheduleInterval>(
      (value) => SCHEDULE_INTERVALS.includes(value as ScheduleInterval),
      invalid(`interval must be one of ${SCHEDULE_INTERVALS.join(', ')}`),
    ),
  ),
  interval_count: documented(
    z.number().int().min(1).max(MAX_INTERVAL_COUNT).optional(),
    z
      .custom<number>(
        (value) => typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_INTERVAL_COUNT,
        invalid(`interval_count must be an integer 1-${MAX_INTERVAL_COUNT}`),
      )
      .nullish()
      .transform((value) => value ?? 1),
  ),
  start_at: documented(
    timestampDoc.optional().describe('default now; at most 5 minutes in the past'),
    instant('start_at')
      .nullish()
      .transform((at) => at ?? undefined),
  ),
});

// a start in the past would charge every period since then at once
const calendarAt = (now: Date) =>
  calendar.refine(
    (body) => (body.start_at ?? now).getTime() >= now.getTime() - START_AT_TOLERANCE_MS,
    invalid('start_at is in the past'),
  );

const end = fields({
  end_at: documented(
    timestampDoc.optional(),
    instant('end_at')
      .nullish()
      .transform((at) => at ?? undefined),
  ),
});

const endAfter = (startAt: Date) =>
  end.refine(
    (body) => body.end_at === undefined || body.end_at.getTime() > startAt.getTime(),
    invalid('end_at must be after start_at'),
  );

const retry = fields({
  delays: documented(
    z
      .array(z.union([z.string(), z.number().int()]))
      .max(MAX_RETRY_DELAYS)
      .optional()
      .describe('ISO 8601 durations or seconds'),
    z
      .custom<unknown[] | undefined>(
        (value) => value === undefined || (Array.isArray(value) && value.length <= MAX_RETRY_DELAYS),
        invalid(`retry.delays must be an array of at most ${MAX_RETRY_DELAYS} delays`),
      )
      .refine((value) => value === undefined || value.every((delay) => delaySeconds(delay) !== undefined), invalid(BAD_DELAY))
      .transform((value) => (value === undefined ? DEFAULT_RETRY_DELAYS_SECONDS : value.map((delay) => delaySeconds(delay)!))),
  ),
  on_exhausted: documented(
    z.enum(['pause', 'cancel']).optional(),
    z
      .custom<OnExhausted | undefined>(
        (value) => value === undefined || value === 'pause' || value === 'cancel',
        invalid('retry.on_exhausted must be pause or cancel'),
      )
      .transform((value) => value ?? 'pause'),
  ),
});

const rest = fields({
  max_charges: documented(
    z.number().int().min(1).optional(),
    z
      .custom<number>(
        (value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1,
        invalid('max_charges must be a positive integer'),
      )
      .nullish()
      .transform((value) => value ?? undefined),
  ),
  retry: documented(
    describeFields([retry]).optional(),
    z
      .custom<unknown>(isRecord, invalid('retry must be an object'))
      .pipe(retry)
      .nullish()
      .transform((value) => value ?? { delays: DEFAULT_RETRY_DELAYS_SECONDS, on_exhausted: 'pause' as const }),
  ),
  metadata: documented(
    metadataDoc,
    metadataObject.nullish().transform((value) => value ?? undefined),
  ),
});

/** The body of POST /v2/subscribe/schedules as the OpenAPI document shows it. */
export const scheduleRequestBody = describeFields([amounts, calendar, end, rest]);

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
  const money = validate(amounts, rawBody);
  const { interval, interval_count: intervalCount, start_at } = validate(calendarAt(now), rawBody);
  const startAt = start_at ?? now;
  const { end_at } = validate(endAfter(startAt), rawBody);
  const { max_charges: maxCharges, retry: retryPolicy, metadata } = validate(rest, rawBody);
  return {
    billingKey: money.billing_key,
    orderName: money.order_name,
    price: money.price,
    taxFree: money.tax_free,
    plan: { startAt: startAt.toISOString(), interval, intervalCount, endAt: end_at?.toISOString(), maxCharges },
    retryDelaysSeconds: retryPolicy.delays,
    onExhausted: retryPolicy.on_exhausted,
    metadata,
  };
}

export interface SchedulePatch {
  readonly price?: number;
  readonly orderName?: string;
  readonly metadata?: Record<string, unknown>;
}

const PATCHABLE = ['price', 'order_name', 'metadata'];

const patchFields = fields({
  price: documented(wonDoc(1).optional(), positiveWon('price').optional()),
  order_name: documented(orderNameDoc.optional(), orderName.optional()),
  // null clears it
  metadata: documented(
    metadataDoc,
    metadataObject.nullish().transform((value) => (value === undefined ? undefined : (value ?? {}))),
  ),
});

const patchBody = z
  .custom<unknown>(isRecord, invalid('the body must be an object'))
  .superRefine(
    failsWith('INVALID_REQUEST', (body: unknown) => {
      const unknown = Object.keys(body as Record<string, unknown>).filter((key) => !PATCHABLE.includes(key));
      return unknown.length > 0
        ? { payloadMessage: `only price, order_name and metadata can be changed (not ${unknown.join(', ')})` }
        : undefined;
    }),
  )
  .pipe(patchFields)
  .refine(
    (patch) => patch.price !== undefined || patch.order_name !== undefined || patch.metadata !== undefined,
    invalid('nothing to change: give price, order_name or metadata'),
  );

/** The body of PATCH /v2/subscribe/schedules/{schedule_id} as the OpenAPI document shows it: nothing else is accepted. */
export const schedulePatchBody = describeFields([patchFields], { strict: true });

/** PATCH: price?, order_name?, metadata?; at least one, nothing else. tax_free stays within the new price. */
export function parseSchedulePatch(rawBody: unknown): SchedulePatch {
  const patch = validate(patchBody, rawBody);
  return {
    ...(patch.price !== undefined ? { price: patch.price } : {}),
    ...(patch.order_name !== undefined ? { orderName: patch.order_name } : {}),
    ...(patch.metadata !== undefined ? { metadata: patch.metadata } : {}),
  };
}

export interface ScheduleListQuery {
  readonly billingKey?: string;
  readonly status?: ScheduleStatus;
  readonly page: number;
  readonly limit: number;
}

/** An integer in a query string, `fallback` when absent or empty. */
function queryInteger(field: string, min: number, max: number, fallback: number) {
  const integer = (value: unknown) => {
    const n = Number(value);
    return Number.isInteger(n) && n >= min && n <= max;
  };
  return z
    .custom<unknown>(
      (value) => value === undefined || value === '' || integer(value),
      invalid(`${field} must be an integer ${min}-${max}`),
    )
    .transform((value) => (value === undefined || value === '' ? fallback : Number(value)));
}

const MAX_LIST_PAGE = 1_000_000;
const MAX_LIST_LIMIT = 100;

const listQuery = fields({
  billing_key: documented(
    z.string().optional(),
    z.unknown().transform((key) => (typeof key === 'string' && key !== '' ? key : undefined)),
  ),
  status: documented(
    z.enum(SCHEDULE_STATUSES).optional(),
    z.custom<ScheduleStatus | undefined>(
      (status) => status === undefined || SCHEDULE_STATUSES.includes(status as ScheduleStatus),
      invalid(`status must be one of ${SCHEDULE_STATUSES.join(', ')}`),
    ),
  ),
  page: documented(z.coerce.number().int().min(1).max(MAX_LIST_PAGE).optional(), queryInteger('page', 1, MAX_LIST_PAGE, 1)),
  limit: documented(z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).optional(), queryInteger('limit', 1, MAX_LIST_LIMIT, 20)),
});

/** The query of GET /v2/subscribe/schedules as the OpenAPI document shows it. */
export const scheduleListQueryDoc = describeFields([listQuery]);

export function parseScheduleListQuery(raw: unknown): ScheduleListQuery {
  const q = validate(listQuery, raw);
  return {
    ...(q.billing_key !== undefined ? { billingKey: q.billing_key } : {}),
    ...(q.status !== undefined ? { status: q.status } : {}),
    page: q.page,
    limit: q.limit,
  };
}

const upcomingQuery = fields({
  count: documented(z.coerce.number().int().min(1).max(MAX_UPCOMING).optional(), queryInteger('count', 1, MAX_UPCOMING, 12)),
});

/** The query of GET /v2/subscribe/schedules/{schedule_id}/upcoming as the OpenAPI document shows it. */
export const upcomingQueryDoc = describeFields([upcomingQuery]);

export function parseUpcomingCount(raw: unknown): number {
  return validate(upcomingQuery, raw).count;
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

/**
 * The order_id of a period's charge, the same for every dunning attempt: a declined order_id's next charge gets the
 * next PG key (the order_declines count, src/payments/charges.ts pgChargeKey), so a retry is charged afresh and
 * never answered with the PG's earlier decline, while a retry of the same attempt keeps its key.
 */
export function scheduleOrderId(scheduleId: string, period: number): string {
  return `${scheduleId}-${period}`;
}

/**
 * The order_id a dunning retry had while each attempt got its own (`<schedule_id>-<period>-r<n>`): an attempt made
 * so and left without the PG's answer (pending, or charged and not recorded) is finished under it, never charged
 * again under the period's order_id.
 */
export function separateRetryOrderId(scheduleId: string, period: number, attempt: number): string {
  return `${scheduleId}-${period}-r${attempt}`;
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

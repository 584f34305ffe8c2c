// The HTTP contract of the subscription-schedule routes (paygate's own API). The bodies and queries are the
// validators' own documentation (./rules.ts), never written here.
import { z } from 'zod';
import {
  byId,
  component,
  EX,
  IDEMPOTENCY_ERRORS,
  metadata,
  page,
  type RouteContracts,
  resourceId,
  timestamp,
  won,
} from '../platform/http-contract.js';
import { scheduleListQueryDoc, schedulePatchBody, scheduleRequestBody, upcomingQueryDoc } from './rules.js';

const Schedule = component(
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

const ScheduleCharge = component(
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

const scheduleExample = {
  schedule_id: EX.scheduleId,
  billing_key: EX.billingKey,
  order_name: 'Pro plan',
  price: 9900,
  tax_free: 0,
  interval: 'month',
  interval_count: 1,
  start_at: EX.now,
  status: 'active',
  next_charge_at: EX.now,
  charges_made: 0,
  created_at: EX.now,
  updated_at: EX.now,
  metadata: {},
};
const { next_charge_at: _next, ...pausedSchedule } = scheduleExample;

const scheduleLookup = ['SCHEDULE_NOT_FOUND', 'APP_KEY_CHAIN_SESSION_INVALID'] as const;

export const schedulesHttp: RouteContracts = {
  'POST /v2/subscribe/schedules': {
    operationId: 'createSchedule',
    tag: 'schedules',
    summary: 'Create a subscription schedule',
    description:
      '{billing_key, order_name, price, tax_free?, interval: day|week|month|year, interval_count? 1-365, start_at? ' +
      '(default now), max_charges?, end_at?, retry?: {delays: [ISO 8601 durations or seconds] (at most 10; default ' +
      'P1D, P3D, P7D), on_exhausted: pause|cancel}, metadata?} -> 201 the schedule. Periods fall on the Asia/Seoul ' +
      'calendar (a monthly anchor day clamped to the month end); each period is charged once with order_id ' +
      '<schedule_id>-<period>, which its dunning retries keep (each on its own PG key). 9400 naming the field; ' +
      '2309 / 1225 / 9423 for the key.',
    body: scheduleRequestBody,
    response: { status: 201, description: 'The schedule', schema: Schedule },
    example: {
      request: { billing_key: EX.billingKey, order_name: 'Pro plan', price: 9900, interval: 'month', start_at: EX.now },
      response: scheduleExample,
    },
    errors: [
      'SUBSCRIBE_BK_NOT_FOUND',
      'INVALID_REQUEST',
      'APP_KEY_CHAIN_SESSION_INVALID',
      'BILLING_KEY_DESTROYED',
      ...IDEMPOTENCY_ERRORS,
      'SERVICE_UNAVAILABLE',
    ],
  },
  'GET /v2/subscribe/schedules': {
    operationId: 'listSchedules',
    tag: 'schedules',
    summary: 'List subscription schedules',
    description: 'billing_key?, status?, page (1-), limit (1-100) -> {list, page, per, count}, newest first.',
    querystring: scheduleListQueryDoc,
    response: {
      status: 200,
      description: 'Schedules, newest first',
      schema: z.object({ list: z.array(Schedule), ...page }),
    },
    example: { response: { list: [scheduleExample], page: 1, per: 20, count: 1 } },
    errors: ['INVALID_REQUEST'],
  },
  'GET /v2/subscribe/schedules/:schedule_id': {
    operationId: 'getSchedule',
    tag: 'schedules',
    summary: 'Subscription schedule lookup',
    description: '9450 unknown, 1225 another project.',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The schedule', schema: Schedule },
    example: { response: scheduleExample },
    errors: [...scheduleLookup],
  },
  'GET /v2/subscribe/schedules/:schedule_id/charges': {
    operationId: 'listScheduleCharges',
    tag: 'schedules',
    summary: "A schedule's periods",
    description:
      '{list: [{period, order_id: <schedule_id>-<period>, due_at, status: paid|failed|retrying|skipped, attempts, ' +
      'receipt_id?, pg_error_code?, charged_at?}]}',
    params: byId('schedule_id'),
    response: { status: 200, description: "The schedule's periods", schema: z.object({ list: z.array(ScheduleCharge) }) },
    example: {
      response: {
        list: [
          {
            period: 1,
            order_id: `${EX.scheduleId}-1`,
            due_at: EX.now,
            status: 'paid',
            attempts: 1,
            receipt_id: EX.receiptId,
            charged_at: EX.now,
          },
        ],
      },
    },
    errors: [...scheduleLookup],
  },
  'GET /v2/subscribe/schedules/:schedule_id/upcoming': {
    operationId: 'listScheduleUpcoming',
    tag: 'schedules',
    summary: 'The next due times',
    description: '?count=N (1-100, default 12): {schedule_id, list: [times]}.',
    params: byId('schedule_id'),
    querystring: upcomingQueryDoc,
    response: {
      status: 200,
      description: 'The next due times',
      schema: z.object({ schedule_id: resourceId, list: z.array(timestamp) }),
    },
    example: {
      response: { schedule_id: EX.scheduleId, list: ['2026-11-25T09:00:00+09:00', '2026-12-25T09:00:00+09:00'] },
    },
    errors: [...scheduleLookup, 'INVALID_REQUEST'],
  },
  'POST /v2/subscribe/schedules/:schedule_id/pause': {
    operationId: 'pauseSchedule',
    tag: 'schedules',
    summary: 'Pause a schedule',
    description: 'From active or past_due; 9451 otherwise (nothing changes).',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The paused schedule', schema: Schedule },
    example: { response: { ...pausedSchedule, status: 'paused' } },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },
  'POST /v2/subscribe/schedules/:schedule_id/resume': {
    operationId: 'resumeSchedule',
    tag: 'schedules',
    summary: 'Resume a paused schedule',
    description:
      'The next charge is the next due time after now; missed periods are recorded skipped, never charged. 9451 unless paused.',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The active schedule', schema: Schedule },
    example: { response: scheduleExample },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },
  'PATCH /v2/subscribe/schedules/:schedule_id': {
    operationId: 'updateSchedule',
    tag: 'schedules',
    summary: 'Change a schedule',
    description: '{price?, order_name?, metadata?}: applies from the next period. 9451 once cancelled or completed.',
    params: byId('schedule_id'),
    body: schedulePatchBody,
    response: { status: 200, description: 'The schedule; applies from the next period', schema: Schedule },
    example: { request: { price: 12900 }, response: { ...scheduleExample, price: 12900 } },
    errors: [...scheduleLookup, 'INVALID_REQUEST', 'SCHEDULE_STATE_INVALID', 'SERVICE_UNAVAILABLE'],
  },
  'DELETE /v2/subscribe/schedules/:schedule_id': {
    operationId: 'cancelSchedule',
    tag: 'schedules',
    summary: 'Cancel a schedule',
    description: 'cancelled; a charge in flight finishes. 9451 once cancelled or completed.',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The cancelled schedule', schema: Schedule },
    example: { response: { ...pausedSchedule, status: 'cancelled' } },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', 'SERVICE_UNAVAILABLE'],
  },
};

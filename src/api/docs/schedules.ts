// Documentation of the subscription-schedule routes (paygate's own API). The bodies and queries are the
// validators' own documentation (src/schedules/rules.ts).
import { z } from 'zod';
import { scheduleListQueryDoc, schedulePatchBody, scheduleRequestBody, upcomingQueryDoc } from '../../schedules/rules.js';
import { byId, EX, IDEMPOTENCY_ERRORS, type RouteDocs } from './route-doc.js';
import { page } from './webhooks.js';
import { resourceId, Schedule, ScheduleCharge, timestamp } from './schemas.js';

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

export const scheduleRouteDocs: RouteDocs = {
  'POST /v2/subscribe/schedules': {
    operationId: 'createSchedule',
    tag: 'schedules',
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
    params: byId('schedule_id'),
    response: { status: 200, description: 'The schedule', schema: Schedule },
    example: { response: scheduleExample },
    errors: [...scheduleLookup],
  },
  'GET /v2/subscribe/schedules/:schedule_id/charges': {
    operationId: 'listScheduleCharges',
    tag: 'schedules',
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
    params: byId('schedule_id'),
    response: { status: 200, description: 'The paused schedule', schema: Schedule },
    example: { response: { ...pausedSchedule, status: 'paused' } },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },
  'POST /v2/subscribe/schedules/:schedule_id/resume': {
    operationId: 'resumeSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The active schedule', schema: Schedule },
    example: { response: scheduleExample },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', ...IDEMPOTENCY_ERRORS, 'SERVICE_UNAVAILABLE'],
  },
  'PATCH /v2/subscribe/schedules/:schedule_id': {
    operationId: 'updateSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    body: schedulePatchBody,
    response: { status: 200, description: 'The schedule; applies from the next period', schema: Schedule },
    example: { request: { price: 12900 }, response: { ...scheduleExample, price: 12900 } },
    errors: [...scheduleLookup, 'INVALID_REQUEST', 'SCHEDULE_STATE_INVALID', 'SERVICE_UNAVAILABLE'],
  },
  'DELETE /v2/subscribe/schedules/:schedule_id': {
    operationId: 'cancelSchedule',
    tag: 'schedules',
    params: byId('schedule_id'),
    response: { status: 200, description: 'The cancelled schedule', schema: Schedule },
    example: { response: { ...pausedSchedule, status: 'cancelled' } },
    errors: [...scheduleLookup, 'SCHEDULE_STATE_INVALID', 'SERVICE_UNAVAILABLE'],
  },

  // ---- the messaging sub-service's webhook
};

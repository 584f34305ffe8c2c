// The HTTP contract of the routes the API itself owns, beside no area: the health check, the metrics, this
// document, and the sandbox clock (./routes/sandbox-clock.ts), whose advance body is documented by the very
// field checks it runs, kept here so the route and its contract share them.
import { z } from 'zod';
import { ApiErrorBody, EX, type RouteContracts, timestamp } from '../platform/http-contract.js';
import { describeOneOf, documented, fails, fields, timestampDoc } from '../platform/validation.js';

/** Ten years: far enough for any timer paygate sets, and a bound on a typo. */
export const MAX_ADVANCE_SECONDS = 10 * 366 * 24 * 3600;

/** The refusal of an advance body: 9460 SANDBOX_CLOCK_INVALID, its payload naming what is wrong. */
export const invalidAdvance = (payloadMessage: string) => fails('SANDBOX_CLOCK_INVALID', { payloadMessage });

export const advanceShape = {
  seconds: documented(
    z.number().int().min(1).max(MAX_ADVANCE_SECONDS),
    z.custom<number | undefined>(
      (seconds) =>
        seconds === undefined ||
        (typeof seconds === 'number' && Number.isInteger(seconds) && seconds > 0 && seconds <= MAX_ADVANCE_SECONDS),
      invalidAdvance(`seconds must be a whole number from 1 to ${MAX_ADVANCE_SECONDS}`),
    ),
  ),
  to: documented(
    timestampDoc.describe('later than the sandbox clock'),
    z
      .unknown()
      .transform((to) =>
        to === undefined
          ? undefined
          : typeof to === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(to)
            ? new Date(to)
            : new Date(Number.NaN),
      )
      .refine((at) => at === undefined || !Number.isNaN(at.getTime()), invalidAdvance('to must be an ISO 8601 date-time')),
  ),
};
export const advanceFields = fields(advanceShape);

/** The body of POST /sandbox/v1/clock/advance as the OpenAPI document shows it: {seconds} or {to}. */
export const advanceBody = describeOneOf([advanceFields]);

export const apiHttp: RouteContracts = {
  'GET /health': {
    operationId: 'getHealth',
    tag: 'system',
    summary: 'Readiness: the database and every component',
    response: { status: 200, description: 'Ready', schema: z.object({ status: z.literal('ok') }) },
    errorAnswer: {
      status: 503,
      schema: ApiErrorBody.extend({
        status: z.literal('unavailable').optional().describe('with not_ready; absent while the server shuts down'),
        not_ready: z
          .array(z.string())
          .optional()
          .describe('the components that failed their check (database, engine, worker, ...)'),
      }),
    },
    example: { response: { status: 'ok' } },
    errors: ['SERVICE_UNAVAILABLE'],
  },
  'GET /metrics': {
    operationId: 'getMetrics',
    tag: 'system',
    summary: 'Prometheus metrics of this process',
    description: 'Prometheus metrics of this process (text exposition format). Admin token (Bearer).',
    response: {
      status: 200,
      description: 'The Prometheus text exposition format',
      schema: z.string(),
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
    },
    example: {
      response:
        '# HELP paygate_http_requests_total HTTP requests answered, by method, route pattern and status code\n' +
        '# TYPE paygate_http_requests_total counter\n' +
        'paygate_http_requests_total{method="POST",route="/v2/subscribe/payment",status="200"} 1\n',
    },
    errors: [],
  },
  'GET /openapi.json': {
    operationId: 'getOpenApiDocument',
    tag: 'system',
    summary: 'This OpenAPI 3.1 document',
    response: {
      status: 200,
      description: 'The document',
      schema: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }),
    },
    example: { response: { openapi: '3.1.0', info: { title: 'paygate', version: '0.1.0' }, paths: {} } },
    errors: [],
  },

  // ---- the sandbox clock (sandbox mode with the embedded engine only)
  'GET /sandbox/v1/clock': {
    operationId: 'getSandboxClock',
    tag: 'sandbox',
    summary: 'Read the sandbox clock',
    description:
      "The durable processes' time in the sandbox (the engine's timers, the dates reserves, schedules, verifications " +
      "and escrow stamp). A project's key with the subscribe_payment scope, or the admin token, reads it.",
    response: { status: 200, description: 'The sandbox time', schema: z.object({ now: timestamp }) },
    example: { response: { now: EX.now } },
    errors: [],
  },
  'POST /sandbox/v1/clock/advance': {
    operationId: 'advanceSandboxClock',
    tag: 'sandbox',
    summary: 'Advance the sandbox clock',
    description:
      'Admin token only (Authorization: Bearer ADMIN_TOKEN): the installation has one engine, so one sandbox clock ' +
      "for every project; a project's key is refused like on the admin API. Body {seconds} (a positive whole " +
      "number) or {to} (a later ISO 8601 time). Moves the durable processes' time forward, fires every timer due " +
      'on the way in order (verification windows, escrow reconciles, webhook retries, reserves, schedules) and ' +
      'answers {now, settled} once no workflow or activity task is outstanding, or after 60 s with settled false. ' +
      'Real-world time does not move: access tokens, key rotation grace, webhook-timestamp headers, rate limits and ' +
      'Idempotency-Key retention keep the wall clock. Time never goes back; the offset survives a restart. 9460 otherwise.',
    body: advanceBody,
    response: {
      status: 200,
      description: 'The new time, and whether everything due has run',
      schema: z.object({ now: timestamp, settled: z.boolean() }),
    },
    example: { request: { seconds: 86400 }, response: { now: '2026-11-26T09:00:00+09:00', settled: true } },
    errors: ['SANDBOX_CLOCK_INVALID', 'INVALID_REQUEST'],
  },
};

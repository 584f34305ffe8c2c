// The sandbox clock (sandbox mode with the embedded engine only; 404 otherwise): GET /sandbox/v1/clock -> {now};
// POST /sandbox/v1/clock/advance {seconds} | {to} moves the durable processes' time forward (the engine's timers
// and workflow time, the business clock the activities, the sandbox PGs and the API's reserve / schedule checks
// read), fires what comes due in order and answers once that work has settled (at most 60 s). Real-world time (the
// wall clock: tokens, keys, webhook timestamps, rate limits) never moves. The installation has one engine and so
// one sandbox clock for every project: advancing it takes the admin token; reading it moves nothing, so a
// project's key (scope subscribe_payment) or the admin token reads it. src/platform/temporal/sandbox-clock.ts
// holds the clock.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { formatTimestamp } from '../../platform/time.js';
import {
  describeOneOf,
  documented,
  fails,
  failsWith,
  fields,
  isRecord,
  timestampDoc,
  validate,
} from '../../platform/validation.js';

/** Ten years: far enough for any timer paygate sets, and a bound on a typo. */
const MAX_ADVANCE_SECONDS = 10 * 366 * 24 * 3600;

type Advance = { ms: number } | { to: Date };

const invalid = (payloadMessage: string) => fails('SANDBOX_CLOCK_INVALID', { payloadMessage });

const advanceShape = {
  seconds: documented(
    z.number().int().min(1).max(MAX_ADVANCE_SECONDS),
    z.custom<number | undefined>(
      (seconds) =>
        seconds === undefined ||
        (typeof seconds === 'number' && Number.isInteger(seconds) && seconds > 0 && seconds <= MAX_ADVANCE_SECONDS),
      invalid(`seconds must be a whole number from 1 to ${MAX_ADVANCE_SECONDS}`),
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
      .refine((at) => at === undefined || !Number.isNaN(at.getTime()), invalid('to must be an ISO 8601 date-time')),
  ),
};
const advanceFields = fields(advanceShape);

/** The body of POST /sandbox/v1/clock/advance as the OpenAPI document shows it: {seconds} or {to}. */
export const advanceBody = describeOneOf([advanceFields]);

// The body's shape first (an object, no other field, exactly one of the two), then the field given.
const advance = z
  .custom<unknown>(isRecord, fails('INVALID_REQUEST', { payloadMessage: 'the body must be a JSON object' }))
  .superRefine(
    failsWith('SANDBOX_CLOCK_INVALID', (body: unknown) => {
      const unknown = Object.keys(body as Record<string, unknown>).find((key) => !Object.hasOwn(advanceShape, key));
      return unknown === undefined ? undefined : { payloadMessage: `unknown field ${unknown}` };
    }),
  )
  .refine((body) => {
    const { seconds, to } = body as Record<string, unknown>;
    return (seconds === undefined) !== (to === undefined);
  }, invalid('give exactly one of seconds and to'))
  .pipe(advanceFields);

export function parseAdvance(body: unknown, now: Date): Advance {
  const { seconds, to } = validate(
    advance
      .refine(
        ({ to }) => to === undefined || to.getTime() > now.getTime(),
        invalid(`to must be later than the sandbox clock (${formatTimestamp(now)})`),
      )
      .refine(
        ({ to }) => to === undefined || to.getTime() - now.getTime() <= MAX_ADVANCE_SECONDS * 1000,
        invalid('to is more than ten years ahead'),
      ),
    body,
  );
  return seconds !== undefined ? { ms: seconds * 1000 } : { to: to! };
}

export async function sandboxClockRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  const clock = deps.sandboxClock;
  if (!deps.config.sandbox || !clock) return;
  // reading: the scope that makes reserves and schedules (the clock exists to watch them happen), or the admin token
  const reading = { auth: 'project', scope: 'subscribe_payment', adminToo: true } as const;
  // moving it moves every project's processes: the operator's, like the admin API
  const moving = { auth: 'admin' } as const;

  app.get(
    '/sandbox/v1/clock',
    {
      config: reading,
      schema: {
        summary: 'Read the sandbox clock',
        description:
          "The durable processes' time in the sandbox (the engine's timers, the dates reserves, schedules, verifications " +
          "and escrow stamp). A project's key with the subscribe_payment scope, or the admin token, reads it.",
        tags: ['sandbox'],
      },
    },
    async () => ({ now: formatTimestamp(await clock.read()) }),
  );

  app.post(
    '/sandbox/v1/clock/advance',
    {
      config: moving,
      schema: {
        summary: 'Advance the sandbox clock',
        description:
          'Admin token only (Authorization: Bearer ADMIN_TOKEN): the installation has one engine, so one sandbox clock ' +
          "for every project; a project's key is refused like on the admin API. Body {seconds} (a positive whole " +
          "number) or {to} (a later ISO 8601 time). Moves the durable processes' time forward, fires every timer due " +
          'on the way in order (verification windows, escrow reconciles, webhook retries, reserves, schedules) and ' +
          'answers {now, settled} once no workflow or activity task is outstanding, or after 60 s with settled false. ' +
          'Real-world time does not move: access tokens, key rotation grace, webhook-timestamp headers, rate limits and ' +
          'Idempotency-Key retention keep the wall clock. Time never goes back; the offset survives a restart. 9460 otherwise.',
        tags: ['sandbox'],
      },
    },
    async (request) => {
      const target = parseAdvance(request.body, await clock.read());
      const { now, settled } = await clock.advance(target);
      return { now: formatTimestamp(now), settled };
    },
  );
}

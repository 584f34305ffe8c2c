// The sandbox clock (sandbox mode with the embedded engine only; 404 otherwise): GET /sandbox/v1/clock -> {now};
// POST /sandbox/v1/clock/advance {seconds} | {to} moves the time of the whole embedded stack forward (engine
// timers, workflow time, the API's, the activities' and the sandbox PGs' clocks), fires what comes due in order
// and answers once that work has settled (at most 60 s). src/platform/temporal/sandbox-clock.ts holds the clock.
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
import { createIdempotencyHooks } from '../idempotency.js';

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
  const idempotency = createIdempotencyHooks({ idempotency: deps.stores.idempotency, clock: deps.clock, keyring: deps.keyring });
  // the clock exists to watch reserves and schedules happen: the scope that makes them
  const access = { auth: 'project', scope: 'subscribe_payment' } as const;

  app.get(
    '/sandbox/v1/clock',
    {
      config: access,
      schema: { summary: 'Read the sandbox clock', description: 'The time of the whole sandbox stack.', tags: ['sandbox'] },
    },
    async () => ({ now: formatTimestamp(await clock.read()) }),
  );

  app.post(
    '/sandbox/v1/clock/advance',
    {
      config: access,
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
      schema: {
        summary: 'Advance the sandbox clock',
        description:
          'Body {seconds} (a positive whole number) or {to} (a later ISO 8601 time). Moves the time of the whole sandbox ' +
          'stack forward, fires every timer due on the way in order (verification windows, escrow reconciles, webhook ' +
          'retries, reserves, schedules) and answers {now, settled} once no workflow or activity task is outstanding, ' +
          'or after 60 s with settled false. Time never goes back; the offset survives a restart. 9460 otherwise.',
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

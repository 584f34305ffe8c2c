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
import { fails, failsWith, isRecord, validate } from '../../platform/validation.js';
import { advanceFields, advanceShape, invalidAdvance, MAX_ADVANCE_SECONDS } from '../http.js';

type Advance = { ms: number } | { to: Date };

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
  }, invalidAdvance('give exactly one of seconds and to'))
  .pipe(advanceFields);

export function parseAdvance(body: unknown, now: Date): Advance {
  const { seconds, to } = validate(
    advance
      .refine(
        ({ to }) => to === undefined || to.getTime() > now.getTime(),
        invalidAdvance(`to must be later than the sandbox clock (${formatTimestamp(now)})`),
      )
      .refine(
        ({ to }) => to === undefined || to.getTime() - now.getTime() <= MAX_ADVANCE_SECONDS * 1000,
        invalidAdvance('to is more than ten years ahead'),
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

  app.get('/sandbox/v1/clock', { config: reading }, async () => ({ now: formatTimestamp(await clock.read()) }));

  app.post('/sandbox/v1/clock/advance', { config: moving }, async (request) => {
    const target = parseAdvance(request.body, await clock.read());
    const { now, settled } = await clock.advance(target);
    return { now: formatTimestamp(now), settled };
  });
}

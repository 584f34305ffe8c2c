// Subscription schedules (paygate's own API, issue 12): a billing key charged every day / week / month / year
// by the schedule's workflow, with dunning. The use cases are in src/schedules/service.ts.
import type { FastifyInstance } from 'fastify';
import { parseScheduleListQuery, parseSchedulePatch, parseScheduleRequest, parseUpcomingCount } from '../../schedules/rules.js';
import { createIdempotencyHooks } from '../idempotency.js';

type ById = { Params: { schedule_id: string } };

export async function scheduleRoutes(app: FastifyInstance): Promise<void> {
  const { services, wallClock, businessClock } = app.deps;
  const idempotency = createIdempotencyHooks({
    idempotency: app.deps.stores.idempotency,
    clock: wallClock,
    keyring: app.deps.keyring,
  });
  const scoped = { auth: 'project', scope: 'subscribe_payment' } as const;
  const idempotent = { config: scoped, preHandler: idempotency.preHandler, onSend: idempotency.onSend };
  const doc = (summary: string, description: string) => ({ summary, description, tags: ['billing'] });

  app.post(
    '/v2/subscribe/schedules',
    {
      ...idempotent,
      schema: doc(
        'Create a subscription schedule',
        '{billing_key, order_name, price, tax_free?, interval: day|week|month|year, interval_count? 1-365, start_at? ' +
          '(default now), max_charges?, end_at?, retry?: {delays: [ISO 8601 durations or seconds] (at most 10; default ' +
          'P1D, P3D, P7D), on_exhausted: pause|cancel}, metadata?} -> 201 the schedule. Periods fall on the Asia/Seoul ' +
          'calendar (a monthly anchor day clamped to the month end); each period is charged once with order_id ' +
          '<schedule_id>-<period>, which its dunning retries keep (each on its own PG key). 9400 naming the field; ' +
          '2309 / 1225 / 9423 for the key.',
      ),
    },
    async (request, reply) => {
      const schedule = parseScheduleRequest(request.body, businessClock());
      reply.code(201);
      return services.schedules.create(request.project, schedule);
    },
  );

  app.get(
    '/v2/subscribe/schedules',
    {
      config: scoped,
      schema: doc(
        'List subscription schedules',
        'billing_key?, status?, page (1-), limit (1-100) -> {list, page, per, count}, newest first.',
      ),
    },
    async (request) => services.schedules.list(request.project, parseScheduleListQuery(request.query)),
  );

  app.get<ById>(
    '/v2/subscribe/schedules/:schedule_id',
    { config: scoped, schema: doc('Subscription schedule lookup', '9450 unknown, 1225 another project.') },
    async (request) => services.schedules.get(request.project, request.params.schedule_id),
  );

  app.get<ById>(
    '/v2/subscribe/schedules/:schedule_id/charges',
    {
      config: scoped,
      schema: doc(
        "A schedule's periods",
        '{list: [{period, order_id: <schedule_id>-<period>, due_at, status: paid|failed|retrying|skipped, attempts, ' +
          'receipt_id?, pg_error_code?, charged_at?}]}',
      ),
    },
    async (request) => services.schedules.charges(request.project, request.params.schedule_id),
  );

  app.get<ById>(
    '/v2/subscribe/schedules/:schedule_id/upcoming',
    { config: scoped, schema: doc('The next due times', '?count=N (1-100, default 12): {schedule_id, list: [times]}.') },
    async (request) =>
      services.schedules.upcoming(request.project, request.params.schedule_id, parseUpcomingCount(request.query)),
  );

  app.post<ById>(
    '/v2/subscribe/schedules/:schedule_id/pause',
    { ...idempotent, schema: doc('Pause a schedule', 'From active or past_due; 9451 otherwise (nothing changes).') },
    async (request) => services.schedules.pause(request.project, request.params.schedule_id),
  );

  app.post<ById>(
    '/v2/subscribe/schedules/:schedule_id/resume',
    {
      ...idempotent,
      schema: doc(
        'Resume a paused schedule',
        'The next charge is the next due time after now; missed periods are recorded skipped, never charged. 9451 unless paused.',
      ),
    },
    async (request) => services.schedules.resume(request.project, request.params.schedule_id),
  );

  app.patch<ById>(
    '/v2/subscribe/schedules/:schedule_id',
    {
      config: scoped,
      schema: doc(
        'Change a schedule',
        '{price?, order_name?, metadata?}: applies from the next period. 9451 once cancelled or completed.',
      ),
    },
    async (request) => services.schedules.patch(request.project, request.params.schedule_id, parseSchedulePatch(request.body)),
  );

  app.delete<ById>(
    '/v2/subscribe/schedules/:schedule_id',
    {
      config: scoped,
      schema: doc('Cancel a schedule', 'cancelled; a charge in flight finishes. 9451 once cancelled or completed.'),
    },
    async (request) => services.schedules.cancel(request.project, request.params.schedule_id),
  );
}

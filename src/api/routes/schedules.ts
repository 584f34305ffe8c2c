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

  app.post('/v2/subscribe/schedules', { ...idempotent }, async (request, reply) => {
    const schedule = parseScheduleRequest(request.body, businessClock());
    reply.code(201);
    return services.schedules.create(request.project, schedule);
  });

  app.get('/v2/subscribe/schedules', { config: scoped }, async (request) =>
    services.schedules.list(request.project, parseScheduleListQuery(request.query)),
  );

  app.get<ById>('/v2/subscribe/schedules/:schedule_id', { config: scoped }, async (request) =>
    services.schedules.get(request.project, request.params.schedule_id),
  );

  app.get<ById>('/v2/subscribe/schedules/:schedule_id/charges', { config: scoped }, async (request) =>
    services.schedules.charges(request.project, request.params.schedule_id),
  );

  app.get<ById>('/v2/subscribe/schedules/:schedule_id/upcoming', { config: scoped }, async (request) =>
    services.schedules.upcoming(request.project, request.params.schedule_id, parseUpcomingCount(request.query)),
  );

  app.post<ById>('/v2/subscribe/schedules/:schedule_id/pause', { ...idempotent }, async (request) =>
    services.schedules.pause(request.project, request.params.schedule_id),
  );

  app.post<ById>('/v2/subscribe/schedules/:schedule_id/resume', { ...idempotent }, async (request) =>
    services.schedules.resume(request.project, request.params.schedule_id),
  );

  app.patch<ById>('/v2/subscribe/schedules/:schedule_id', { config: scoped }, async (request) =>
    services.schedules.patch(request.project, request.params.schedule_id, parseSchedulePatch(request.body)),
  );

  app.delete<ById>('/v2/subscribe/schedules/:schedule_id', { config: scoped }, async (request) =>
    services.schedules.cancel(request.project, request.params.schedule_id),
  );
}

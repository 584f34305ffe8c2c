// Reserved charges (list, revoke), subscription schedules (list, one with its charges and upcoming due times,
// pause / resume / cancel) and the sandbox clock with its advance: the reserve and schedule use cases and the
// clock the /sandbox/v1/clock routes move.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../platform/errors.js';
import { parseScheduleListQuery } from '../../schedules/rules.js';
import { formatTimestamp } from '../../platform/time.js';
import type { DashboardContext } from '../context.js';
import { field, intField } from './forms.js';

const LIST_LIMIT = 50;
const session = { auth: 'none', dashboard: 'project' } as const;
type ById = { Params: { schedule_id: string } };

/** The clock's advances offered as buttons, in seconds; any other whole number is typed in. */
const ADVANCES = [
  { seconds: 3600, label: '1 hour' },
  { seconds: 86_400, label: '1 day' },
  { seconds: 7 * 86_400, label: '7 days' },
  { seconds: 31 * 86_400, label: '31 days' },
];
/** The same bound as the API's advance: ten years. */
const MAX_ADVANCE_SECONDS = 10 * 366 * 24 * 3600;

export async function recurringPages(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { services, sandboxClock } = app.deps;
  const schedules = services.schedules;
  const detail = (id: string, done: string) => `/dashboard/schedules/${encodeURIComponent(id)}?done=${done}`;

  app.get('/reserves', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'subscribe_payment');
    const reserves = await services.reserves.list(project, LIST_LIMIT);
    return ctx.render(request, reply, 'reserves', { title: 'Reserved charges', reserves });
  });

  app.post<{ Params: { reserve_id: string } }>(
    '/reserves/:reserve_id/revoke',
    { config: session, schema: { hide: true } },
    async (request, reply) => {
      const project = await ctx.project(request, 'subscribe_payment');
      await services.reserves.revoke(project, request.params.reserve_id);
      return reply.redirect('/dashboard/reserves?done=revoked', 303);
    },
  );

  app.get('/schedules', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'subscribe_payment');
    const { list, count } = await schedules.list(project, parseScheduleListQuery({ page: '1', limit: String(LIST_LIMIT) }));
    return ctx.render(request, reply, 'schedules', { title: 'Schedules', schedules: list, count });
  });

  app.get<ById>('/schedules/:schedule_id', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'subscribe_payment');
    const id = request.params.schedule_id;
    const schedule = await schedules.get(project, id);
    const [charges, upcoming] = await Promise.all([schedules.charges(project, id), schedules.upcoming(project, id, 6)]);
    return ctx.render(request, reply, 'schedules-detail', {
      title: `Schedule ${id}`,
      schedule,
      charges: charges.list,
      upcoming: upcoming.list,
    });
  });

  const actions = { pause: 'paused', resume: 'resumed', cancel: 'schedule-cancelled' } as const;
  for (const [action, done] of Object.entries(actions) as [keyof typeof actions, string][]) {
    app.post<ById>(`/schedules/:schedule_id/${action}`, { config: session, schema: { hide: true } }, async (request, reply) => {
      const project = await ctx.project(request, 'subscribe_payment');
      await schedules[action](project, request.params.schedule_id);
      return reply.redirect(detail(request.params.schedule_id, done), 303);
    });
  }

  if (!sandboxClock) return;

  app.get('/clock', { config: session, schema: { hide: true } }, async (request, reply) => {
    await ctx.project(request, 'subscribe_payment');
    const now = await sandboxClock.read();
    return ctx.render(request, reply, 'clock', { title: 'Sandbox clock', now: formatTimestamp(now), advances: ADVANCES });
  });

  // One engine, one clock for every project: only an admin session moves it, as only the admin token does on the API
  // (POST /sandbox/v1/clock/advance); a key's session sees the time.
  app.post('/clock/advance', { config: session, schema: { hide: true } }, async (request, reply) => {
    await ctx.project(request, 'subscribe_payment');
    if (ctx.session(request)?.kind !== 'admin') throw new ApiError('ADMIN_UNAUTHORIZED');
    const preset = field(request.body, 'seconds', { optional: true });
    const seconds = preset !== undefined ? intField(request.body, 'seconds') : intField(request.body, 'custom_seconds');
    if (seconds < 1 || seconds > MAX_ADVANCE_SECONDS) {
      throw new ApiError('SANDBOX_CLOCK_INVALID', { payloadMessage: `seconds must be from 1 to ${MAX_ADVANCE_SECONDS}` });
    }
    const { settled } = await sandboxClock.advance({ ms: seconds * 1000 });
    return reply.redirect(`/dashboard/clock?done=${settled ? 'advanced' : 'advanced-unsettled'}`, 303);
  });
}

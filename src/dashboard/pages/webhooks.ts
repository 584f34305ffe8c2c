// The messaging webhook: its configuration (save, secret rotation, test send) and its deliveries with every
// attempt and a retry of a failed one: the webhook use cases the /message routes call. And the project's own
// notifications (its webhook_url, charges' feedback_url): the deliveries and retry the admin API lists and retries.
import type { FastifyInstance } from 'fastify';
import { MESSAGE_EVENTS, parsePageQuery, parseProjectDeliveryQuery, parseWebhookConfigChange } from '../../webhooks/rules.js';
import type { DashboardContext } from '../context.js';
import { field, intField } from './forms.js';

const session = { auth: 'none', dashboard: 'project' } as const;
const PAGE_SIZE = 20;
/** what a held secret is named by: the project's messaging webhook secret */
const secretName = (applicationId: string) => `message-webhook-secret:${applicationId}`;

function checkedCodes(body: unknown): number[] {
  const raw = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).events : undefined;
  const values = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return values.filter((v): v is string => typeof v === 'string' && /^\d{1,4}$/.test(v)).map(Number);
}

export async function webhookPages(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const webhooks = app.deps.services.webhooks;

  async function page(request: Parameters<DashboardContext['project']>[0]) {
    const project = await ctx.project(request, 'message_webhook');
    const query = request.query as Record<string, unknown>;
    const paging = parsePageQuery({ page: query.page ?? '1', limit: String(PAGE_SIZE) });
    const [config, deliveries] = await Promise.all([webhooks.config(project), webhooks.deliveries(project, paging)]);
    return {
      title: 'Webhooks',
      applicationId: project.application_id,
      config,
      events: Object.entries(MESSAGE_EVENTS).map(([code, name]) => ({ code: Number(code), name })),
      deliveries: deliveries.rows,
      count: deliveries.count,
      page: paging.page,
      pages: Math.max(1, Math.ceil(deliveries.count / PAGE_SIZE)),
    };
  }

  app.get('/webhooks', { config: session, schema: { hide: true } }, async (request, reply) =>
    ctx.render(request, reply, 'webhooks', await page(request)),
  );

  app.post('/webhooks', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'message_webhook');
    const body = request.body;
    const url = field(body, 'url', { optional: true });
    await webhooks.save(
      project,
      parseWebhookConfigChange({
        ...(url !== undefined ? { url } : {}),
        events: checkedCodes(body),
        enabled: field(body, 'enabled', { optional: true }) === 'on',
        retry_count: intField(body, 'retry_count'),
      }),
    );
    return reply.redirect('/dashboard/webhooks?done=saved', 303);
  });

  // The rotation, then (POST, redirect, GET) the one page that shows the whole new secret: only to the admin session
  // that rotated it, once. A session signed in with keys may rotate (its scope allows it) but is never shown it.
  app.post('/webhooks/secret', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'message_webhook');
    const rotated = await webhooks.rotateSecret(project);
    const held = rotated.secret ? await ctx.holdSecret(request, secretName(project.application_id), rotated.secret) : false;
    return reply.redirect(held ? '/dashboard/webhooks/secret' : '/dashboard/webhooks?done=rotated-unseen', 303);
  });

  // never cached; a reload, a second tab or another session finds it gone
  app.get('/webhooks/secret', { config: session, schema: { hide: true } }, async (request, reply) => {
    const data = await page(request);
    const secret = data.config.secret;
    const shown = secret ? await ctx.takeSecret(request, secretName(data.applicationId), secret) : false;
    reply.header('cache-control', 'no-store');
    return ctx.render(request, reply, 'webhooks', { ...data, revealedSecret: shown ? secret : undefined, secretGone: !shown });
  });

  app.post('/webhooks/test', { config: session, schema: { hide: true } }, async (request, reply) => {
    const project = await ctx.project(request, 'message_webhook');
    await webhooks.sendTest(project);
    return reply.redirect('/dashboard/webhooks?done=tested', 303);
  });

  app.post<{ Params: { delivery_id: string } }>(
    '/webhooks/deliveries/:delivery_id/retry',
    { config: session, schema: { hide: true } },
    async (request, reply) => {
      const project = await ctx.project(request, 'message_webhook');
      await webhooks.retry(project, request.params.delivery_id);
      return reply.redirect('/dashboard/webhooks?done=retried', 303);
    },
  );

  // the project's notifications are reads of its payments' outcomes: the receipt scope
  app.get<{ Querystring: { page?: string; destination?: string } }>(
    '/notifications',
    { config: session, schema: { hide: true } },
    async (request, reply) => {
      const project = await ctx.project(request, 'receipt');
      const query = parseProjectDeliveryQuery({
        page: request.query.page ?? '1',
        limit: String(PAGE_SIZE),
        ...(request.query.destination ? { destination: request.query.destination } : {}),
      });
      const { rows, count } = await webhooks.projectDeliveries(project.application_id, query);
      return ctx.render(request, reply, 'notifications', {
        title: 'Notifications',
        deliveries: rows,
        count,
        page: query.page,
        pages: Math.max(1, Math.ceil(count / PAGE_SIZE)),
        destination: query.destination,
      });
    },
  );

  app.post<{ Params: { delivery_id: string } }>(
    '/notifications/deliveries/:delivery_id/retry',
    { config: session, schema: { hide: true } },
    async (request, reply) => {
      const project = await ctx.project(request, 'receipt');
      await webhooks.retryProjectDelivery(project.application_id, request.params.delivery_id);
      return reply.redirect('/dashboard/notifications?done=retried', 303);
    },
  );
}

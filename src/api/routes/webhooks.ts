// The messaging sub-service's webhook API under {message_url} = {base_url}/message: configuration,
// secret rotation, test send, delivery history, and (beyond the spec) manual retry and replay; and the sandbox
// messages that produce its events: POST /sandbox/v1/messages {phone, template_code, ref_id?, outcome?} stores a
// message and sends its outcome's events (300, then 301 / 302 / 304) to the project's messaging webhook (sandbox
// mode only). The use cases are in src/webhooks/service.ts and messages.ts; these handlers parse, call and render.
import type { FastifyInstance } from 'fastify';
import { formatTimestamp } from '../../platform/time.js';
import {
  MESSAGE_EVENTS,
  type MessageEventCode,
  parsePageQuery,
  parseSandboxMessage,
  renderDelivery,
  renderWebhookConfig,
  parseReplaySince,
  parseWebhookConfigChange,
} from '../../webhooks/rules.js';
import { createIdempotencyHooks } from '../idempotency.js';

export const MESSAGE_PREFIX = '/message';

export async function webhookRoutes(app: FastifyInstance): Promise<void> {
  // two contexts: the message_url hooks below apply to the webhook API only
  await app.register(messageWebhookRoutes);
  await app.register(sandboxMessageRoutes);
}

async function messageWebhookRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  const webhooks = deps.services.webhooks;
  // Idempotency-Key on every POST of this plugin, as on the main API's
  const idempotency = createIdempotencyHooks({
    idempotency: deps.stores.idempotency,
    clock: deps.wallClock,
    keyring: deps.keyring,
  });
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'POST') await idempotency.preHandler(request, reply);
  });
  app.addHook('onSend', idempotency.onSend);
  const scoped = { config: { auth: 'project' as const, scope: 'message_webhook' as const } };
  const base = `${MESSAGE_PREFIX}/alimtalk/webhook`;

  app.get(base, scoped, async (request) => renderWebhookConfig(await webhooks.config(request.project), false));

  app.put(base, scoped, async (request) =>
    renderWebhookConfig(await webhooks.save(request.project, parseWebhookConfigChange(request.body)), false),
  );

  app.post(`${base}/secret`, scoped, async (request) => renderWebhookConfig(await webhooks.rotateSecret(request.project), true));

  app.post(`${base}/test`, scoped, async (request) => {
    const queued = await webhooks.sendTest(request.project);
    return { delivery_id: queued.deliveryId, url: queued.url, queued: true };
  });

  app.get(`${base}/deliveries`, scoped, async (request) => {
    const page = parsePageQuery(request.query);
    const { rows, count } = await webhooks.deliveries(request.project, page);
    return { list: rows.map(renderDelivery), page: page.page, per: page.per, count };
  });

  app.post<{ Params: { delivery_id: string } }>(`${base}/deliveries/:delivery_id/retry`, scoped, async (request) => {
    const queued = await webhooks.retry(request.project, request.params.delivery_id);
    return { delivery_id: queued.deliveryId, url: queued.url, queued: true };
  });

  app.post(`${base}/deliveries/retry`, scoped, async (request) => {
    const queued = await webhooks.replay(request.project, parseReplaySince(request.body));
    return {
      queued: queued.length,
      delivery_ids: queued.map((q) => q.deliveryId),
      replayed_at: formatTimestamp(deps.wallClock()),
    };
  });
}

/** Sandbox messages: the producer of the messaging webhook's events in sandbox mode. */
async function sandboxMessageRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  if (!deps.config.sandbox) return;
  const idempotency = createIdempotencyHooks({
    idempotency: deps.stores.idempotency,
    clock: deps.wallClock,
    keyring: deps.keyring,
  });

  app.post(
    '/sandbox/v1/messages',
    {
      // the route exists to drive the messaging webhook: a key that configures it may produce its events
      config: { auth: 'project', scope: 'message_webhook' },
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
    },
    async (request) => {
      const message = parseSandboxMessage(request.body);
      const sent = await deps.services.messages.sendSandbox(request.project, message);
      return {
        receipt_id: sent.message.receipt_id,
        ...(sent.message.ref_id !== null ? { ref_id: sent.message.ref_id } : {}),
        template_code: sent.message.template_code,
        phone: message.phone,
        outcome: sent.message.outcome,
        created_at: formatTimestamp(sent.message.created_at),
        events: sent.events.map((e) => ({
          event: MESSAGE_EVENTS[e.eventCode as MessageEventCode],
          event_code: e.eventCode,
          delivery_id: e.deliveryId,
        })),
      };
    },
  );
}

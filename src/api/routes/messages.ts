// Sandbox messages: POST /sandbox/v1/messages {phone, template_code, ref_id?, outcome?} stores a message and
// sends its outcome's events (300, then 301 / 302 / 304) to the project's messaging webhook — sandbox
// mode only. The use case is src/webhooks/messages.ts.
import type { FastifyInstance } from 'fastify';
import { formatTimestamp } from '../../platform/time.js';
import { MESSAGE_EVENTS, type MessageEventCode, parseSandboxMessage } from '../../webhooks/rules.js';
import { createIdempotencyHooks } from '../idempotency.js';

export async function messageRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  if (!deps.config.sandbox) return;
  const idempotency = createIdempotencyHooks({ idempotency: deps.stores.idempotency, clock: deps.clock, keyring: deps.keyring });

  app.post(
    '/sandbox/v1/messages',
    {
      // the route exists to drive the messaging webhook: a key that configures it may produce its events
      config: { auth: 'project', scope: 'message_webhook' },
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
      schema: {
        summary: 'Send a sandbox message',
        description:
          'Body {phone, template_code, ref_id?, outcome?: delivered (default) | failed | fallback_sms}. Stores the message ' +
          'and sends event 300 (accepted) and then 301 (delivered), 302 (failed) or 304 (SMS fallback) to the messaging ' +
          'webhook, each a delivery of its own (tags [receipt_id, ref_id, template_code]) when the webhook is configured, ' +
          'enabled and subscribed to the code (300 only on request). Sandbox mode only.',
        tags: ['sandbox'],
      },
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

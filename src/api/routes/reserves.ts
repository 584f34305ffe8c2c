// Reserved charges (extensions.md): a billing-key charge made at reserve_execute_at by the reserve's
// workflow, looked up and revoked here. The use cases are in src/reserves/service.ts.
import type { FastifyInstance } from 'fastify';
import { parseReserveRequest } from '../../reserves/rules.js';
import { parseFeedbackTarget } from '../../webhooks/rules.js';
import { createIdempotencyHooks } from '../idempotency.js';

export async function reserveRoutes(app: FastifyInstance): Promise<void> {
  const { services, wallClock, businessClock } = app.deps;
  const idempotency = createIdempotencyHooks({
    idempotency: app.deps.stores.idempotency,
    clock: wallClock,
    keyring: app.deps.keyring,
  });

  app.post(
    '/v2/subscribe/payment/reserve',
    {
      config: { auth: 'project', scope: 'subscribe_payment' },
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
    },
    async (request) => {
      const requestedAt = businessClock();
      const reserve = parseReserveRequest(request.body, requestedAt);
      const feedback = parseFeedbackTarget(request.body, { sandbox: app.deps.config.sandbox });
      // the addresses it resolves to, by the rule its delivery connects under: refused before the reserve is saved
      if (feedback) await services.webhooks.checkFeedbackUrl(feedback.url);
      return services.reserves.create(request.project, reserve, feedback, requestedAt);
    },
  );

  app.get<{ Params: { reserve_id: string } }>(
    '/v2/subscribe/payment/reserve/:reserve_id',
    { config: { auth: 'project', scope: 'subscribe_payment' } },
    async (request) => services.reserves.get(request.project, request.params.reserve_id),
  );

  app.delete<{ Params: { reserve_id: string } }>(
    '/v2/subscribe/payment/reserve/:reserve_id',
    { config: { auth: 'project', scope: 'subscribe_payment' } },
    async (request) => services.reserves.revoke(request.project, request.params.reserve_id),
  );
}

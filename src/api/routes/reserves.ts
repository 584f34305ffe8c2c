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
      schema: {
        summary: 'Reserve a billing-key charge',
        description:
          'Body as POST /v2/subscribe/payment plus reserve_execute_at (ISO 8601 with an offset, after now and at most 1 year ' +
          'ahead, else 9442), user?, items?. Checks the charge fields in the charge order, then the billing key (2309, 1225, ' +
          '9423) and the order_id (9410: used by a receipt or another reserve). The charge is made once at ' +
          'reserve_execute_at through the charge path, with this order_id; its result (the receipt, or the failed ' +
          'reserve) goes to feedback_url as a signed webhook delivery.',
        tags: ['billing'],
      },
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
    {
      config: { auth: 'project', scope: 'subscribe_payment' },
      schema: {
        summary: 'Reserved charge lookup',
        description:
          'status reserved | executing | paid | failed | revoked, the reserve_* times reached so far, receipt_id once ' +
          'paid, error_code / pg_error_code once failed. 9440 unknown, 1225 another project.',
        tags: ['billing'],
      },
    },
    async (request) => services.reserves.get(request.project, request.params.reserve_id),
  );

  app.delete<{ Params: { reserve_id: string } }>(
    '/v2/subscribe/payment/reserve/:reserve_id',
    {
      config: { auth: 'project', scope: 'subscribe_payment' },
      schema: {
        summary: 'Revoke a reserved charge',
        description: 'Only a reserve still reserved; 9441 once revoked or executing (nothing changes). 9440, 1225.',
        tags: ['billing'],
      },
    },
    async (request) => services.reserves.revoke(request.project, request.params.reserve_id),
  );
}

// Escrow: shipping start (PUT /v2/escrow/shipping/start/{receipt_id}), the order's events history, the PGs'
// notifications (signed by the PG, no project key) and, in sandbox mode, payments, the buyer's events and
// what the sandbox PGs received. The use cases are in src/escrow/ (service.ts puts them together).
import type { FastifyInstance } from 'fastify';
import { parsePgRequestsQuery, parseSandboxPayment } from '../../escrow/rules.js';
import { ApiError } from '../../platform/errors.js';
import { createIdempotencyHooks } from '../idempotency.js';

export async function escrowRoutes(app: FastifyInstance): Promise<void> {
  const { deps } = app;
  const escrow = deps.services.escrow;
  const idempotency = createIdempotencyHooks({
    idempotency: deps.stores.idempotency,
    clock: deps.wallClock,
    keyring: deps.keyring,
  });

  app.put<{ Params: { receipt_id: string } }>(
    '/v2/escrow/shipping/start/:receipt_id',
    {
      // the spec: seller accounts only; the escrow_shipping_start scope, or any Bearer access token
      config: { auth: 'project', scope: 'escrow_shipping_start', bearerWithoutScope: true, sellerOnly: true },
    },
    async (request) => escrow.shippingStart(request.project, request.params.receipt_id, request.body),
  );

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/escrow/:receipt_id/events',
    { config: { auth: 'project', scope: 'receipt' } },
    async (request) => ({ list: await escrow.events(request.project, request.params.receipt_id) }),
  );

  // The PGs' notifications: authenticated by the PG's signature over the exact body, so the body stays text.
  await app.register(async (pgApp) => {
    pgApp.removeContentTypeParser('application/json');
    pgApp.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      done(null, { raw: typeof body === 'string' ? body : body.toString('utf8') });
    });
    pgApp.post<{ Params: { pg: string }; Body: { raw?: string } | undefined }>(
      '/pg/v1/escrow/notifications/:pg',
      { config: { auth: 'none' } },
      async (request) => {
        const raw = request.body?.raw;
        if (typeof raw !== 'string') throw new ApiError('PG_NOTIFICATION_INVALID');
        await escrow.notification(request.params.pg, request.headers, raw);
        return { received: true };
      },
    );
  });

  if (!deps.config.sandbox) return;

  app.post(
    '/sandbox/v1/payments',
    {
      config: { auth: 'project', scope: 'subscribe_payment' },
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
    },
    async (request) => escrow.pay(request.project, parseSandboxPayment(request.body), idempotency.keyProof(request)),
  );

  if (!deps.sandboxUrl) return;

  app.post<{ Params: { receipt_id: string } }>(
    '/sandbox/v1/escrow/:receipt_id/events',
    {
      // the escrow area's scope, as each sandbox helper takes its area's: a key made for escrow drives the whole
      // order without the right to charge billing keys. Bearer tokens are checked as usual (the spec's exception
      // is shipping start alone).
      config: { auth: 'project', scope: 'escrow_shipping_start' },
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
    },
    async (request, reply) => {
      const sent = await escrow.buyerEvent(request.project, request.params.receipt_id, request.body);
      return reply.code(202).send(sent);
    },
  );

  app.get('/sandbox/v1/pg-requests', { config: { auth: 'project', scope: 'receipt' } }, async (request) => {
    const { receiptId } = parsePgRequestsQuery(request.query);
    return { list: await escrow.pgRequests(request.project, receiptId) };
  });
}

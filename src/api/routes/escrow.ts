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
      schema: {
        summary: 'Escrow shipping start',
        description:
          'Registers carrier and tracking number with the escrow PG and moves escrow_data.status from 0 to 3. Checks in ' +
          'order: 2000, 2703, 2069, 2700 (also a repeated call), 2706, 2707, 2702 (HTTP 404), then for sandbox_escrow_a ' +
          'the merchant registration (2708-2712) and the recipient after its fallbacks (2713-2716), then the PG (2701, ' +
          'HTTP 500, with pg_error_code). A PG that cannot be reached gives 9502 (HTTP 502) or 9504 (HTTP 504) with the ' +
          'receipt_id (9481, HTTP 503, while an upstream provider is down): send the same start again; the next one asks ' +
          'the PG first, so one registered under a lost answer is recorded, never sent twice. receipt_id / receipt_url ' +
          'in the body are ignored.',
        tags: ['escrow'],
      },
    },
    async (request) => escrow.shippingStart(request.project, request.params.receipt_id, request.body),
  );

  app.get<{ Params: { receipt_id: string } }>(
    '/v2/escrow/:receipt_id/events',
    {
      config: { auth: 'project', scope: 'receipt' },
      schema: {
        summary: 'Escrow events history',
        description:
          'Every event of the escrow order, oldest first: the transitions (applied) and the notifications recorded and ' +
          'ignored (duplicates, events that did not fit the state), with their source (api, pg_notification, reconcile) and ' +
          'the ESCROW_STATUS_CHANGED webhook delivery each transition produced.',
        tags: ['escrow'],
      },
    },
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
      {
        config: { auth: 'none' },
        schema: {
          summary: 'Escrow PG notification (called by the PG)',
          description: "A buyer's event on an escrow order, signed by the PG; it is signalled to the order's workflow.",
          tags: ['escrow'],
        },
      },
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
      schema: {
        summary: 'Make a sandbox payment',
        description:
          'Body {pg, price, order_id, order_name, tax_free?, escrow?, user?: {username, phone, email, address, zipcode}, ' +
          'metadata?}: the PG approves at once and the full receipt (status 1) is returned; with escrow: true it carries ' +
          'escrow_data.status 0 and, for sandbox_escrow_a / sandbox_escrow_b, the order starts its workflow. The buyer is ' +
          'stored sealed, for the recipient fallbacks of shipping start. Sandbox mode only.',
        tags: ['sandbox'],
      },
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
      schema: {
        summary: "Play the buyer's side of an escrow order",
        description:
          'Body {event: purchase_confirmed | purchase_rejected | rejection_approved | settlement_held, duplicate?}: the ' +
          "sandbox PG records the buyer's act and sends its signed notification to paygate (twice with duplicate: true), " +
          'which moves the order. 202. Sandbox mode only.',
        tags: ['sandbox'],
      },
    },
    async (request, reply) => {
      const sent = await escrow.buyerEvent(request.project, request.params.receipt_id, request.body);
      return reply.code(202).send(sent);
    },
  );

  app.get(
    '/sandbox/v1/pg-requests',
    {
      config: { auth: 'project', scope: 'receipt' },
      schema: {
        summary: 'What the sandbox PG received for a payment',
        description:
          'Every request the sandbox PGs received for the receipt (payment, shipping start, status inquiries), newest first.',
        tags: ['sandbox'],
      },
    },
    async (request) => {
      const { receiptId } = parsePgRequestsQuery(request.query);
      return { list: await escrow.pgRequests(request.project, receiptId) };
    },
  );
}

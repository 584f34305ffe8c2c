// POST /v2/cancel: full or partial refund of a payment receipt, recorded on the receipt.
import type { FastifyInstance } from 'fastify';
import { parseCancelRequest } from '../../payments/receipt-rules.js';
import { createIdempotencyHooks } from '../idempotency.js';

export async function cancelRoutes(app: FastifyInstance): Promise<void> {
  const idempotency = createIdempotencyHooks({
    idempotency: app.deps.stores.idempotency,
    clock: app.deps.clock,
    keyring: app.deps.keyring,
  });

  app.post(
    '/v2/cancel',
    {
      config: { auth: 'project', scope: 'cancel' },
      preHandler: idempotency.preHandler,
      onSend: idempotency.onSend,
      schema: {
        summary: 'Cancel (refund) a payment, fully or partly',
        description:
          'cancel_price omitted = everything that remains; more than remains -> 9424. A repeated cancel_id returns the ' +
          'first result; the same cancel_id with a different cancel_price or cancel_tax_free -> 9422. Fully refunded receipts move to status 20 (결제취소완료); partial refunds keep status 1 and raise ' +
          "cancelled_price. Unknown receipt 2000, another project's 1225; 9409 while another cancel of the receipt is running.",
        tags: ['billing'],
      },
    },
    async (request) => app.deps.services.cancels.cancel(request.project, parseCancelRequest(request.body), request.log),
  );
}

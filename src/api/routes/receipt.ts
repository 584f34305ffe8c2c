// GET /v2/receipt/{receipt_id}: a payment receipt of the authenticated project.
import type { FastifyInstance } from 'fastify';

export async function receiptRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { receipt_id: string } }>(
    '/v2/receipt/:receipt_id',
    {
      config: { auth: 'project', scope: 'receipt' },
      schema: {
        summary: 'Payment receipt lookup',
        description: "Another project's receipt gives 1225 (APP_KEY_CHAIN_SESSION_INVALID); an unknown one 2000.",
        tags: ['billing'],
      },
    },
    async (request) => app.deps.services.receipts.lookup(request.project, request.params.receipt_id),
  );
}

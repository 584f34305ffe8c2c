// GET /v2/receipt/{receipt_id}: a payment receipt of the authenticated project.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../domain/errors.js';
import { isResourceId, renderReceipt, type ReceiptResponse } from '../../domain/receipt.js';
import type { Project } from '../../store/projects.js';
import { findReceipt, receiptView, type ReceiptRow } from '../../store/receipts.js';
import { assertOwnedBy } from '../auth.js';

/** Gateways whose name starts with this play PGs; their receipts say sandbox: true. */
const SANDBOX_PG_PREFIX = 'sandbox_';

/** The receipt as every billing route returns it. */
export function receiptResponse(row: ReceiptRow, project: Project): ReceiptResponse {
  return renderReceipt(
    receiptView(row, { sandbox: row.pg.startsWith(SANDBOX_PG_PREFIX), companyName: project.merchant.company_name }),
  );
}

export async function receiptRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { receipt_id: string } }>(
    '/v2/receipt/:receipt_id',
    {
      config: { auth: 'project' },
      schema: {
        summary: 'Payment receipt lookup',
        description: "Another project's receipt gives 1225 (APP_KEY_CHAIN_SESSION_INVALID); an unknown one 2000.",
        tags: ['billing'],
      },
    },
    async (request) => {
      const receiptId = request.params.receipt_id;
      if (!isResourceId(receiptId)) throw new ApiError('RC_NOT_FOUND');
      const row = await findReceipt(app.deps.database.db, receiptId);
      if (!row) throw new ApiError('RC_NOT_FOUND');
      assertOwnedBy(request.project, row.application_id);
      return receiptResponse(row, request.project);
    },
  );
}

// Payment receipts as every billing operation returns them, and the receipt lookup.
import { assertOwnedBy } from '../domain/access.js';
import { ApiError } from '../domain/errors.js';
import { renderEscrowData } from '../domain/escrow.js';
import { isResourceId, renderReceipt, type ReceiptResponse } from '../domain/receipt.js';
import type { EscrowOrderRow } from '../store/escrow.js';
import type { Project } from '../store/projects.js';
import { receiptView, type ReceiptRow } from '../store/receipts.js';
import type { Stores } from '../store/index.js';

/** Gateways whose name starts with this play PGs; their receipts say sandbox: true. */
const SANDBOX_PG_PREFIX = 'sandbox_';

/** The receipt as every billing operation returns it. */
export function receiptResponse(row: ReceiptRow, project: Project): ReceiptResponse {
  return renderReceipt(
    receiptView(row, { sandbox: row.pg.startsWith(SANDBOX_PG_PREFIX), companyName: project.merchant.company_name }),
  );
}

/** An escrow payment's receipt carries escrow_data; any other receipt is returned as it is. */
export function withEscrowData(receipt: ReceiptResponse, order: EscrowOrderRow | undefined): ReceiptResponse {
  if (!order) return receipt;
  return {
    ...receipt,
    escrow_data: renderEscrowData({
      status: order.status,
      shippingStartedAt: order.shipping_started_at,
      receiptConfirmedAt: order.receipt_confirmed_at,
      receiptRevokedAt: order.receipt_revoked_at,
      confirmUrl: order.confirm_url,
    }),
  };
}

export interface ReceiptService {
  /** A payment receipt of `project`: 2000 unknown, 1225 another project's. */
  lookup(project: Project, receiptId: string): Promise<ReceiptResponse>;
  /** The project's receipts newest first (the dashboard); `search` is an order_id or a receipt_id. */
  list(project: Project, q: { search?: string; limit: number }): Promise<ReceiptResponse[]>;
}

export function createReceiptService({ stores }: { readonly stores: Pick<Stores, 'receipts' | 'escrow'> }): ReceiptService {
  return {
    async lookup(project, receiptId) {
      if (!isResourceId(receiptId)) throw new ApiError('RC_NOT_FOUND');
      const row = await stores.receipts.find(receiptId);
      if (!row) throw new ApiError('RC_NOT_FOUND');
      assertOwnedBy(project, row.application_id);
      return withEscrowData(receiptResponse(row, project), await stores.escrow.find(receiptId));
    },

    async list(project, q) {
      const rows = await stores.receipts.listOf(project.application_id, q);
      return rows.map((row) => receiptResponse(row, project));
    },
  };
}

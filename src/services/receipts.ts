// Payment receipts as every billing operation returns them, and the receipt lookup.
import { assertOwnedBy } from '../domain/access.js';
import { ApiError } from '../domain/errors.js';
import { isResourceId, renderReceipt, type ReceiptResponse } from '../domain/receipt.js';
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

export interface ReceiptService {
  /** A payment receipt of `project`: 2000 unknown, 1225 another project's. */
  lookup(project: Project, receiptId: string): Promise<ReceiptResponse>;
}

export function createReceiptService({ stores }: { readonly stores: Pick<Stores, 'receipts'> }): ReceiptService {
  return {
    async lookup(project, receiptId) {
      if (!isResourceId(receiptId)) throw new ApiError('RC_NOT_FOUND');
      const row = await stores.receipts.find(receiptId);
      if (!row) throw new ApiError('RC_NOT_FOUND');
      assertOwnedBy(project, row.application_id);
      return receiptResponse(row, project);
    },
  };
}

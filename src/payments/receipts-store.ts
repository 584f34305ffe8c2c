// Payment receipts and their cancels: the receipts store, put together from its statements grouped by what they
// serve (receipts-store-charges.ts, -cancels.ts, -reconcile.ts, -reads.ts; its types in receipts-store-types.ts).
import type { Kysely } from 'kysely';
import type { ReceiptView } from './receipt-rules.js';
import type { Tables } from '../platform/db/db.js';
import { receiptCancelQueries } from './receipts-store-cancels.js';
import { receiptChargeQueries } from './receipts-store-charges.js';
import { receiptReads } from './receipts-store-reads.js';
import { receiptReconcileQueries } from './receipts-store-reconcile.js';
import type { ReceiptRow, ReceiptStore } from './receipts-store-types.js';

export type { PendingCancel } from '../platform/db/migrations/0011_reconcile.js';
export type { NewCancel, NewCharge, OrderClaim, ReceiptRow, ReceiptStore, StoredCancel } from './receipts-store-types.js';

/**
 * The receipt_id the merchant sees and names: the upstream provider's for a relayed payment (unique at the provider
 * for the project's account only, so kept beside paygate's own id, which every internal reference uses), else
 * paygate's own.
 */
export const merchantReceiptId = (row: Pick<ReceiptRow, 'receipt_id' | 'provider_receipt_id'>): string =>
  row.provider_receipt_id ?? row.receipt_id;

export function createReceiptStore(db: Kysely<Tables>): ReceiptStore {
  return {
    ...receiptChargeQueries(db),
    ...receiptCancelQueries(db),
    ...receiptReconcileQueries(db),
    ...receiptReads(db),
  };
}

export function receiptView(row: ReceiptRow, extra: { sandbox: boolean; companyName?: string | undefined }): ReceiptView {
  const card =
    row.card_masked_number !== null && row.card_company !== null && row.card_company_code !== null && row.card_type !== null
      ? {
          maskedNumber: row.card_masked_number,
          cardCompany: row.card_company,
          cardCompanyCode: row.card_company_code,
          cardType: row.card_type === 'check' ? ('check' as const) : ('credit' as const),
        }
      : undefined;
  return {
    receiptId: merchantReceiptId(row),
    orderId: row.order_id,
    orderName: row.order_name,
    price: row.price,
    taxFree: row.tax_free,
    cancelledPrice: row.cancelled_price,
    cancelledTaxFree: row.cancelled_tax_free,
    status: row.status,
    pg: row.pg,
    method: row.method,
    methodSymbol: row.method_symbol,
    sandbox: extra.sandbox,
    requestedAt: row.requested_at,
    purchasedAt: row.purchased_at ?? undefined,
    cancelledAt: row.cancelled_at ?? undefined,
    card,
    cardQuota: row.card_quota,
    approvalNo: row.approval_no ?? undefined,
    metadata: row.metadata ?? undefined,
    companyName: extra.companyName,
  };
}

// The receipts store's reconcile statements: the pending charges and cancels whose owner is gone (the worker's sweep
// hands them to their reconcile workflows), and a refund an upstream provider made outside paygate.
import type { Kysely } from 'kysely';
import { PAYMENT_CANCELLED, PAYMENT_COMPLETE, PAYMENT_PENDING } from './receipt-rules.js';
import type { Tables } from '../platform/db/db.js';
import { receiptById } from './receipts-store-reads.js';
import type { ReceiptStore } from './receipts-store-types.js';

export function receiptReconcileQueries(
  db: Kysely<Tables>,
): Pick<ReceiptStore, 'orphanCharges' | 'orphanCancels' | 'applyProviderCancel'> {
  return {
    async orphanCharges(before, limit) {
      return db
        .selectFrom('receipts')
        .selectAll()
        .where('status', '=', PAYMENT_PENDING)
        .where((eb) => eb.or([eb('pg_call_until', 'is', null), eb('pg_call_until', '<', before)]))
        .orderBy('requested_at')
        .limit(limit)
        .execute();
    },

    async orphanCancels(before, limit) {
      return db
        .selectFrom('receipts')
        .selectAll()
        .where('cancel_pending', 'is not', null)
        .where((eb) => eb.or([eb('cancel_locked_until', 'is', null), eb('cancel_locked_until', '<', before)]))
        .limit(limit)
        .execute();
    },

    async applyProviderCancel(receiptId, state) {
      await db
        .updateTable('receipts')
        .set((eb) => ({
          cancelled_price: state.cancelledPrice,
          cancelled_tax_free: state.cancelledTaxFree,
          cancelled_at: state.cancelledAt,
          status: eb.case().when('price', '<=', state.cancelledPrice).then(PAYMENT_CANCELLED).else(eb.ref('status')).end(),
        }))
        .where('receipt_id', '=', receiptId)
        .where('status', '=', PAYMENT_COMPLETE)
        .where('cancelled_price', '<', state.cancelledPrice)
        // a cancel of ours that lost its answer may be what the provider shows: its reconcile records it (counted
        // here too, the refund would be recorded twice)
        .where('cancel_pending', 'is', null)
        .execute();
      return receiptById(db, receiptId).executeTakeFirst();
    },
  };
}

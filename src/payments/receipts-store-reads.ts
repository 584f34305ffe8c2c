// The receipts store's reads: a receipt by paygate's own id, by the id the merchant names, by its order_id, and a
// project's receipts for its list.
import { type ExpressionBuilder, sql, type Kysely } from 'kysely';
import type { Tables } from '../platform/db/db.js';
import type { ReceiptStore } from './receipts-store-types.js';

/** The receipt of paygate's own id, as a query to execute. */
export const receiptById = (db: Kysely<Tables>, receiptId: string) =>
  db.selectFrom('receipts').selectAll().where('receipt_id', '=', receiptId);

/** rows the merchant names `receiptId`: a relayed one by the provider's id, any other by its own */
// the provider's id, or paygate's own: a relayed charge's answer while it was pending named its own id, which keeps
// finding it once completed (findNamed prefers a provider id when both match)
const named = (eb: ExpressionBuilder<Tables, 'receipts'>, receiptId: string) =>
  eb.or([eb('provider_receipt_id', '=', receiptId), eb('receipt_id', '=', receiptId)]);

export function receiptReads(db: Kysely<Tables>): Pick<ReceiptStore, 'find' | 'findNamed' | 'findByOrder' | 'listOf'> {
  return {
    async find(receiptId) {
      return receiptById(db, receiptId).executeTakeFirst();
    },
    async findNamed(applicationId, receiptId) {
      return db
        .selectFrom('receipts')
        .selectAll()
        .where((eb) => named(eb, receiptId))
        .orderBy(sql`application_id = ${applicationId}`, 'desc')
        .orderBy(sql`provider_receipt_id is not distinct from ${receiptId}`, 'desc')
        .limit(1)
        .executeTakeFirst();
    },
    async findByOrder(applicationId, orderId) {
      return db
        .selectFrom('receipts')
        .selectAll()
        .where('application_id', '=', applicationId)
        .where('order_id', '=', orderId)
        .executeTakeFirst();
    },

    async listOf(applicationId, q) {
      let query = db.selectFrom('receipts').selectAll().where('application_id', '=', applicationId);
      const search = q.search;
      if (search !== undefined) query = query.where((eb) => eb.or([eb('order_id', '=', search), named(eb, search)]));
      return query.orderBy('requested_at', 'desc').orderBy('receipt_id', 'desc').limit(q.limit).execute();
    },
  };
}

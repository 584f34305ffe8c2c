// The receipts store's charge statements: the order_id claimed with a pending receipt before the PG is called, its
// re-drive, its drop when the PG refused or never executed it, and the PG's approval recorded.
import type { ChargeApproval } from '../gateways/rules.js';
import { transactionally } from '../platform/db/transaction.js';
import { type InsertObject, sql, type Kysely } from 'kysely';
import { PAYMENT_COMPLETE, PAYMENT_PENDING, type ReceiptAttention } from './receipt-rules.js';
import { formatTimestamp } from '../platform/time.js';
import type { Tables } from '../platform/db/db.js';
import { receiptById } from './receipts-store-reads.js';
import type { NewCharge, ReceiptStore } from './receipts-store-types.js';

/** The pending receipt (status 0) a charge claims its order_id with, under the order_id's next PG key attempt. */
function pendingReceipt(charge: NewCharge): InsertObject<Tables, 'receipts'> {
  return {
    receipt_id: charge.receiptId,
    application_id: charge.applicationId,
    order_id: charge.orderId,
    order_name: charge.orderName,
    billing_key: charge.billingKey,
    charge_hash: charge.chargeHash,
    pg: charge.pg,
    method: charge.method,
    method_symbol: charge.methodSymbol,
    price: charge.price,
    tax_free: charge.taxFree,
    status: PAYMENT_PENDING,
    card_masked_number: null,
    card_company: null,
    card_company_code: null,
    card_type: null,
    card_quota: charge.quota,
    approval_no: null,
    gateway_tid: null,
    metadata: charge.metadata === undefined ? null : JSON.stringify(charge.metadata),
    requested_at: charge.requestedAt,
    purchased_at: null,
    cancelled_at: null,
    cancel_locked_until: null,
    pg_call_until: charge.callUntil,
    pg_key_attempt: sql<number>`coalesce((select declines from order_declines where application_id = ${charge.applicationId} and order_id = ${charge.orderId}), 0)`,
    feedback: charge.feedback ? JSON.stringify({ url: charge.feedback.url, content_type: charge.feedback.contentType }) : null,
    idempotency_key_mac: charge.idempotencyKeyMac ?? null,
    via_upstream: charge.viaUpstream ?? false,
  };
}

/** What the PG says happened, recorded as such; marked when it is not what was asked. */
function chargeCompletion(
  result: ChargeApproval,
  maskedNumber: string,
  reconciledAt: Date | undefined,
  fields: ReceiptAttention['fields'] | undefined,
) {
  const at = formatTimestamp(reconciledAt ?? result.approvedAt);
  return {
    status: PAYMENT_COMPLETE,
    card_masked_number: maskedNumber,
    card_company: result.card.cardCompany,
    card_company_code: result.card.cardCompanyCode,
    card_type: result.card.cardType,
    card_quota: result.quota,
    approval_no: result.approvalNo,
    gateway_tid: result.gatewayTid,
    purchased_at: result.approvedAt,
    pg_call_until: null,
    reconciled_at: reconciledAt ?? null,
    ...(result.disagreement ? { price: result.disagreement.price, tax_free: result.disagreement.taxFree } : {}),
    ...(fields
      ? { attention: JSON.stringify({ kind: 'answer_mismatch', operation: 'charge', at, fields } satisfies ReceiptAttention) }
      : {}),
  };
}

export function receiptChargeQueries(
  db: Kysely<Tables>,
): Pick<ReceiptStore, 'claimOrder' | 'redriveCharge' | 'declinePendingCharge' | 'dropUnexecutedCharge' | 'completeCharge'> {
  return {
    async claimOrder(charge) {
      const inserted = await db
        .insertInto('receipts')
        .values(pendingReceipt(charge))
        .onConflict((oc) => oc.columns(['application_id', 'order_id']).doNothing())
        .returning(['receipt_id', 'pg_key_attempt'])
        .executeTakeFirst();
      if (inserted) return { kind: 'claimed', receiptId: inserted.receipt_id, keyAttempt: inserted.pg_key_attempt };
      const row = await db
        .selectFrom('receipts')
        .selectAll()
        .where('application_id', '=', charge.applicationId)
        .where('order_id', '=', charge.orderId)
        .executeTakeFirstOrThrow();
      return { kind: 'taken', row };
    },

    async redriveCharge(receiptId, until) {
      return db
        .updateTable('receipts')
        .set({ pg_call_until: until })
        .where('receipt_id', '=', receiptId)
        .where('status', '=', PAYMENT_PENDING)
        .returningAll()
        .executeTakeFirst();
    },

    async declinePendingCharge(receiptId) {
      await transactionally(db, async (trx) => {
        const dropped = await trx
          .deleteFrom('receipts')
          .where('receipt_id', '=', receiptId)
          .where('status', '=', PAYMENT_PENDING)
          .returning(['application_id', 'order_id', 'pg_key_attempt'])
          .executeTakeFirst();
        if (!dropped) return;
        await trx
          .insertInto('order_declines')
          .values({ application_id: dropped.application_id, order_id: dropped.order_id, declines: dropped.pg_key_attempt + 1 })
          .onConflict((oc) =>
            oc
              .columns(['application_id', 'order_id'])
              .doUpdateSet({ declines: sql<number>`greatest(order_declines.declines, excluded.declines)` }),
          )
          .execute();
      });
    },

    async dropUnexecutedCharge(receiptId, now) {
      const dropped = await db
        .deleteFrom('receipts')
        .where('receipt_id', '=', receiptId)
        .where('status', '=', PAYMENT_PENDING)
        .where((eb) => eb.or([eb('pg_call_until', 'is', null), eb('pg_call_until', '<=', now)]))
        .returning('receipt_id')
        .executeTakeFirst();
      return dropped !== undefined;
    },

    async completeCharge(receiptId, result, maskedNumber, reconciledAt) {
      const providerReceiptId = result.receiptId;
      const updated = await db
        .updateTable('receipts')
        .set({
          // an upstream provider's receipt_id is kept beside the id the pending receipt was claimed under, which stays
          // the receipt's own: the provider's is unique only at the provider, for this project's account there
          ...(providerReceiptId !== undefined ? { provider_receipt_id: providerReceiptId } : {}),
          ...chargeCompletion(result, maskedNumber, reconciledAt, result.disagreement?.fields),
        })
        .where('receipt_id', '=', receiptId)
        .where('status', '=', PAYMENT_PENDING)
        .where((eb) =>
          providerReceiptId === undefined
            ? eb.val(true)
            : eb.not(
                eb.exists(
                  eb
                    .selectFrom('receipts as taken')
                    .select('taken.receipt_id')
                    .whereRef('taken.application_id', '=', 'receipts.application_id')
                    .where('taken.provider_receipt_id', '=', providerReceiptId),
                ),
              ),
        )
        .returningAll()
        .executeTakeFirst();
      if (updated) return updated;
      const row = await receiptById(db, receiptId).executeTakeFirstOrThrow();
      if (row.status !== PAYMENT_PENDING || providerReceiptId === undefined) return row;
      // The provider answered with a receipt_id another payment of this project already has: it says it charged, so
      // the charge is recorded (under paygate's own id, the first receipt untouched) and marked, and its reconcile ends
      const repeated = await db
        .updateTable('receipts')
        .set(
          chargeCompletion(result, maskedNumber, reconciledAt, {
            ...result.disagreement?.fields,
            receipt_id: { asked: 'a receipt_id of its own', answered: providerReceiptId },
          }),
        )
        .where('receipt_id', '=', receiptId)
        .where('status', '=', PAYMENT_PENDING)
        .returningAll()
        .executeTakeFirst();
      return repeated ?? receiptById(db, receiptId).executeTakeFirstOrThrow();
    },
  };
}

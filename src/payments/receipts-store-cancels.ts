// The receipts store's cancel statements: the receipt's cancel lease, the cancel pending at the PG under it, and the
// recorded cancels (a cancel applied to its receipt in the same statement).
import { sql, type Kysely } from 'kysely';
import { PAYMENT_CANCELLED } from './receipt-rules.js';
import type { Tables } from '../platform/db/db.js';
import type { NewCancel, ReceiptRow, ReceiptStore } from './receipts-store-types.js';

export function receiptCancelQueries(
  db: Kysely<Tables>,
): Pick<
  ReceiptStore,
  'acquireCancelLease' | 'acquireCancelLeaseNoted' | 'releaseCancelLease' | 'markCancelPending' | 'findCancel' | 'recordCancel'
> {
  return {
    async acquireCancelLease(receiptId, now, until, sameCancelKey) {
      return (
        db
          .updateTable('receipts')
          .set({ cancel_locked_until: until })
          .where('receipt_id', '=', receiptId)
          // a cancel the PG may have made is settled before any other starts: by its reconcile workflow, or by
          // a retry of the same cancel, lease or not (the same PG key, which the PG answers without refunding twice)
          .where((eb) => {
            const free = eb.and([
              eb.or([eb('cancel_locked_until', 'is', null), eb('cancel_locked_until', '<=', now)]),
              eb('cancel_pending', 'is', null),
            ]);
            return sameCancelKey === undefined
              ? free
              : eb.or([free, eb(sql<string>`cancel_pending->>'pg_key'`, '=', sameCancelKey)]);
          })
          .returningAll()
          .executeTakeFirst()
      );
    },

    async acquireCancelLeaseNoted(read, pending, now, until) {
      return (
        db
          .updateTable('receipts')
          .set({ cancel_locked_until: until, cancel_pending: JSON.stringify(pending) })
          .where('receipt_id', '=', read.receipt_id)
          .where('cancel_pending', 'is', null)
          .where((eb) => eb.or([eb('cancel_locked_until', 'is', null), eb('cancel_locked_until', '<=', now)]))
          // the cancel was planned from these: a cancel recorded since (which always moves cancelled_price) or a
          // status that moved sends it back to be planned again under the lease
          .where('status', '=', read.status)
          .where('cancelled_price', '=', read.cancelled_price)
          .where('cancelled_tax_free', '=', read.cancelled_tax_free)
          .returningAll()
          .executeTakeFirst()
      );
    },

    async releaseCancelLease(receiptId, cancelKey) {
      let update = db
        .updateTable('receipts')
        .set({ cancel_locked_until: null, cancel_pending: null })
        .where('receipt_id', '=', receiptId);
      if (cancelKey !== undefined) update = update.where(sql<string>`cancel_pending->>'cancel_key'`, '=', cancelKey);
      await update.execute();
    },

    async markCancelPending(receiptId, pending, replacing) {
      const marked = await db
        .updateTable('receipts')
        .set({ cancel_pending: JSON.stringify(pending) })
        .where('receipt_id', '=', receiptId)
        .where(
          replacing === null ? sql<boolean>`cancel_pending is null` : sql<boolean>`cancel_pending->>'cancel_key' = ${replacing}`,
        )
        .executeTakeFirst();
      return marked.numUpdatedRows > 0n;
    },

    async findCancel(receiptId, cancelId) {
      const row = await db
        .selectFrom('receipt_cancels')
        .select(['amount', 'tax_free', 'response'])
        .where('receipt_id', '=', receiptId)
        .where('cancel_id', '=', cancelId)
        .executeTakeFirst();
      if (!row) return undefined;
      // the response shows the receipt just after this cancel; minus this cancel, it is the state it started from
      const amount = Number(row.amount);
      const taxFree = Number(row.tax_free);
      return {
        amount,
        taxFree,
        cancelledPriceBefore: Number(row.response.cancelled_price) - amount,
        cancelledTaxFreeBefore: Number(row.response.cancelled_tax_free) - taxFree,
        response: row.response,
      };
    },

    recordCancel: (cancel, render) => recordCancel(db, cancel, render),
  };
}

/** ReceiptStore.recordCancel: the receipt's update and the cancel's record in one statement. */
async function recordCancel(
  db: Kysely<Tables>,
  cancel: NewCancel,
  render: (updated: ReceiptRow) => Record<string, unknown>,
): Promise<Record<string, unknown> | undefined> {
  const { receipt, plan } = cancel;
  const applied = {
    cancelled_price: receipt.cancelled_price + plan.amount,
    cancelled_tax_free: receipt.cancelled_tax_free + plan.taxFree,
    cancelled_at: cancel.cancelledAt,
    status: plan.fullyCancelled ? PAYMENT_CANCELLED : receipt.status,
    cancel_locked_until: null,
    cancel_pending: null,
  };
  // One statement, not a transaction (two round trips fewer per cancel): the receipt's update and the cancel's
  // record, with the response rendered from the receipt as the update leaves it. Under the lease nothing else
  // writes the receipt, so that is `receipt` with the cancel applied; the update's own row is compared below.
  const response = render({ ...receipt, ...applied });
  const updated = await db
    .with('updated', (qb) =>
      qb
        .updateTable('receipts')
        .set(applied)
        .where('receipt_id', '=', receipt.receipt_id)
        .where(sql<string>`cancel_pending->>'cancel_key'`, '=', cancel.cancelKey)
        .returningAll(),
    )
    .with('recorded', (qb) =>
      qb
        .insertInto('receipt_cancels')
        .columns([
          'cancel_key',
          'receipt_id',
          'cancel_id',
          'amount',
          'tax_free',
          'gateway_cancel_tid',
          'cancelled_at',
          'response',
        ])
        .expression((eb) =>
          eb
            .selectFrom('updated')
            // typed: a parameter in a select list has no column to take its type from
            .select([
              sql<string>`${cancel.cancelKey}::text`.as('cancel_key'),
              'updated.receipt_id',
              sql<string | null>`${cancel.cancelId ?? null}::text`.as('cancel_id'),
              sql<number>`${plan.amount}::bigint`.as('amount'),
              sql<number>`${plan.taxFree}::bigint`.as('tax_free'),
              sql<string>`${cancel.gatewayCancelTid}::text`.as('gateway_cancel_tid'),
              sql<Date>`${cancel.cancelledAt}::timestamptz`.as('cancelled_at'),
              sql<string>`${JSON.stringify(response)}::jsonb`.as('response'),
            ]),
        ),
    )
    .selectFrom('updated')
    .selectAll()
    .executeTakeFirst();
  if (!updated) return undefined;
  // a column the cancel does not touch moved after the lease was taken: record what the receipt really shows
  const actual = render(updated);
  if (JSON.stringify(actual) !== JSON.stringify(response)) {
    await db
      .updateTable('receipt_cancels')
      .set({ response: JSON.stringify(actual) })
      .where('cancel_key', '=', cancel.cancelKey)
      .execute();
    return actual;
  }
  return response;
}

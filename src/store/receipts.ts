// Payment receipts and their cancels.
import type { Kysely, Selectable } from 'kysely';
import {
  PAYMENT_CANCELLED,
  PAYMENT_COMPLETE,
  PAYMENT_PENDING,
  type CancelPlan,
  type ChargeApproval,
  type ReceiptView,
  type RecordedCancel,
} from '../domain/receipt.js';
import type { Tables } from './db.js';
import type { ReceiptsTable } from './migrations/0002_billing.js';

export type ReceiptRow = Selectable<ReceiptsTable>;

export interface NewCharge {
  readonly receiptId: string;
  readonly applicationId: string;
  readonly orderId: string;
  readonly orderName: string;
  readonly billingKey: string;
  readonly chargeHash: string;
  readonly pg: string;
  readonly method: string;
  readonly methodSymbol: string;
  readonly price: number;
  readonly taxFree: number;
  readonly quota: number;
  readonly metadata: Record<string, unknown> | undefined;
  readonly requestedAt: Date;
}

export type OrderClaim =
  | { readonly kind: 'claimed'; readonly receiptId: string }
  | { readonly kind: 'taken'; readonly row: ReceiptRow };

export interface ReceiptStore {
  /**
   * Claims the order_id for a charge with a pending receipt (status 0) before the PG is called.
   * When the order_id is already used, returns that receipt: the caller re-drives a pending one with
   * the same charge_hash (a retry after a PG timeout) and refuses everything else.
   */
  claimOrder(charge: NewCharge): Promise<OrderClaim>;
  /** Drops a pending receipt the PG refused, so the order_id is free again. */
  deletePendingCharge(receiptId: string): Promise<void>;
  /**
   * Records the PG's approval: status 1 with the masked card and approval details. A concurrent
   * re-drive of the same charge may have recorded it first; then its row is returned as it is.
   */
  completeCharge(receiptId: string, result: ChargeApproval, maskedNumber: string): Promise<ReceiptRow>;
  /** Any project's receipt: callers check ownership (1225) with the row's application_id. */
  find(receiptId: string): Promise<ReceiptRow | undefined>;
  /** The project's receipts newest first, at most `limit`; `search` matches an order_id or a receipt_id exactly. */
  listOf(applicationId: string, q: { search?: string; limit: number }): Promise<ReceiptRow[]>;
  /**
   * Takes the receipt's cancel lease until `until`, so two cancels cannot refund the same won while
   * one waits for the PG. Returns the receipt as of taking the lease, or undefined when another
   * cancel holds it.
   */
  acquireCancelLease(receiptId: string, now: Date, until: Date): Promise<ReceiptRow | undefined>;
  releaseCancelLease(receiptId: string): Promise<void>;
  /** The first cancel of a cancel_id on this receipt: what it refunded, from what, and its stored response. */
  findCancel(receiptId: string, cancelId: string): Promise<StoredCancel | undefined>;
  /**
   * In one transaction: applies a cancel to the receipt (status 20 when nothing remains, lease
   * released) and records it with the response `render` makes of the updated receipt.
   */
  recordCancel(cancel: NewCancel, render: (updated: ReceiptRow) => Record<string, unknown>): Promise<Record<string, unknown>>;
}

export interface StoredCancel extends RecordedCancel {
  readonly response: Record<string, unknown>;
}

export interface NewCancel {
  readonly cancelKey: string;
  readonly receipt: ReceiptRow;
  readonly cancelId: string | undefined;
  readonly plan: CancelPlan;
  readonly gatewayCancelTid: string;
  readonly cancelledAt: Date;
}

export function createReceiptStore(db: Kysely<Tables>): ReceiptStore {
  const byId = (receiptId: string) => db.selectFrom('receipts').selectAll().where('receipt_id', '=', receiptId);
  return {
    async claimOrder(charge) {
      const inserted = await db
        .insertInto('receipts')
        .values({
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
        })
        .onConflict((oc) => oc.columns(['application_id', 'order_id']).doNothing())
        .returning('receipt_id')
        .executeTakeFirst();
      if (inserted) return { kind: 'claimed', receiptId: inserted.receipt_id };
      const row = await db
        .selectFrom('receipts')
        .selectAll()
        .where('application_id', '=', charge.applicationId)
        .where('order_id', '=', charge.orderId)
        .executeTakeFirstOrThrow();
      return { kind: 'taken', row };
    },

    async deletePendingCharge(receiptId) {
      await db.deleteFrom('receipts').where('receipt_id', '=', receiptId).where('status', '=', PAYMENT_PENDING).execute();
    },

    async completeCharge(receiptId, result, maskedNumber) {
      const updated = await db
        .updateTable('receipts')
        .set({
          status: PAYMENT_COMPLETE,
          card_masked_number: maskedNumber,
          card_company: result.card.cardCompany,
          card_company_code: result.card.cardCompanyCode,
          card_type: result.card.cardType,
          card_quota: result.quota,
          approval_no: result.approvalNo,
          gateway_tid: result.gatewayTid,
          purchased_at: result.approvedAt,
        })
        .where('receipt_id', '=', receiptId)
        .where('status', '=', PAYMENT_PENDING)
        .returningAll()
        .executeTakeFirst();
      return updated ?? byId(receiptId).executeTakeFirstOrThrow();
    },

    async find(receiptId) {
      return byId(receiptId).executeTakeFirst();
    },

    async listOf(applicationId, q) {
      let query = db.selectFrom('receipts').selectAll().where('application_id', '=', applicationId);
      const search = q.search;
      if (search !== undefined) query = query.where((eb) => eb.or([eb('order_id', '=', search), eb('receipt_id', '=', search)]));
      return query.orderBy('requested_at', 'desc').orderBy('receipt_id', 'desc').limit(q.limit).execute();
    },

    async acquireCancelLease(receiptId, now, until) {
      return db
        .updateTable('receipts')
        .set({ cancel_locked_until: until })
        .where('receipt_id', '=', receiptId)
        .where((eb) => eb.or([eb('cancel_locked_until', 'is', null), eb('cancel_locked_until', '<=', now)]))
        .returningAll()
        .executeTakeFirst();
    },

    async releaseCancelLease(receiptId) {
      await db.updateTable('receipts').set({ cancel_locked_until: null }).where('receipt_id', '=', receiptId).execute();
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

    async recordCancel(cancel, render) {
      const { receipt, plan } = cancel;
      return db.transaction().execute(async (trx) => {
        const updated = await trx
          .updateTable('receipts')
          .set({
            cancelled_price: receipt.cancelled_price + plan.amount,
            cancelled_tax_free: receipt.cancelled_tax_free + plan.taxFree,
            cancelled_at: cancel.cancelledAt,
            status: plan.fullyCancelled ? PAYMENT_CANCELLED : receipt.status,
            cancel_locked_until: null,
          })
          .where('receipt_id', '=', receipt.receipt_id)
          .returningAll()
          .executeTakeFirstOrThrow();
        const response = render(updated);
        await trx
          .insertInto('receipt_cancels')
          .values({
            cancel_key: cancel.cancelKey,
            receipt_id: receipt.receipt_id,
            cancel_id: cancel.cancelId ?? null,
            amount: plan.amount,
            tax_free: plan.taxFree,
            gateway_cancel_tid: cancel.gatewayCancelTid,
            cancelled_at: cancel.cancelledAt,
            response: JSON.stringify(response),
          })
          .execute();
        return response;
      });
    },
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
    receiptId: row.receipt_id,
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

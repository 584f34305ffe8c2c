// Payment receipts and their cancels.
import type { ChargeApproval } from '../gateways/rules.js';
import { transactionally } from '../platform/db/transaction.js';
import { type ExpressionBuilder, sql, type Kysely, type Selectable } from 'kysely';
import {
  PAYMENT_CANCELLED,
  PAYMENT_COMPLETE,
  PAYMENT_PENDING,
  type CancelPlan,
  type ReceiptView,
  type ReceiptAttention,
  type RecordedCancel,
} from './receipt-rules.js';
import { formatTimestamp } from '../platform/time.js';
import type { Tables } from '../platform/db/db.js';
import type { PendingCancel } from '../platform/db/migrations/0011_reconcile.js';

export type ReceiptRow = Selectable<Tables['receipts']>;
export type { PendingCancel };

/**
 * The receipt_id the merchant sees and names: the upstream provider's for a relayed payment (unique at the provider
 * for the project's account only, so kept beside paygate's own id, which every internal reference uses), else
 * paygate's own.
 */
export const merchantReceiptId = (row: Pick<ReceiptRow, 'receipt_id' | 'provider_receipt_id'>): string =>
  row.provider_receipt_id ?? row.receipt_id;

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
  /** the request calling the PG owns the charge until then */
  readonly callUntil: Date;
  readonly feedback?: { readonly url: string; readonly contentType: string } | undefined;
  /** the request's Idempotency-Key as a keyring MAC (IdempotencyKeyProof.mac), if it carried one */
  readonly idempotencyKeyMac?: string | undefined;
  /** charged at the project's upstream provider: the receipt takes the provider's receipt_id once it answers */
  readonly viaUpstream?: boolean;
}

export type OrderClaim =
  | { readonly kind: 'claimed'; readonly receiptId: string; readonly keyAttempt: number }
  | { readonly kind: 'taken'; readonly row: ReceiptRow };

export interface ReceiptStore {
  /**
   * Claims the order_id for a charge with a pending receipt (status 0) before the PG is called.
   * When the order_id is already used, returns that receipt: the caller re-drives a pending one with
   * the same charge_hash (a retry after a PG timeout) and refuses everything else.
   */
  claimOrder(charge: NewCharge): Promise<OrderClaim>;
  /** A request re-driving a pending charge owns its PG call until `until`; undefined when it is no longer pending. */
  redriveCharge(receiptId: string, until: Date): Promise<ReceiptRow | undefined>;
  /**
   * Drops a pending receipt the PG refused, so the order_id is free again; the order_id's next attempt
   * gets the next PG key (the PG keeps the refusal under the old one).
   */
  declinePendingCharge(receiptId: string): Promise<void>;
  /**
   * Drops a pending receipt the PG never executed (its inquiry says so), unless a request took the call
   * again after `now`. Returns whether it was dropped.
   */
  dropUnexecutedCharge(receiptId: string, now: Date): Promise<boolean>;
  /**
   * Records the PG's approval: status 1 with the masked card and approval details. A concurrent
   * re-drive of the same charge may have recorded it first; then its row is returned as it is. An upstream
   * provider's receipt_id that another receipt of the project already has (the provider repeated itself) is not
   * taken: the charge is recorded under its own id and marked for attention (receipt_id: what the provider answered),
   * the other receipt untouched. What the PG says it charged where it disagrees with the request
   * (`result.disagreement`) is recorded as such, and marked.
   * `reconciledAt`: recorded by a reconcile workflow, not by the request.
   */
  completeCharge(receiptId: string, result: ChargeApproval, maskedNumber: string, reconciledAt?: Date): Promise<ReceiptRow>;
  /** Pending charges whose owner is gone (call window ended before `before`), oldest first. */
  orphanCharges(before: Date, limit: number): Promise<ReceiptRow[]>;
  /** Receipts with a cancel whose answer is not recorded and whose lease ended before `before`. */
  orphanCancels(before: Date, limit: number): Promise<ReceiptRow[]>;
  /** By paygate's own id (internal references: cancels, escrow orders, workflows, reconcile). */
  find(receiptId: string): Promise<ReceiptRow | undefined>;
  /**
   * By the receipt_id the merchant names (`merchantReceiptId`): the project's receipt of that id, else any project's
   * (callers check ownership, 1225, with the row's application_id, as for an id that names one receipt only).
   */
  findNamed(applicationId: string, receiptId: string): Promise<ReceiptRow | undefined>;
  /**
   * A refund an upstream provider made outside paygate (its console, another integration), as its receipt shows it:
   * the cancelled amounts move up to the provider's, never down, and not while a cancel of ours is pending (its
   * reconcile records it); the receipt as it is afterwards.
   */
  applyProviderCancel(
    receiptId: string,
    state: { readonly cancelledPrice: number; readonly cancelledTaxFree: number; readonly cancelledAt: Date },
  ): Promise<ReceiptRow | undefined>;
  /** The project's receipt of `orderId`, whatever its status (order_id is unique per project). */
  findByOrder(applicationId: string, orderId: string): Promise<ReceiptRow | undefined>;
  /** The project's receipts newest first, at most `limit`; `search` matches an order_id or a receipt_id exactly. */
  listOf(applicationId: string, q: { search?: string; limit: number }): Promise<ReceiptRow[]>;
  /**
   * Takes the receipt's cancel lease until `until`, so two cancels cannot refund the same won while
   * one waits for the PG. Returns the receipt as of taking the lease, or undefined when another
   * cancel holds it.
   */
  acquireCancelLease(receiptId: string, now: Date, until: Date, sameCancelKey?: string): Promise<ReceiptRow | undefined>;
  /**
   * Releases the lease and forgets a pending cancel: the PG did not make it. With `cancelKey`, only while
   * that cancel is the pending one (a retry may have taken it over).
   */
  releaseCancelLease(receiptId: string, cancelKey?: string): Promise<void>;
  /**
   * Notes the cancel about to be sent to the PG (under the held lease), for its reconcile workflow, only while the
   * pending cancel is still `replacing` (its cancel_key, or null for none): false when it was recorded or taken over
   * since the lease was acquired, and the receipt has moved on.
   */
  markCancelPending(receiptId: string, pending: PendingCancel, replacing: string | null): Promise<boolean>;
  /** The first cancel of a cancel_id on this receipt: what it refunded, from what, and its stored response. */
  findCancel(receiptId: string, cancelId: string): Promise<StoredCancel | undefined>;
  /**
   * In one transaction: applies a cancel to the receipt (status 20 when nothing remains, lease
   * released) and records it with the response `render` makes of the updated receipt. Only while the
   * cancel is the receipt's pending one: undefined when another (a retry, its reconcile) recorded or took it.
   */
  recordCancel(
    cancel: NewCancel,
    render: (updated: ReceiptRow) => Record<string, unknown>,
  ): Promise<Record<string, unknown> | undefined>;
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
  /** rows the merchant names `receiptId`: a relayed one by the provider's id, any other by its own */
  // the provider's id, or paygate's own: a relayed charge's answer while it was pending named its own id, which keeps
  // finding it once completed (findNamed prefers a provider id when both match)
  const named = (eb: ExpressionBuilder<Tables, 'receipts'>, receiptId: string) =>
    eb.or([eb('provider_receipt_id', '=', receiptId), eb('receipt_id', '=', receiptId)]);
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
          pg_call_until: charge.callUntil,
          pg_key_attempt: sql<number>`coalesce((select declines from order_declines where application_id = ${charge.applicationId} and order_id = ${charge.orderId}), 0)`,
          feedback: charge.feedback
            ? JSON.stringify({ url: charge.feedback.url, content_type: charge.feedback.contentType })
            : null,
          idempotency_key_mac: charge.idempotencyKeyMac ?? null,
          via_upstream: charge.viaUpstream ?? false,
        })
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

    async completeCharge(receiptId, result, maskedNumber, reconciledAt) {
      const providerReceiptId = result.receiptId;
      const at = formatTimestamp(reconciledAt ?? result.approvedAt);
      /** What the PG says happened, recorded as such; marked when it is not what was asked. */
      const completion = (fields: ReceiptAttention['fields'] | undefined) => ({
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
      });
      const updated = await db
        .updateTable('receipts')
        .set({
          // an upstream provider's receipt_id is kept beside the id the pending receipt was claimed under, which stays
          // the receipt's own: the provider's is unique only at the provider, for this project's account there
          ...(providerReceiptId !== undefined ? { provider_receipt_id: providerReceiptId } : {}),
          ...completion(result.disagreement?.fields),
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
      const row = await byId(receiptId).executeTakeFirstOrThrow();
      if (row.status !== PAYMENT_PENDING || providerReceiptId === undefined) return row;
      // The provider answered with a receipt_id another payment of this project already has: it says it charged, so
      // the charge is recorded (under paygate's own id, the first receipt untouched) and marked, and its reconcile ends
      const repeated = await db
        .updateTable('receipts')
        .set(
          completion({
            ...result.disagreement?.fields,
            receipt_id: { asked: 'a receipt_id of its own', answered: providerReceiptId },
          }),
        )
        .where('receipt_id', '=', receiptId)
        .where('status', '=', PAYMENT_PENDING)
        .returningAll()
        .executeTakeFirst();
      return repeated ?? byId(receiptId).executeTakeFirstOrThrow();
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
      return byId(receiptId).executeTakeFirst();
    },

    async find(receiptId) {
      return byId(receiptId).executeTakeFirst();
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

    async recordCancel(cancel, render) {
      const { receipt, plan } = cancel;
      return transactionally(db, async (trx) => {
        const updated = await trx
          .updateTable('receipts')
          .set({
            cancelled_price: receipt.cancelled_price + plan.amount,
            cancelled_tax_free: receipt.cancelled_tax_free + plan.taxFree,
            cancelled_at: cancel.cancelledAt,
            status: plan.fullyCancelled ? PAYMENT_CANCELLED : receipt.status,
            cancel_locked_until: null,
            cancel_pending: null,
          })
          .where('receipt_id', '=', receipt.receipt_id)
          .where(sql<string>`cancel_pending->>'cancel_key'`, '=', cancel.cancelKey)
          .returningAll()
          .executeTakeFirst();
        if (!updated) return undefined;
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

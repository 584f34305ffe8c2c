// Escrow orders and their events history (its reads and late events in store-events.ts). A transition is recorded
// once per workflow sequence number and guarded by the status it leaves, so an activity retried after a crash changes
// nothing the second time.
import { transactionally } from '../platform/db/transaction.js';
import type { Kysely, Selectable } from 'kysely';
import type { EscrowTransition } from './contract.js';
import { EscrowStatus, type PaymentBuyer } from './rules.js';
import { PAYMENT_COMPLETE } from '../payments/receipt-rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type { EscrowEventsTable, EscrowOrdersTable } from '../platform/db/migrations/0007_escrow.js';
import type { ReceiptRow } from '../payments/index.js';
import { type EscrowEventHistory, escrowEventQueries } from './store-events.js';
import type { ShipmentTracking } from '../gateways/rules.js';

export type EscrowOrderRow = Selectable<EscrowOrdersTable>;
export type EscrowEventRow = Selectable<EscrowEventsTable>;

/** A payment the sandbox PG approved: a complete receipt, and an escrow order when it is one. */
export interface NewPayment {
  readonly receiptId: string;
  readonly applicationId: string;
  readonly orderId: string;
  readonly orderName: string;
  readonly pg: string;
  readonly price: number;
  readonly taxFree: number;
  readonly metadata: Record<string, unknown> | undefined;
  readonly gatewayTid: string;
  readonly approvalNo: string;
  readonly card: {
    readonly maskedNumber: string;
    readonly cardCompany: string;
    readonly cardCompanyCode: string;
    readonly cardType: string;
  };
  readonly requestedAt: Date;
  readonly purchasedAt: Date;
  /** the request's Idempotency-Key as a keyring MAC (IdempotencyKeyProof.mac), if it carried one */
  readonly idempotencyKeyMac?: string | undefined;
  /** present for an escrow payment; the buyer is sealed */
  readonly escrow?: { readonly buyer: PaymentBuyer | undefined };
  /** a payment made at the project's upstream provider */
  readonly viaUpstream?: boolean;
  /** the provider's receipt_id of it (what the merchant is shown), kept beside paygate's own `receiptId` */
  readonly providerReceiptId?: string | undefined;
}

export type RecordedTransition =
  | { readonly kind: 'applied'; readonly order: EscrowOrderRow; readonly event: EscrowEventRow }
  | { readonly kind: 'ignored' | 'already'; readonly order: EscrowOrderRow; readonly event: EscrowEventRow };

export interface EscrowStore extends EscrowEventHistory {
  /**
   * The receipt (and escrow order) in one transaction; undefined when the project already used the order_id (or has
   * a payment of the provider's receipt_id).
   */
  insertPayment(p: NewPayment): Promise<ReceiptRow | undefined>;
  find(receiptId: string): Promise<EscrowOrderRow | undefined>;
  /** The project's newest first, at most `limit` (the dashboard's lists). */
  listOf(applicationId: string, limit: number): Promise<EscrowOrderRow[]>;
  /** The project's receipt with this order_id, if any (checked before the PG is asked to pay). */
  orderReceipt(
    applicationId: string,
    orderId: string,
  ): Promise<{ readonly receipt_id: string; readonly idempotency_key_mac: string | null } | undefined>;
  openBuyer(row: EscrowOrderRow): PaymentBuyer;
  /**
   * Records one event of the order (seq from the workflow). With a toStatus it moves the order, guarded by
   * fromStatus; 'already' when this seq was recorded before (a retried activity).
   */
  record(t: EscrowTransition, tracking: ShipmentTracking | undefined, now: Date): Promise<RecordedTransition>;
}

const buyerContext = (receiptId: string) => `escrow:${receiptId}:buyer`;

/** EscrowStore.record: the event inserted once by its seq, and the order moved when it is a transition. */
async function recordTransition(
  db: Kysely<Tables>,
  t: EscrowTransition,
  tracking: ShipmentTracking | undefined,
  now: Date,
): Promise<RecordedTransition> {
  return transactionally(db, async (trx) => {
    const inserted = await trx
      .insertInto('escrow_events')
      .values({
        receipt_id: t.receiptId,
        seq: t.seq,
        event: t.event,
        source: t.source,
        from_status: t.fromStatus,
        to_status: t.toStatus ?? null,
        note: t.note ?? null,
        notification_id: t.notificationId ?? null,
        delivery_id: null,
        occurred_at: new Date(t.occurredAt),
        recorded_at: now,
      })
      .onConflict((oc) => oc.columns(['receipt_id', 'seq']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (!inserted) {
      const event = await trx
        .selectFrom('escrow_events')
        .selectAll()
        .where('receipt_id', '=', t.receiptId)
        .where('seq', '=', t.seq)
        .executeTakeFirstOrThrow();
      const order = await trx
        .selectFrom('escrow_orders')
        .selectAll()
        .where('receipt_id', '=', t.receiptId)
        .executeTakeFirstOrThrow();
      return { kind: 'already', order, event };
    }
    if (t.toStatus === undefined) {
      const order = await trx
        .updateTable('escrow_orders')
        .set({ last_seq: t.seq })
        .where('receipt_id', '=', t.receiptId)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { kind: 'ignored', order, event: inserted };
    }
    const at = new Date(t.occurredAt);
    const order = await trx
      .updateTable('escrow_orders')
      .set({
        status: t.toStatus,
        last_seq: t.seq,
        updated_at: now,
        ...(t.toStatus === EscrowStatus.ShippingStarted
          ? {
              shipping_started_at: at,
              confirm_url: t.confirmUrl ?? null,
              ...(tracking ? { tracking_number: tracking.trackingNumber, delivery_corp: tracking.deliveryCorp } : {}),
            }
          : {}),
        ...(t.toStatus === EscrowStatus.PurchaseConfirmed ? { receipt_confirmed_at: at } : {}),
        ...(t.toStatus === EscrowStatus.RejectionRequested ? { receipt_revoked_at: at } : {}),
      })
      .where('receipt_id', '=', t.receiptId)
      .where('status', '=', t.fromStatus)
      .returningAll()
      .executeTakeFirst();
    if (!order) throw new Error(`escrow ${t.receiptId} is not in status ${t.fromStatus}`);
    return { kind: 'applied', order, event: inserted };
  });
}

export function createEscrowStore(db: Kysely<Tables>, cipher: FieldCipher): EscrowStore {
  const byId = (receiptId: string) => db.selectFrom('escrow_orders').selectAll().where('receipt_id', '=', receiptId);
  return {
    ...escrowEventQueries(db),

    async insertPayment(p) {
      return transactionally(db, async (trx) => {
        const receipt = await trx
          .insertInto('receipts')
          .values({
            receipt_id: p.receiptId,
            application_id: p.applicationId,
            order_id: p.orderId,
            order_name: p.orderName,
            billing_key: null,
            idempotency_key_mac: p.idempotencyKeyMac ?? null,
            charge_hash: null,
            pg: p.pg,
            method: 'card',
            method_symbol: 'card',
            price: p.price,
            tax_free: p.taxFree,
            status: PAYMENT_COMPLETE,
            card_masked_number: p.card.maskedNumber,
            card_company: p.card.cardCompany,
            card_company_code: p.card.cardCompanyCode,
            card_type: p.card.cardType,
            card_quota: 0,
            approval_no: p.approvalNo,
            gateway_tid: p.gatewayTid,
            metadata: p.metadata === undefined ? null : JSON.stringify(p.metadata),
            requested_at: p.requestedAt,
            purchased_at: p.purchasedAt,
            cancelled_at: null,
            cancel_locked_until: null,
            via_upstream: p.viaUpstream ?? false,
            provider_receipt_id: p.providerReceiptId ?? null,
          })
          .onConflict((oc) => oc.doNothing())
          .returningAll()
          .executeTakeFirst();
        if (!receipt) return undefined;
        if (p.escrow) {
          const buyer = p.escrow.buyer;
          await trx
            .insertInto('escrow_orders')
            .values({
              receipt_id: p.receiptId,
              application_id: p.applicationId,
              pg: p.pg,
              status: EscrowStatus.Waiting,
              buyer_sealed: buyer === undefined ? null : cipher.seal(JSON.stringify(buyer), buyerContext(p.receiptId)),
              tracking_number: null,
              delivery_corp: null,
              shipping_started_at: null,
              receipt_confirmed_at: null,
              receipt_revoked_at: null,
              confirm_url: null,
              created_at: p.purchasedAt,
              updated_at: p.purchasedAt,
            })
            .execute();
        }
        return receipt;
      });
    },

    find: (receiptId) => byId(receiptId).executeTakeFirst(),
    listOf: (applicationId, limit) =>
      db
        .selectFrom('escrow_orders')
        .selectAll()
        .where('application_id', '=', applicationId)
        .orderBy('created_at', 'desc')
        .orderBy('receipt_id', 'desc')
        .limit(limit)
        .execute(),

    async orderReceipt(applicationId, orderId) {
      return db
        .selectFrom('receipts')
        .select(['receipt_id', 'idempotency_key_mac'])
        .where('application_id', '=', applicationId)
        .where('order_id', '=', orderId)
        .executeTakeFirst();
    },

    openBuyer(row) {
      if (row.buyer_sealed === null) return {};
      return JSON.parse(cipher.open(row.buyer_sealed, buyerContext(row.receipt_id))) as PaymentBuyer;
    },

    record: (t, tracking, now) => recordTransition(db, t, tracking, now),
  };
}

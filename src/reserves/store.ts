// Reserved charges. Every change is guarded by the status it leaves (reserved -> executing | revoked,
// executing -> paid | failed), so an activity run again after a crash changes nothing the second time.
import { transactionally } from '../platform/db/transaction.js';
import type { Insertable, Kysely, Selectable } from 'kysely';
import type { ReserveStatus, ReserveView } from './rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type { ReservesTable } from '../platform/db/migrations/0008_reserves.js';

export type ReserveRow = Selectable<ReservesTable>;

export interface NewReserve {
  readonly reserveId: string;
  readonly applicationId: string;
  readonly billingKey: string;
  readonly orderId: string;
  readonly orderName: string;
  readonly price: number;
  readonly taxFree: number;
  readonly quota: number;
  readonly user: Record<string, unknown> | undefined;
  readonly items: unknown[] | undefined;
  readonly metadata: Record<string, unknown> | undefined;
  readonly feedback: { readonly url: string; readonly contentType: string } | undefined;
  readonly requestedAt: Date;
  readonly executeAt: Date;
}

export interface ReserveOutcome {
  readonly status: Extract<ReserveStatus, 'paid' | 'failed'>;
  readonly receiptId?: string;
  readonly errorCode?: string;
  readonly pgErrorCode?: string;
}

export interface ReserveStore {
  /** Undefined when the project already has a reserve or a receipt with this order_id (nothing is written). */
  insert(r: NewReserve): Promise<ReserveRow | undefined>;
  /** A reserve whose workflow could not be started: it never existed. */
  delete(reserveId: string): Promise<void>;
  find(reserveId: string): Promise<ReserveRow | undefined>;
  /** The project's reserve with this order_id, if any. */
  findByOrder(applicationId: string, orderId: string): Promise<ReserveRow | undefined>;
  /** The project's newest first, at most `limit` (the dashboard's lists). */
  listOf(applicationId: string, limit: number): Promise<ReserveRow[]>;
  /** reserved -> executing (started_at); the row as it is now, whatever it was. */
  markExecuting(reserveId: string, now: Date): Promise<ReserveRow>;
  /** reserved -> revoked; undefined when it was no longer reserved. */
  markRevoked(reserveId: string, now: Date): Promise<ReserveRow | undefined>;
  /** executing -> paid | failed; the row as it is now (a second call changes nothing). */
  finish(reserveId: string, outcome: ReserveOutcome, now: Date): Promise<ReserveRow>;
  setFeedbackDelivery(reserveId: string, deliveryId: string): Promise<void>;
  view(row: ReserveRow): ReserveView;
}

const userContext = (reserveId: string) => `reserve:${reserveId}:user`;

/** A new reserve's row: reserved, its user's data sealed. */
function newReserveRow(r: NewReserve, cipher: FieldCipher): Insertable<ReservesTable> {
  return {
    reserve_id: r.reserveId,
    application_id: r.applicationId,
    billing_key: r.billingKey,
    order_id: r.orderId,
    order_name: r.orderName,
    price: r.price,
    tax_free: r.taxFree,
    quota: r.quota,
    user_sealed: r.user === undefined ? null : cipher.seal(JSON.stringify(r.user), userContext(r.reserveId)),
    items: r.items === undefined ? null : JSON.stringify(r.items),
    metadata: r.metadata === undefined ? null : JSON.stringify(r.metadata),
    feedback_url: r.feedback?.url ?? null,
    content_type: r.feedback?.contentType ?? null,
    status: 'reserved',
    receipt_id: null,
    error_code: null,
    pg_error_code: null,
    feedback_delivery_id: null,
    requested_at: r.requestedAt,
    execute_at: r.executeAt,
    started_at: null,
    finished_at: null,
    revoked_at: null,
  };
}

export function createReserveStore(db: Kysely<Tables>, cipher: FieldCipher): ReserveStore {
  const byId = (reserveId: string) => db.selectFrom('reserves').selectAll().where('reserve_id', '=', reserveId);
  return {
    async insert(r) {
      return transactionally(db, async (trx) => {
        const receipt = await trx
          .selectFrom('receipts')
          .select('receipt_id')
          .where('application_id', '=', r.applicationId)
          .where('order_id', '=', r.orderId)
          .executeTakeFirst();
        if (receipt) return undefined;
        return trx
          .insertInto('reserves')
          .values(newReserveRow(r, cipher))
          .onConflict((oc) => oc.columns(['application_id', 'order_id']).doNothing())
          .returningAll()
          .executeTakeFirst();
      });
    },

    async delete(reserveId) {
      await db.deleteFrom('reserves').where('reserve_id', '=', reserveId).where('status', '=', 'reserved').execute();
    },

    async find(reserveId) {
      return byId(reserveId).executeTakeFirst();
    },

    async findByOrder(applicationId, orderId) {
      return db
        .selectFrom('reserves')
        .selectAll()
        .where('application_id', '=', applicationId)
        .where('order_id', '=', orderId)
        .executeTakeFirst();
    },

    async listOf(applicationId, limit) {
      return db
        .selectFrom('reserves')
        .selectAll()
        .where('application_id', '=', applicationId)
        .orderBy('requested_at', 'desc')
        .orderBy('reserve_id', 'desc')
        .limit(limit)
        .execute();
    },

    async markExecuting(reserveId, now) {
      const updated = await db
        .updateTable('reserves')
        .set({ status: 'executing', started_at: now })
        .where('reserve_id', '=', reserveId)
        .where('status', '=', 'reserved')
        .returningAll()
        .executeTakeFirst();
      return updated ?? byId(reserveId).executeTakeFirstOrThrow();
    },

    async markRevoked(reserveId, now) {
      return db
        .updateTable('reserves')
        .set({ status: 'revoked', revoked_at: now })
        .where('reserve_id', '=', reserveId)
        .where('status', '=', 'reserved')
        .returningAll()
        .executeTakeFirst();
    },

    async finish(reserveId, outcome, now) {
      const updated = await db
        .updateTable('reserves')
        .set({
          status: outcome.status,
          receipt_id: outcome.receiptId ?? null,
          error_code: outcome.errorCode ?? null,
          pg_error_code: outcome.pgErrorCode ?? null,
          finished_at: now,
        })
        .where('reserve_id', '=', reserveId)
        .where('status', '=', 'executing')
        .returningAll()
        .executeTakeFirst();
      return updated ?? byId(reserveId).executeTakeFirstOrThrow();
    },

    async setFeedbackDelivery(reserveId, deliveryId) {
      await db.updateTable('reserves').set({ feedback_delivery_id: deliveryId }).where('reserve_id', '=', reserveId).execute();
    },

    view(row) {
      return {
        reserveId: row.reserve_id,
        receiptId: row.receipt_id,
        orderId: row.order_id,
        orderName: row.order_name,
        price: row.price,
        taxFree: row.tax_free,
        user:
          row.user_sealed === null
            ? undefined
            : (JSON.parse(cipher.open(row.user_sealed, userContext(row.reserve_id))) as Record<string, unknown>),
        items: row.items ?? undefined,
        metadata: row.metadata,
        feedbackUrl: row.feedback_url,
        contentType: row.content_type,
        status: row.status as ReserveStatus,
        errorCode: row.error_code,
        pgErrorCode: row.pg_error_code,
        requestedAt: row.requested_at,
        executeAt: row.execute_at,
        startedAt: row.started_at,
        finishedAt: row.finished_at,
        revokedAt: row.revoked_at,
      };
    },
  };
}

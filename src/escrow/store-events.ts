// An escrow order's events history beside its transitions (store.ts): the webhook delivery noted on an event, events
// appended after the workflow ended, the history read, and a PG notification id counted.
import { transactionally } from '../platform/db/transaction.js';
import type { Kysely, Selectable } from 'kysely';
import type { EscrowTransition } from './contract.js';
import type { Tables } from '../platform/db/db.js';
import type { EscrowEventsTable } from '../platform/db/migrations/0007_escrow.js';

export interface EscrowEventHistory {
  setDelivery(receiptId: string, seq: number, deliveryId: string): Promise<void>;
  /** Events after the workflow ended (a late notification): appended after the last one. */
  appendIgnored(e: Omit<EscrowTransition, 'seq' | 'toStatus'>, now: Date): Promise<void>;
  events(receiptId: string): Promise<Selectable<EscrowEventsTable>[]>;
  /** How many of the order's events carry this PG notification id (0: a notification not seen before). */
  notificationCount(receiptId: string, notificationId: string): Promise<number>;
}

export function escrowEventQueries(db: Kysely<Tables>): EscrowEventHistory {
  return {
    async setDelivery(receiptId, seq, deliveryId) {
      await db
        .updateTable('escrow_events')
        .set({ delivery_id: deliveryId })
        .where('receipt_id', '=', receiptId)
        .where('seq', '=', seq)
        .execute();
    },

    async appendIgnored(e, now) {
      await transactionally(db, async (trx) => {
        const order = await trx
          .updateTable('escrow_orders')
          .set((eb) => ({ last_seq: eb('last_seq', '+', 1) }))
          .where('receipt_id', '=', e.receiptId)
          .returning(['last_seq'])
          .executeTakeFirst();
        if (!order) return;
        await trx
          .insertInto('escrow_events')
          .values({
            receipt_id: e.receiptId,
            seq: order.last_seq,
            event: e.event,
            source: e.source,
            from_status: e.fromStatus,
            to_status: null,
            note: e.note ?? null,
            notification_id: e.notificationId ?? null,
            delivery_id: null,
            occurred_at: new Date(e.occurredAt),
            recorded_at: now,
          })
          .execute();
      });
    },

    async events(receiptId) {
      return db.selectFrom('escrow_events').selectAll().where('receipt_id', '=', receiptId).orderBy('seq', 'asc').execute();
    },

    async notificationCount(receiptId, notificationId) {
      const row = await db
        .selectFrom('escrow_events')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where('receipt_id', '=', receiptId)
        .where('notification_id', '=', notificationId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}

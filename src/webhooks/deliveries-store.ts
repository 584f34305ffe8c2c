// Webhook deliveries: one row per (event, destination) with its body sealed (bound to the delivery), its state
// (ready -> doing -> done | failed) and retry count. Their claims are in deliveries-store-claims.ts; they are listed
// with their attempts for the delivery history in deliveries-store-history.ts.
import { sql, type Kysely } from 'kysely';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type { DeliveryRow, NewDelivery } from './records.js';
import { type DeliveryClaims, deliveryClaimQueries } from './deliveries-store-claims.js';
import { type DeliveryHistory, deliveryHistoryQueries } from './deliveries-store-history.js';

export interface DeliveryStore extends DeliveryClaims, DeliveryHistory {
  /** The delivery, due for its first attempt at `firstAttemptAt`: the dispatcher's from the start. */
  createDelivery(d: NewDelivery): Promise<DeliveryRow>;
  findDelivery(deliveryId: string): Promise<DeliveryRow | undefined>;
  /** The sealed body opened. */
  deliveryBody(row: DeliveryRow): string;
  /**
   * failed -> ready for a manual retry, due at `now` (business clock), one attempt more, sent even while the endpoint is
   * disabled; undefined when not failed. A row of an earlier release's workflow becomes the dispatcher's.
   */
  reopenFailed(deliveryId: string, now: Date): Promise<DeliveryRow | undefined>;
}

const bodyContext = (deliveryId: string) => `webhook-delivery:${deliveryId}:body`;

/**
 * Every waiting delivery of the endpoint stops as failed (tests, manual retries and feedback deliveries excepted, and
 * `except`, the delivery whose attempt disabled it); their ids. Used by a PUT that disables the endpoint and by the
 * attempt that auto-disables it (inside its transaction).
 */
export async function stopPendingDeliveries(q: Kysely<Tables>, endpointId: string, except?: string): Promise<string[]> {
  let update = q
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', updated_at: sql<Date>`now()` })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'ready')
    .where('sends_when_disabled', '=', false)
    .where('destination', '=', 'endpoint');
  if (except !== undefined) update = update.where('delivery_id', '!=', except);
  const rows = await update.returning('delivery_id').execute();
  return rows.map((r) => r.delivery_id);
}

export function createDeliveryStore(db: Kysely<Tables>, cipher: FieldCipher): DeliveryStore {
  return {
    ...deliveryClaimQueries(db),
    ...deliveryHistoryQueries(db),

    async createDelivery(d) {
      return db
        .insertInto('webhook_deliveries')
        .values({
          delivery_id: d.deliveryId,
          endpoint_id: d.endpoint.endpoint_id,
          application_id: d.endpoint.application_id,
          event: d.event,
          event_code: d.eventCode,
          url: d.feedbackUrl ?? d.endpoint.url ?? '',
          destination: d.feedbackUrl !== undefined ? 'feedback' : 'endpoint',
          content_type: d.contentType ?? 'application/json',
          status: 'ready',
          max_retry: d.endpoint.retry_count,
          tags: JSON.stringify(d.tags),
          payload_sealed: cipher.seal(d.body, bodyContext(d.deliveryId)),
          sends_when_disabled: d.sendsWhenDisabled,
          created_at: d.createdAt,
          next_attempt_at: d.firstAttemptAt,
          last_attempt: d.endpoint.retry_count,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    async findDelivery(deliveryId) {
      return db.selectFrom('webhook_deliveries').selectAll().where('delivery_id', '=', deliveryId).executeTakeFirst();
    },

    deliveryBody(row) {
      return cipher.open(row.payload_sealed, bodyContext(row.delivery_id));
    },

    async reopenFailed(deliveryId, now) {
      return db
        .updateTable('webhook_deliveries')
        .set({
          status: 'ready',
          sends_when_disabled: true,
          next_attempt_at: now,
          claimed_until: null,
          last_attempt: sql<number>`retry_count + 1`,
          updated_at: sql<Date>`now()`,
        })
        .where('delivery_id', '=', deliveryId)
        .where('status', '=', 'failed')
        .returningAll()
        .executeTakeFirst();
    },
  };
}

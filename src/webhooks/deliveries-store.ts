// Webhook deliveries: one row per (event, destination) with its body sealed (bound to the delivery), its state
// (ready -> doing -> done | failed) and retry count; listed with their attempts for the delivery history.
import { sql, type Kysely } from 'kysely';
import type { AttemptView, DeliveryDestination, DeliveryState, DeliveryView } from './rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type { AttemptRow, DeliveryRow, NewDelivery } from './records.js';

export interface DeliveryStore {
  createDelivery(d: NewDelivery): Promise<DeliveryRow>;
  /** A delivery whose workflow could not be started: it never existed. */
  deleteDelivery(deliveryId: string): Promise<void>;
  findDelivery(deliveryId: string): Promise<DeliveryRow | undefined>;
  /** The sealed body opened. */
  deliveryBody(row: DeliveryRow): string;
  /** Newest first; only those sent to `destination` (the endpoint's URL or a charge's feedback_url) when given. */
  listDeliveries(
    endpointId: string,
    page: number,
    per: number,
    destination?: DeliveryDestination,
  ): Promise<{ rows: DeliveryView[]; count: number }>;
  /** Failed deliveries created at or after `since`, oldest first, at most `limit`. */
  failedSince(endpointId: string, since: Date, limit: number): Promise<DeliveryRow[]>;
  /** failed -> ready for a manual retry (sent even while the endpoint is disabled); undefined when not failed. */
  reopenFailed(deliveryId: string): Promise<DeliveryRow | undefined>;
  /**
   * Deliveries that may have no workflow: 'ready' with no attempt made, created before `createdBefore` (the
   * process that saved them may have died before starting their run), or 'doing' untouched since
   * `doingBefore` (their run ended without recording the attempt). Oldest first, at most `limit`.
   */
  possiblyOrphaned(createdBefore: Date, doingBefore: Date, limit: number): Promise<DeliveryRow[]>;
  /** ready/doing -> doing before a send; false when the delivery is no longer waiting. */
  markDoing(deliveryId: string): Promise<boolean>;
  /** ready/doing -> failed without a send (the endpoint was disabled meanwhile). */
  markFailed(deliveryId: string): Promise<void>;
}

const bodyContext = (deliveryId: string) => `webhook-delivery:${deliveryId}:body`;

function attemptView(a: AttemptRow): AttemptView {
  return {
    attempt: a.attempt,
    attemptedAt: a.attempted_at,
    durationMs: a.duration_ms,
    httpStatus: a.http_status,
    responseBody: a.response_body,
    error: a.error,
  };
}

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
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    async deleteDelivery(deliveryId) {
      await db.deleteFrom('webhook_deliveries').where('delivery_id', '=', deliveryId).execute();
    },

    async findDelivery(deliveryId) {
      return db.selectFrom('webhook_deliveries').selectAll().where('delivery_id', '=', deliveryId).executeTakeFirst();
    },

    deliveryBody(row) {
      return cipher.open(row.payload_sealed, bodyContext(row.delivery_id));
    },

    async listDeliveries(endpointId, page, per, destination) {
      const base = () => {
        const q = db.selectFrom('webhook_deliveries').where('endpoint_id', '=', endpointId);
        return destination === undefined ? q : q.where('destination', '=', destination);
      };
      const { n } = await base()
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const rows = await base()
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('delivery_id', 'desc')
        .limit(per)
        .offset((page - 1) * per)
        .execute();
      const attempts =
        rows.length === 0
          ? []
          : await db
              .selectFrom('webhook_attempts')
              .selectAll()
              .where(
                'delivery_id',
                'in',
                rows.map((r) => r.delivery_id),
              )
              .orderBy('attempt')
              .execute();
      return {
        count: Number(n),
        rows: rows.map((r) => ({
          deliveryId: r.delivery_id,
          event: r.event,
          eventCode: r.event_code,
          url: r.url,
          destination: r.destination as DeliveryDestination,
          state: r.status as DeliveryState,
          retryCount: r.retry_count,
          maxRetry: r.max_retry,
          tags: r.tags,
          createdAt: r.created_at,
          attempts: attempts.filter((a) => a.delivery_id === r.delivery_id).map(attemptView),
        })),
      };
    },

    async failedSince(endpointId, since, limit) {
      return db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .where('status', '=', 'failed')
        .where('created_at', '>=', since)
        .orderBy('created_at')
        .orderBy('delivery_id')
        .limit(limit)
        .execute();
    },

    async reopenFailed(deliveryId) {
      return db
        .updateTable('webhook_deliveries')
        .set({ status: 'ready', sends_when_disabled: true, updated_at: sql<Date>`now()` })
        .where('delivery_id', '=', deliveryId)
        .where('status', '=', 'failed')
        .returningAll()
        .executeTakeFirst();
    },

    async possiblyOrphaned(createdBefore, doingBefore, limit) {
      return db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where((eb) =>
          eb.or([
            eb.and([eb('status', '=', 'ready'), eb('retry_count', '=', 0), eb('created_at', '<', createdBefore)]),
            eb.and([eb('status', '=', 'doing'), eb('updated_at', '<', doingBefore)]),
          ]),
        )
        .orderBy('created_at')
        .orderBy('delivery_id')
        .limit(limit)
        .execute();
    },

    async markDoing(deliveryId) {
      const row = await db
        .updateTable('webhook_deliveries')
        .set({ status: 'doing', updated_at: sql<Date>`now()` })
        .where('delivery_id', '=', deliveryId)
        .where('status', 'in', ['ready', 'doing'])
        .returning('delivery_id')
        .executeTakeFirst();
      return row !== undefined;
    },

    async markFailed(deliveryId) {
      await db
        .updateTable('webhook_deliveries')
        .set({ status: 'failed', updated_at: sql<Date>`now()` })
        .where('delivery_id', '=', deliveryId)
        .where('status', 'in', ['ready', 'doing'])
        .execute();
    },
  };
}

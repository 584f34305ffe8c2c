// The delivery history: an endpoint's deliveries listed newest first with their attempts, and its failed ones since
// a date for a replay.
import type { Kysely } from 'kysely';
import type { AttemptView, DeliveryDestination, DeliveryState, DeliveryView } from './rules.js';
import type { Tables } from '../platform/db/db.js';
import type { AttemptRow, DeliveryRow } from './records.js';

export interface DeliveryHistory {
  /** Newest first; only those sent to `destination` (the endpoint's URL or a charge's feedback_url) when given. */
  listDeliveries(
    endpointId: string,
    page: number,
    per: number,
    destination?: DeliveryDestination,
  ): Promise<{ rows: DeliveryView[]; count: number }>;
  /** Failed deliveries created at or after `since`, oldest first, at most `limit`. */
  failedSince(endpointId: string, since: Date, limit: number): Promise<DeliveryRow[]>;
}

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

export function deliveryHistoryQueries(db: Kysely<Tables>): DeliveryHistory {
  return {
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
  };
}

// Webhook deliveries: one row per (event, destination) with its body sealed (bound to the delivery), its state
// (ready -> doing -> done | failed) and retry count; listed with their attempts for the delivery history.
import { sql, type Kysely } from 'kysely';
import type { AttemptView, DeliveryDestination, DeliveryState, DeliveryView } from './rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type { AttemptRow, DeliveryRow, DueDelivery, NewDelivery } from './records.js';

export interface DeliveryStore {
  /** The delivery, due for its first attempt at `firstAttemptAt`: the dispatcher's from the start. */
  createDelivery(d: NewDelivery): Promise<DeliveryRow>;
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
  /**
   * failed -> ready for a manual retry, due at `now` (business clock), one attempt more, sent even while the endpoint is
   * disabled; undefined when not failed. A row of an earlier release's workflow becomes the dispatcher's.
   */
  reopenFailed(deliveryId: string, now: Date): Promise<DeliveryRow | undefined>;
  /**
   * The dispatcher's claim: up to `limit` deliveries due at `now` (business clock), and those whose claimer's lease
   * lapsed (a dispatcher that died mid attempt), ready/doing -> doing with a lease of `leaseMs` on the database's
   * clock. FOR UPDATE SKIP LOCKED: dispatchers in several processes never claim one row at once. Each comes with its
   * endpoint's signing columns.
   */
  claimDue(now: Date, limit: number, leaseMs: number): Promise<DueDelivery[]>;
  /**
   * Hands rows of an earlier release's `delivery:<id>` workflows that have no run to the dispatcher, due at `now`:
   * 'ready' with no attempt made, created before `createdBefore` (the process that saved them died before starting
   * their run), or 'doing' untouched since `doingBefore` (their run ended without recording the attempt). A run that
   * finds its row handed over ends without sending. Returns how many, at most `limit`.
   */
  adoptOrphans(createdBefore: Date, doingBefore: Date, now: Date, limit: number): Promise<number>;
  /** ready/doing -> doing before a `delivery:<id>` workflow's send; false when the row is not waiting for that run. */
  markDoing(deliveryId: string): Promise<boolean>;
  /** ready/doing -> failed without a send (the endpoint was disabled meanwhile). */
  markFailed(deliveryId: string): Promise<void>;
}

/** The endpoint's columns the claim reads beside each row (null when the endpoint is gone). */
interface EndpointColumns {
  e_endpoint_id: string | null;
  e_enabled: boolean | null;
  e_secret_sealed: string | null;
  e_previous_secret_sealed: string | null;
  e_previous_secret_expires_at: Date | null;
}

/** jsonb through a raw query: node-postgres parses it, PGlite in the process too; a string is parsed here. */
const parseTags = (tags: unknown): string[] => (typeof tags === 'string' ? (JSON.parse(tags) as string[]) : (tags as string[]));

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

    async claimDue(now, limit, leaseMs) {
      // one statement: pick (skipping rows another dispatcher holds), claim, and read each row's endpoint
      const { rows } = await sql<DeliveryRow & EndpointColumns>`
        with waiting as (
          select delivery_id from webhook_deliveries
          where status = 'ready' and next_attempt_at is not null and next_attempt_at <= ${now}
          order by next_attempt_at
          limit ${limit}
          for update skip locked),
        lapsed as (
          select delivery_id from webhook_deliveries
          where status = 'doing' and next_attempt_at is not null and claimed_until < now()
          order by claimed_until
          limit ${limit}
          for update skip locked),
        -- each question on its own partial index: done and failed rows (nearly all of them) are never read
        due as (select delivery_id from lapsed union all select delivery_id from waiting limit ${limit}),
        claimed as (
          update webhook_deliveries d
          set status = 'doing', claimed_until = now() + ${leaseMs} * interval '1 millisecond', updated_at = now()
          from due where d.delivery_id = due.delivery_id
          returning d.*)
        select c.*, e.endpoint_id as e_endpoint_id, e.enabled as e_enabled, e.secret_sealed as e_secret_sealed,
          e.previous_secret_sealed as e_previous_secret_sealed,
          e.previous_secret_expires_at as e_previous_secret_expires_at
        from claimed c left join webhook_endpoints e on e.endpoint_id = c.endpoint_id
        order by c.next_attempt_at`.execute(db);
      return rows.map((row) => {
        const { e_endpoint_id, e_enabled, e_secret_sealed, e_previous_secret_sealed, e_previous_secret_expires_at, ...delivery } =
          row;
        return {
          delivery: { ...delivery, tags: parseTags(delivery.tags) },
          ...(e_endpoint_id !== null
            ? {
                endpoint: {
                  endpoint_id: e_endpoint_id,
                  enabled: e_enabled!,
                  secret_sealed: e_secret_sealed,
                  previous_secret_sealed: e_previous_secret_sealed,
                  previous_secret_expires_at: e_previous_secret_expires_at,
                },
              }
            : {}),
        };
      });
    },

    async adoptOrphans(createdBefore, doingBefore, now, limit) {
      const { rows } = await sql<{ n: number }>`
        with orphans as (
          select delivery_id from webhook_deliveries
          where next_attempt_at is null
            and ((status = 'ready' and retry_count = 0 and created_at < ${createdBefore})
              or (status = 'doing' and updated_at < ${doingBefore}))
          order by created_at, delivery_id
          limit ${limit}
          for update skip locked),
        adopted as (
          update webhook_deliveries d
          set status = 'ready', next_attempt_at = ${now}, last_attempt = greatest(d.max_retry, d.retry_count + 1),
            updated_at = now()
          from orphans where d.delivery_id = orphans.delivery_id
          returning d.delivery_id)
        select count(*)::int as n from adopted`.execute(db);
      return Number(rows[0]?.n ?? 0);
    },

    async markDoing(deliveryId) {
      const row = await db
        .updateTable('webhook_deliveries')
        .set({ status: 'doing', updated_at: sql<Date>`now()` })
        .where('delivery_id', '=', deliveryId)
        .where('status', 'in', ['ready', 'doing'])
        .where('next_attempt_at', 'is', null)
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

// The claims of webhook deliveries: the dispatcher's claim of due rows and its sweep of an earlier release's orphans,
// a `delivery:<id>` run's claim before its send, and a claimed row failed without one.
import { sql, type Kysely } from 'kysely';
import type { Tables } from '../platform/db/db.js';
import type { DeliveryRow, DueDelivery } from './records.js';

export interface DeliveryClaims {
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

export function deliveryClaimQueries(db: Kysely<Tables>): DeliveryClaims {
  return {
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

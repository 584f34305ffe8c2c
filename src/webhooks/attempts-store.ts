// Webhook attempts: an attempt is claimed (the delivery ready/doing -> doing) and recorded once per (delivery,
// attempt number), together with the delivery's new state and the endpoint's health, in one statement (a 2xx) or
// one transaction — so a retried attempt activity changes nothing twice.
import { transactionally } from '../platform/db/transaction.js';
import { sql, type Kysely } from 'kysely';
import { AUTO_DISABLE_AFTER_FAILURES, type DeliveryState, stateAfterAttempt } from './rules.js';
import type { Tables } from '../platform/db/db.js';
import type { AttemptResult, AttemptRow, ClaimedDelivery, RecordedAttempt } from './records.js';
import { stopPendingDeliveries } from './deliveries-store.js';

export interface AttemptStore {
  findAttempt(deliveryId: string, attempt: number): Promise<AttemptRow | undefined>;
  /**
   * The common case of an attempt in one statement: ready/doing -> doing, when the attempt is not recorded
   * yet and the endpoint has a secret and may be sent to (enabled, or a feedback / regardless delivery).
   * Undefined otherwise: the caller looks at each condition (findDelivery, findAttempt, ...).
   */
  claimAttempt(deliveryId: string, attempt: number): Promise<ClaimedDelivery | undefined>;
  /**
   * Records an attempt once: the attempt row, the delivery's state and retry_count, the endpoint's health
   * (counter, last send, auto-disable at 10 failures in a row or at once on 410). A second call for the
   * same attempt number records nothing and returns the state as it stands.
   */
  recordAttempt(deliveryId: string, result: AttemptResult): Promise<RecordedAttempt>;
}

/**
 * The delivery after a recorded attempt that was not a 2xx: its state and retry count, the claim released, and — when
 * it waits and the dispatcher made the attempt — when the next one is due, with the wait kept on the attempt's row.
 */
async function settle(trx: Kysely<Tables>, deliveryId: string, r: AttemptResult, state: DeliveryState): Promise<void> {
  const waits = state === 'ready' && r.next !== undefined;
  await trx
    .updateTable('webhook_deliveries')
    .set({
      status: state,
      retry_count: sql<number>`greatest(retry_count, ${r.attempt})`,
      claimed_until: null,
      ...(waits ? { next_attempt_at: r.next!.at } : {}),
      updated_at: sql<Date>`now()`,
    })
    .where('delivery_id', '=', deliveryId)
    .execute();
  if (waits) {
    await trx
      .updateTable('webhook_attempts')
      .set({ retry_in_ms: r.next!.inMs })
      .where('delivery_id', '=', deliveryId)
      .where('attempt', '=', r.attempt)
      .execute();
  }
}

export function createAttemptStore(db: Kysely<Tables>): AttemptStore {
  return {
    async findAttempt(deliveryId, attempt) {
      return db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('delivery_id', '=', deliveryId)
        .where('attempt', '=', attempt)
        .executeTakeFirst();
    },

    async claimAttempt(deliveryId, attempt) {
      const row = await db
        .updateTable('webhook_deliveries as d')
        .from('webhook_endpoints as e')
        .set({ status: 'doing', updated_at: sql<Date>`now()` })
        .whereRef('e.endpoint_id', '=', 'd.endpoint_id')
        .where('d.delivery_id', '=', deliveryId)
        .where('d.status', 'in', ['ready', 'doing'])
        // a row the dispatcher owns is not this run's to send
        .where('d.next_attempt_at', 'is', null)
        .where('e.secret_sealed', 'is not', null)
        .where((eb) =>
          eb.or([eb('e.enabled', '=', true), eb('d.destination', '=', 'feedback'), eb('d.sends_when_disabled', '=', true)]),
        )
        .where((eb) =>
          eb.not(
            eb.exists(
              eb
                .selectFrom('webhook_attempts as a')
                .select('a.attempt')
                .whereRef('a.delivery_id', '=', 'd.delivery_id')
                .where('a.attempt', '=', attempt),
            ),
          ),
        )
        .returningAll('d')
        .returning([
          'e.secret_sealed as e_secret_sealed',
          'e.previous_secret_sealed as e_previous_secret_sealed',
          'e.previous_secret_expires_at as e_previous_secret_expires_at',
        ])
        .executeTakeFirst();
      if (!row) return undefined;
      const { e_secret_sealed, e_previous_secret_sealed, e_previous_secret_expires_at, ...delivery } = row;
      return {
        delivery,
        signing: {
          endpoint_id: delivery.endpoint_id,
          secret_sealed: e_secret_sealed,
          previous_secret_sealed: e_previous_secret_sealed,
          previous_secret_expires_at: e_previous_secret_expires_at,
        },
      };
    },

    async recordAttempt(deliveryId, r) {
      if (r.httpStatus !== null && r.httpStatus >= 200 && r.httpStatus < 300) {
        // a 2xx in one statement: whatever the delivery's and the endpoint's state, it ends done and resets the
        // endpoint's failure count (a feedback delivery leaves the endpoint alone); recorded once by its number
        const { rows } = await sql<{ inserted: number }>`
          with ins as (
            insert into webhook_attempts
              (delivery_id, attempt, attempted_at, duration_ms, http_status, response_body, error, retry_after_ms)
            values (${deliveryId}, ${r.attempt}, ${r.attemptedAt}, ${r.durationMs}, ${r.httpStatus},
              ${r.responseBody}, ${r.error}, ${r.retryAfterMs})
            on conflict (delivery_id, attempt) do nothing
            returning delivery_id),
          d as (
            update webhook_deliveries
            set status = 'done', retry_count = greatest(retry_count, ${r.attempt}), claimed_until = null, updated_at = now()
            where delivery_id = ${deliveryId} and exists (select 1 from ins)
            returning endpoint_id, destination),
          e as (
            update webhook_endpoints
            set consecutive_failures = 0, last_sent_at = ${r.attemptedAt}, last_status = ${r.httpStatus}, updated_at = now()
            where endpoint_id = (select endpoint_id from d where destination = 'endpoint')
            returning endpoint_id)
          select (select count(*) from ins)::int as inserted, (select count(*) from e)::int as touched`.execute(db);
        if (Number(rows[0]?.inserted) === 1) return { state: 'done', retryAfterMs: r.retryAfterMs, stoppedDeliveryIds: [] };
        // recorded by an earlier execution of this attempt: the transaction below reports what it left
      }
      return transactionally(db, async (trx) => {
        const inserted = await trx
          .insertInto('webhook_attempts')
          .values({
            delivery_id: deliveryId,
            attempt: r.attempt,
            attempted_at: r.attemptedAt,
            duration_ms: r.durationMs,
            http_status: r.httpStatus,
            response_body: r.responseBody,
            error: r.error,
            retry_after_ms: r.retryAfterMs,
          })
          .onConflict((oc) => oc.columns(['delivery_id', 'attempt']).doNothing())
          .returning('attempt')
          .executeTakeFirst();
        const delivery = await trx
          .selectFrom('webhook_deliveries')
          .selectAll()
          .where('delivery_id', '=', deliveryId)
          .forUpdate()
          .executeTakeFirstOrThrow();
        if (inserted === undefined) {
          // recorded by an earlier execution of this attempt: report what it left
          const earlier = await trx
            .selectFrom('webhook_attempts')
            .select('retry_after_ms')
            .where('delivery_id', '=', deliveryId)
            .where('attempt', '=', r.attempt)
            .executeTakeFirstOrThrow();
          return {
            state: delivery.status as DeliveryState,
            retryAfterMs: earlier.retry_after_ms === null ? null : Number(earlier.retry_after_ms),
            stoppedDeliveryIds: [],
          };
        }

        const succeeded = r.httpStatus !== null && r.httpStatus >= 200 && r.httpStatus < 300;
        const gone = r.httpStatus === 410;
        if (delivery.destination === 'feedback') {
          // a charge's feedback_url is not the endpoint: its answers leave the endpoint's health alone
          const state = stateAfterAttempt({ succeeded, attempt: r.attempt, lastAttempt: r.lastAttempt, endpointGone: gone });
          await settle(trx, deliveryId, r, state);
          return { state, retryAfterMs: r.retryAfterMs, stoppedDeliveryIds: [] };
        }
        const endpoint = await trx
          .selectFrom('webhook_endpoints')
          .selectAll()
          .where('endpoint_id', '=', delivery.endpoint_id)
          .forUpdate()
          .executeTakeFirstOrThrow();
        const failures = succeeded ? 0 : endpoint.consecutive_failures + 1;
        const disableNow = endpoint.enabled && (gone || failures >= AUTO_DISABLE_AFTER_FAILURES);
        await trx
          .updateTable('webhook_endpoints')
          .set({
            consecutive_failures: failures,
            last_sent_at: r.attemptedAt,
            last_status: r.httpStatus,
            ...(disableNow ? { enabled: false, auto_disabled_at: r.attemptedAt } : {}),
            updated_at: sql<Date>`now()`,
          })
          .where('endpoint_id', '=', endpoint.endpoint_id)
          .execute();
        const stoppedDeliveryIds = disableNow ? await stopPendingDeliveries(trx, endpoint.endpoint_id, deliveryId) : [];

        const endpointEnabled = endpoint.enabled && !disableNow;
        const state =
          delivery.status === 'failed' && !succeeded
            ? 'failed'
            : stateAfterAttempt({
                succeeded,
                attempt: r.attempt,
                lastAttempt: r.lastAttempt,
                endpointGone: gone || (!endpointEnabled && !delivery.sends_when_disabled),
              });
        await settle(trx, deliveryId, r, state);
        return { state, retryAfterMs: r.retryAfterMs, stoppedDeliveryIds, endpointDisabled: disableNow };
      });
    },
  };
}

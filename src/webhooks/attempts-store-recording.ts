// Recording a webhook attempt once per (delivery, attempt number), together with the delivery's new state and the
// endpoint's health: a 2xx in one statement, any other outcome in one transaction.
import { transactionally } from '../platform/db/transaction.js';
import { sql, type Kysely } from 'kysely';
import { AUTO_DISABLE_AFTER_FAILURES, type DeliveryState, stateAfterAttempt } from './rules.js';
import type { Tables } from '../platform/db/db.js';
import type { AttemptResult, RecordedAttempt } from './records.js';
import { stopPendingDeliveries } from './deliveries-store.js';

/** AttemptStore.recordAttempt: a second call for the same attempt number records nothing and reports the state. */
export async function recordAttempt(db: Kysely<Tables>, deliveryId: string, r: AttemptResult): Promise<RecordedAttempt> {
  if (r.httpStatus !== null && r.httpStatus >= 200 && r.httpStatus < 300) {
    if (await recordSuccess(db, deliveryId, r)) return { state: 'done', retryAfterMs: r.retryAfterMs, stoppedDeliveryIds: [] };
    // recorded by an earlier execution of this attempt: the transaction below reports what it left
  }
  return transactionally(db, (trx) => recordInTransaction(trx, deliveryId, r));
}

/** A 2xx attempt recorded in one statement; false when an earlier execution of this attempt recorded it. */
async function recordSuccess(db: Kysely<Tables>, deliveryId: string, r: AttemptResult): Promise<boolean> {
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
  return Number(rows[0]?.inserted) === 1;
}

/** Any attempt recorded in the transaction `trx`, or what an earlier execution of it left reported. */
async function recordInTransaction(trx: Kysely<Tables>, deliveryId: string, r: AttemptResult): Promise<RecordedAttempt> {
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

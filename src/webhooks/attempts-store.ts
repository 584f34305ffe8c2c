// Webhook attempts: an attempt is claimed (the delivery ready/doing -> doing) and recorded once per (delivery,
// attempt number), together with the delivery's new state and the endpoint's health, in one statement (a 2xx) or
// one transaction (attempts-store-recording.ts) — so a retried attempt activity changes nothing twice.
import { sql, type Kysely } from 'kysely';
import type { Tables } from '../platform/db/db.js';
import type { AttemptResult, AttemptRow, ClaimedDelivery, RecordedAttempt } from './records.js';
import { recordAttempt } from './attempts-store-recording.js';

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

    recordAttempt: (deliveryId, r) => recordAttempt(db, deliveryId, r),
  };
}

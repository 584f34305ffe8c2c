// Idempotency-Key records: (project, key) -> request hash, state, and the first response; and the proof of a
// request's key that the HTTP layer hands to the use cases (a charge, a confirm, a sandbox payment remember it).
import type { Kysely } from 'kysely';
import type { Tables } from './db/db.js';

/**
 * How long a request may hold its key in flight: longer than any request runs (a workflow call waits 60 s
 * at most). A record older than that was left by a process that died mid-request: a retry takes the key,
 * and the worker's sweep releases it.
 */
/** The request's Idempotency-Key as the idempotency layer vouches for it: never the key itself. */
export interface IdempotencyKeyProof {
  /** what a charge made under this key stores */
  readonly mac: string;
  /** whether a stored `mac` was made from this same key */
  matches(stored: string): boolean;
}

export const IN_FLIGHT_LEASE_MS = 90_000;

export interface StoredResponse {
  readonly status: number;
  readonly body: string;
}

export type ClaimResult =
  | { readonly kind: 'claimed' }
  | { readonly kind: 'in_flight'; readonly requestHash: string; readonly requestSalt: string }
  | { readonly kind: 'complete'; readonly requestHash: string; readonly requestSalt: string; readonly response: StoredResponse };

export interface NewClaim {
  readonly applicationId: string;
  readonly key: string;
  readonly requestHash: string;
  readonly requestSalt: string;
  readonly now: Date;
  readonly expiresAt: Date;
  readonly staleBefore: Date;
}

export interface IdempotencyStore {
  /**
   * Claims (project, key) atomically with insert-on-conflict, after dropping an expired record (or
   * an in-flight one older than `staleBefore`, left by a crashed process). When the key is taken,
   * returns the existing record so the caller can compare request hashes.
   */
  claim(claim: NewClaim): Promise<ClaimResult>;
  complete(applicationId: string, key: string, response: StoredResponse): Promise<void>;
  /** Frees a key whose request failed on our side (5xx), so a retry runs the request again. */
  release(applicationId: string, key: string): Promise<void>;
  /** Releases in-flight records created before `before` (their request died); returns how many. */
  releaseStale(before: Date): Promise<number>;
  /** Housekeeping: removes records past their 24 hours. */
  purgeExpired(now: Date): Promise<number>;
}

export function createIdempotencyStore(db: Kysely<Tables>): IdempotencyStore {
  return {
    async claim(claim) {
      await db
        .deleteFrom('idempotency_keys')
        .where('application_id', '=', claim.applicationId)
        .where('idempotency_key', '=', claim.key)
        .where((eb) =>
          eb.or([
            eb('expires_at', '<=', claim.now),
            eb.and([eb('state', '=', 'in_flight'), eb('created_at', '<', claim.staleBefore)]),
          ]),
        )
        .execute();
      const inserted = await db
        .insertInto('idempotency_keys')
        .values({
          application_id: claim.applicationId,
          idempotency_key: claim.key,
          request_hash: claim.requestHash,
          request_salt: claim.requestSalt,
          state: 'in_flight',
          response_status: null,
          response_body: null,
          created_at: claim.now,
          expires_at: claim.expiresAt,
        })
        .onConflict((oc) => oc.columns(['application_id', 'idempotency_key']).doNothing())
        .returning('idempotency_key')
        .executeTakeFirst();
      if (inserted) return { kind: 'claimed' };

      const existing = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('application_id', '=', claim.applicationId)
        .where('idempotency_key', '=', claim.key)
        .executeTakeFirst();
      // Deleted between our insert and select (expired by a concurrent claim): treat as in flight.
      if (!existing) return { kind: 'in_flight', requestHash: claim.requestHash, requestSalt: claim.requestSalt };
      if (existing.state === 'complete' && existing.response_status !== null && existing.response_body !== null) {
        return {
          kind: 'complete',
          requestHash: existing.request_hash,
          requestSalt: existing.request_salt,
          response: { status: existing.response_status, body: existing.response_body },
        };
      }
      return { kind: 'in_flight', requestHash: existing.request_hash, requestSalt: existing.request_salt };
    },

    async complete(applicationId, key, response) {
      await db
        .updateTable('idempotency_keys')
        .set({ state: 'complete', response_status: response.status, response_body: response.body })
        .where('application_id', '=', applicationId)
        .where('idempotency_key', '=', key)
        .where('state', '=', 'in_flight')
        .execute();
    },

    async release(applicationId, key) {
      await db
        .deleteFrom('idempotency_keys')
        .where('application_id', '=', applicationId)
        .where('idempotency_key', '=', key)
        .where('state', '=', 'in_flight')
        .execute();
    },

    async releaseStale(before) {
      const result = await db
        .deleteFrom('idempotency_keys')
        .where('state', '=', 'in_flight')
        .where('created_at', '<', before)
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async purgeExpired(now) {
      const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

// Idempotency-Key records: (project, key) -> request hash, state, and the first response; and the proof of a
// request's key that the HTTP layer hands to the use cases (a charge, a confirm, a sandbox payment remember it).
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Tables } from './db/db.js';

/**
 * How long a request holds its key in flight without a sign of life: the request's process renews the lease every
 * IN_FLIGHT_RENEW_MS while the request runs, however long that is. A lease that ran out was left by a process that
 * died mid-request: a retry takes the key, and the worker's sweep releases it.
 */
export const IN_FLIGHT_LEASE_MS = 15_000;
/** How often a running request renews its key's lease: a third of it, so one late renewal loses nothing. */
export const IN_FLIGHT_RENEW_MS = 5_000;
/**
 * The fixed lease of in-flight records written before leases were renewed (no lease_until): longer than any request
 * of those versions ran.
 */
export const LEGACY_IN_FLIGHT_LEASE_MS = 90_000;

/** The request's Idempotency-Key as the idempotency layer vouches for it: never the key itself. */
export interface IdempotencyKeyProof {
  /** what a charge made under this key stores */
  readonly mac: string;
  /** whether a stored `mac` was made from this same key */
  matches(stored: string): boolean;
}

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
}

export interface IdempotencyStore {
  /**
   * Claims (project, key) atomically with insert-on-conflict, after dropping an expired record (or an in-flight one
   * whose lease ran out: its process died), leased until `now` + IN_FLIGHT_LEASE_MS. When the key is taken,
   * returns the existing record so the caller can compare request hashes.
   */
  claim(claim: NewClaim): Promise<ClaimResult>;
  /** The running request's sign of life: its key's lease from `now`. */
  renew(applicationId: string, key: string, now: Date): Promise<void>;
  complete(applicationId: string, key: string, response: StoredResponse): Promise<void>;
  /** Frees a key whose request failed on our side (5xx), so a retry runs the request again. */
  release(applicationId: string, key: string): Promise<void>;
  /** Releases in-flight records whose lease ran out by `now` (their request died); returns how many. */
  releaseStale(now: Date): Promise<number>;
  /** Housekeeping: removes records past their 24 hours. */
  purgeExpired(now: Date): Promise<number>;
}

/** An in-flight record whose lease ran out by `now` (a renewed one by lease_until, an earlier version's by age). */
function leaseRanOut(eb: ExpressionBuilder<Tables, 'idempotency_keys'>, now: Date) {
  return eb.and([
    eb('state', '=', 'in_flight'),
    eb.or([
      eb('lease_until', '<', now),
      eb.and([eb('lease_until', 'is', null), eb('created_at', '<', new Date(now.getTime() - LEGACY_IN_FLIGHT_LEASE_MS))]),
    ]),
  ]);
}

export function createIdempotencyStore(db: Kysely<Tables>): IdempotencyStore {
  return {
    async claim(claim) {
      await db
        .deleteFrom('idempotency_keys')
        .where('application_id', '=', claim.applicationId)
        .where('idempotency_key', '=', claim.key)
        .where((eb) => eb.or([eb('expires_at', '<=', claim.now), leaseRanOut(eb, claim.now)]))
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
          lease_until: new Date(claim.now.getTime() + IN_FLIGHT_LEASE_MS),
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

    async renew(applicationId, key, now) {
      await db
        .updateTable('idempotency_keys')
        .set({ lease_until: new Date(now.getTime() + IN_FLIGHT_LEASE_MS) })
        .where('application_id', '=', applicationId)
        .where('idempotency_key', '=', key)
        .where('state', '=', 'in_flight')
        .execute();
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

    async releaseStale(now) {
      const result = await db
        .deleteFrom('idempotency_keys')
        .where((eb) => leaseRanOut(eb, now))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async purgeExpired(now) {
      const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

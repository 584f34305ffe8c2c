// The verification store's records of the workflow (VerificationRecords, contract.ts): the OTP sent, the request
// failed, the resend count, the confirmation with the person sealed, the expiry, and the purge of CI / DI. store.ts
// puts them together with the rest of the store.
import { sql, type Kysely } from 'kysely';
import type { VerifiedPerson } from '../gateways/rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import { VerificationStatus, type VerificationRecords } from './contract.js';
import type { Tables } from '../platform/db/db.js';

/** A verification no longer awaiting its OTP can be resent no more: its phone's hash is dropped. */
const NO_PHONE_INDEX = { phone_key_id: null, phone_mac: null } as const;

/** The cipher's context of a verification's sealed personal field: a seal opens only for its receipt and field. */
export const sealContext = (receiptId: string, field: string) => `verification:${receiptId}:${field}`;

/** The update of a verification still in status `from`: a retried write finds it moved on and changes nothing. */
export const transitionFrom = (db: Kysely<Tables>, receiptId: string, from: number) =>
  db.updateTable('verifications').where('receipt_id', '=', receiptId).where('status', '=', from);

export function verificationRecords(db: Kysely<Tables>, cipher: FieldCipher): VerificationRecords {
  const seal = (receiptId: string, field: string, value: string) => cipher.seal(value, sealContext(receiptId, field));
  return {
    async markOtpSent(receiptId, tid) {
      await transitionFrom(db, receiptId, VerificationStatus.Sending)
        .set({ status: VerificationStatus.AwaitingOtp, tid, updated_at: sql<Date>`now()` })
        .execute();
    },

    async markRequestFailed(receiptId, failure) {
      await transitionFrom(db, receiptId, VerificationStatus.Sending)
        .set({
          status: VerificationStatus.RequestFailed,
          ...NO_PHONE_INDEX,
          failure_error_name: failure.errorName,
          failure_pg_error_code: failure.pgErrorCode ?? null,
          updated_at: sql<Date>`now()`,
        })
        .execute();
    },

    async setRealarmCount(receiptId, numberOfRealarms) {
      // Set, not increment: the workflow owns the count, so a retried write cannot count twice.
      await db
        .updateTable('verifications')
        .set({ number_of_realarms: numberOfRealarms, updated_at: sql<Date>`now()` })
        .where('receipt_id', '=', receiptId)
        .execute();
    },

    async markConfirmed(receiptId, person: VerifiedPerson, authenticatedAt) {
      await transitionFrom(db, receiptId, VerificationStatus.AwaitingOtp)
        .set({
          status: VerificationStatus.Verified,
          ...NO_PHONE_INDEX,
          authenticated_at: authenticatedAt,
          name_sealed: seal(receiptId, 'name', person.name),
          phone_sealed: seal(receiptId, 'phone', person.phone),
          birth_sealed: seal(receiptId, 'birth', person.birth),
          unique_sealed: seal(receiptId, 'unique', person.ci),
          di_sealed: seal(receiptId, 'di', person.di),
          gender: person.gender,
          foreigner: person.foreigner,
          carrier: person.carrier,
          updated_at: sql<Date>`now()`,
        })
        .execute();
    },

    async markExpired(receiptId) {
      await transitionFrom(db, receiptId, VerificationStatus.AwaitingOtp)
        .set({
          status: VerificationStatus.Expired,
          ...NO_PHONE_INDEX,
          expired_at: sql<Date>`now()`,
          updated_at: sql<Date>`now()`,
        })
        .execute();
    },

    async purgeIdentifiers(receiptId) {
      await db
        .updateTable('verifications')
        .set({ unique_sealed: null, di_sealed: null, identifiers_purged_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
        .where('receipt_id', '=', receiptId)
        .where('identifiers_purged_at', 'is', null)
        .execute();
    },
  };
}

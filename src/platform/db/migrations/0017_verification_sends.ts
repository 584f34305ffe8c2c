// Caps on verification SMS (src/verification/sends-store.ts): one row per OTP send paygate attempted (a request that
// sends an SMS or pass push, and a resend), counted per project and per phone over the configured windows. The phone
// is never stored: only a keyed HMAC of it (a keyring subkey, purpose 'phone-index') and the id of the key that made
// it, so a key rotation still finds the sends of the window. Rows older than the longest window are purged.
// A verification keeps its phone's HMAC while it awaits an OTP, for the resends' count; it is cleared when the
// verification leaves that status.
import { sql, type ColumnType, type Generated } from 'kysely';
import { defineMigration } from '../migrate.js';

type NullableText = ColumnType<string | null, string | null | undefined, string | null>;

export interface VerificationSendsTable {
  id: Generated<number>;
  application_id: string;
  /** keyring id of the key that made phone_mac; null with phone_mac (a resend of a run from before the caps) */
  phone_key_id: string | null;
  /** HMAC-SHA256 (hex) of the phone under the 'phone-index' subkey of phone_key_id */
  phone_mac: string | null;
  /** 'request' or 'resend' */
  kind: 'request' | 'resend';
  /** the database's wall clock when the send was counted (never the sandbox clock) */
  sent_at: Generated<Date>;
}

export interface VerificationSendTables {
  verification_sends: VerificationSendsTable;
  verifications: {
    /** the requested phone's HMAC (as verification_sends.phone_mac) while the OTP is awaited; null otherwise */
    phone_key_id: NullableText;
    phone_mac: NullableText;
  };
}

export const migration = defineMigration<VerificationSendTables>({
  name: '0017_verification_sends',
  async up(db) {
    await sql`create table verification_sends (
      id bigint generated always as identity primary key,
      application_id text not null references projects(application_id) on delete cascade,
      phone_key_id text,
      phone_mac text,
      kind text not null check (kind in ('request', 'resend')),
      sent_at timestamptz not null default clock_timestamp(),
      check ((phone_key_id is null) = (phone_mac is null))
    )`.execute(db);
    await sql`create index verification_sends_phone on verification_sends (application_id, phone_mac, sent_at)`.execute(db);
    await sql`create index verification_sends_project on verification_sends (application_id, sent_at)`.execute(db);
    await sql`create index verification_sends_sent_at on verification_sends (sent_at)`.execute(db);
    await sql`alter table verifications add column phone_key_id text, add column phone_mac text`.execute(db);
  },
});

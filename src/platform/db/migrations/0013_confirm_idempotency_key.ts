// A confirm sent under an Idempotency-Key notes which (a keyed MAC, never the key) before the workflow runs it: a
// retry under the same key whose first request verified and died before its answer was stored gets the verified
// result, while a confirm of a verified receipt under another key, or none, is still 2404.
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

export interface ConfirmIdempotencyTables {
  verifications: {
    /** keyring MAC of (project, Idempotency-Key) of the latest confirm sent with one; null otherwise */
    confirm_key_mac: ColumnType<string | null, string | null | undefined, string | null>;
  };
}

export const migration = defineMigration<ConfirmIdempotencyTables>({
  name: '0013_confirm_idempotency_key',
  async up(db) {
    await sql`alter table verifications add column confirm_key_mac text`.execute(db);
  },
});

// A charge made under an Idempotency-Key remembers which (as a keyed MAC, never the key itself): a retry under the
// same key whose first request died after the charge completed but before its answer was stored gets the receipt,
// while another request with the same order_id still gets 9410.
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

export interface ChargeIdempotencyTables {
  receipts: {
    /** keyring MAC of (project, Idempotency-Key) of the request that made the charge; null without a key */
    idempotency_key_mac: ColumnType<string | null, string | null | undefined, string | null>;
  };
}

export const migration = defineMigration<ChargeIdempotencyTables>({
  name: '0012_charge_idempotency_key',
  async up(db) {
    await sql`alter table receipts add column idempotency_key_mac text`.execute(db);
  },
});

// An Idempotency-Key held in flight by a request is kept alive by that request: its process renews the lease every
// few seconds while the request runs (IN_FLIGHT_LEASE_MS). A process that dies mid-request stops renewing, and its
// key is free again within one lease instead of answering 9409 "in progress" for a fixed 90 seconds. Records written
// before this column hold null: they keep the fixed lease from their created_at.
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

export interface IdempotencyLeaseTables {
  idempotency_keys: { lease_until: ColumnType<Date | null, Date | null | undefined, Date | null> };
}

export const migration = defineMigration<IdempotencyLeaseTables>({
  name: '0022_idempotency_lease',
  async up(db) {
    await sql`alter table idempotency_keys add column lease_until timestamptz`.execute(db);
  },
});

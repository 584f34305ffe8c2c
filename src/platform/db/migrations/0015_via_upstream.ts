// Where a billing key or a payment lives: at a local PG (false), or at the project's upstream provider (true), whose
// ids they carry. Decided once, at issuance or charge: a key issued at the provider is charged there even if a
// local PG of the same name exists, and cannot be charged at all once the project's provider is removed.
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

type ViaUpstream = ColumnType<boolean, boolean | undefined, boolean>;

export interface ViaUpstreamTables {
  billing_keys: { via_upstream: ViaUpstream };
  receipts: { via_upstream: ViaUpstream };
}

export const migration = defineMigration<ViaUpstreamTables>({
  name: '0015_via_upstream',
  async up(db) {
    await sql`alter table billing_keys add column via_upstream boolean not null default false`.execute(db);
    await sql`alter table receipts add column via_upstream boolean not null default false`.execute(db);
  },
});

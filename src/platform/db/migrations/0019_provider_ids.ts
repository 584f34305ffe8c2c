// The ids a provider assigns (a relayed billing key's billing_key and receipt_id, a relayed charge's, escrow
// payment's or verification's receipt_id) are unique at that provider for that account, not across the projects of
// this installation. They are kept beside paygate's own id, unique per project, while paygate's globally unique id
// stays the primary key every internal reference uses (cancels, escrow orders, workflow ids, reconcile). The merchant
// sees the provider's id (`provider_* ?? own id`) and names it; a lookup by it is scoped to the project.
// Existing relayed rows were stored under the provider's id: it becomes their provider id as well, so they answer
// to the same id as before and their own id (already unique) stays. Verifications are not backfilled (below).
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

type ProviderId = ColumnType<string | null, string | null | undefined, string | null>;

export interface ProviderIdTables {
  receipts: { provider_receipt_id: ProviderId };
  billing_keys: { provider_billing_key: ProviderId; provider_receipt_id: ProviderId };
  verifications: { provider_receipt_id: ProviderId };
}

export const migration = defineMigration<ProviderIdTables>({
  name: '0019_provider_ids',
  async up(db) {
    await sql`alter table receipts add column provider_receipt_id text`.execute(db);
    await sql`update receipts set provider_receipt_id = receipt_id where via_upstream`.execute(db);
    // leading with the provider's id: the project's lookup and the any-project one (ownership errors) both use it
    await sql`create unique index receipts_provider_receipt_id on receipts (provider_receipt_id, application_id)`.execute(db);

    await sql`alter table billing_keys add column provider_billing_key text`.execute(db);
    await sql`alter table billing_keys add column provider_receipt_id text`.execute(db);
    await sql`update billing_keys set provider_billing_key = billing_key, provider_receipt_id = receipt_id where via_upstream`.execute(
      db,
    );
    await sql`create unique index billing_keys_provider_billing_key on billing_keys (provider_billing_key, application_id)`.execute(
      db,
    );
    await sql`create unique index billing_keys_provider_receipt_id on billing_keys (provider_receipt_id, application_id)`.execute(
      db,
    );

    await sql`alter table verifications add column provider_receipt_id text`.execute(db);
    // not backfilled: nothing tells an old relayed verification from a local one, and both answer to their own id
    // (the provider's, for a relayed one) through `coalesce(provider_receipt_id, receipt_id)`; they live 30 minutes
    await sql`create unique index verifications_provider_receipt_id on verifications (provider_receipt_id, application_id)`.execute(
      db,
    );
  },
});

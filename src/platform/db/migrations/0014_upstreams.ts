// A project's upstream provider: the PGs it names are served by a provider that speaks the same API, which
// paygate calls with the project's keys at that provider. The provider's secret key is sealed, bound to the row.
import { sql } from 'kysely';
import { defineMigration } from '../migrate.js';
import type { Json } from './0001_platform.js';

export interface UpstreamsTable {
  application_id: string;
  /** the provider's {base_url}: the address before /v2 */
  base_url: string;
  client_key: string;
  /** the provider's secret key, sealed by the field cipher with the application_id as associated data */
  secret_key_sealed: string;
  /** PG names, as merchants send them in `pg`, that the provider serves for this project */
  pgs: Json<string[]>;
  /** the provider's {message_url}; null: the project's messaging stays local */
  message_url: string | null;
  /** the last refusal of paygate's keys by the provider (1204 / 1216), until the configuration changes */
  last_error_code: number | null;
  last_error_name: string | null;
  last_error_message: string | null;
  last_error_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface UpstreamTables {
  upstreams: UpstreamsTable;
}

export const migration = defineMigration<UpstreamTables>({
  name: '0014_upstreams',
  async up(db) {
    await sql`create table upstreams (
      application_id text primary key references projects(application_id) on delete cascade,
      base_url text not null,
      client_key text not null,
      secret_key_sealed text not null,
      pgs jsonb not null,
      message_url text,
      last_error_code integer,
      last_error_name text,
      last_error_message text,
      last_error_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`.execute(db);
  },
});

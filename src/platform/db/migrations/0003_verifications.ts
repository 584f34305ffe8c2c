// REST identity verifications. Personal data columns hold sealed values (src/platform/security/field-cipher.ts),
// never plain text; unique (CI) and di are set to null when the lookup window ends.
import { sql, type ColumnType, type Generated } from 'kysely';
import { defineMigration } from '../migrate.js';
import type { Json } from './0001_platform.js';

export interface VerificationsTable {
  receipt_id: string;
  application_id: string;
  authentication_id: string;
  order_name: string;
  pg: string;
  authenticate_type: 'sms' | 'pass';
  status: number;
  tid: string | null;
  number_of_realarms: ColumnType<number, number | undefined, number>;
  metadata: Json<Record<string, unknown>>;
  extra: Json<Record<string, unknown>>;
  client_ip: string;
  site_url: string | null;
  /** sealed */
  name_sealed: string | null;
  /** sealed */
  phone_sealed: string | null;
  /** sealed, YYYYMMDD */
  birth_sealed: string | null;
  /** sealed CI */
  unique_sealed: string | null;
  /** sealed DI */
  di_sealed: string | null;
  gender: number | null;
  foreigner: string | null;
  carrier: string | null;
  failure_error_name: string | null;
  failure_pg_error_code: string | null;
  requested_at: Date;
  authenticated_at: Date | null;
  expired_at: Date | null;
  identifiers_purged_at: Date | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface VerificationTables {
  verifications: VerificationsTable;
}

export const migration = defineMigration<VerificationTables>({
  name: '0003_verifications',
  async up(db) {
    await sql`create table verifications (
      receipt_id text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      authentication_id text not null,
      order_name text not null,
      pg text not null,
      authenticate_type text not null check (authenticate_type in ('sms', 'pass')),
      status integer not null,
      tid text,
      number_of_realarms integer not null default 0,
      metadata jsonb not null,
      extra jsonb not null,
      client_ip text not null,
      site_url text,
      name_sealed text,
      phone_sealed text,
      birth_sealed text,
      unique_sealed text,
      di_sealed text,
      gender smallint,
      foreigner text,
      carrier text,
      failure_error_name text,
      failure_pg_error_code text,
      requested_at timestamptz not null,
      authenticated_at timestamptz,
      expired_at timestamptz,
      identifiers_purged_at timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
    await sql`create index verifications_application on verifications (application_id, authentication_id)`.execute(db);
  },
});

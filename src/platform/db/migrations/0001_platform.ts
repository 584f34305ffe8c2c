// Projects (merchant applications with their keys) and legacy Bearer access tokens.
import { sql, type ColumnType, type Generated } from 'kysely';
import { defineMigration } from '../migrate.js';

/** JSON column: read back parsed, written as a JSON string (one form for pg and PGlite). */
export type Json<T> = ColumnType<T, string, string>;

export interface MerchantInfo {
  company_name?: string;
  addr1?: string;
  addr2?: string;
  zipcode?: string;
  phone?: string;
}

export interface ProjectsTable {
  application_id: string;
  name: string;
  client_key: string;
  /** SHA-256 hex of the secret key; the key itself is shown once at creation */
  secret_key_hash: string;
  private_key_hash: string;
  seller: boolean;
  scopes: Json<string[]>;
  /** empty = any source IP */
  allowed_ips: Json<string[]>;
  api_version: string;
  webhook_url: string | null;
  merchant: Json<MerchantInfo>;
  key_expires_at: Date | null;
  pgs: Json<string[]>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface AccessTokensTable {
  /** SHA-256 hex of the bearer token */
  token_hash: string;
  application_id: string;
  expires_at: Date;
  created_at: Generated<Date>;
}

export interface PlatformTables {
  projects: ProjectsTable;
  access_tokens: AccessTokensTable;
}

export const migration = defineMigration<PlatformTables>({
  name: '0001_platform',
  async up(db) {
    await sql`create table projects (
      application_id text primary key,
      name text not null,
      client_key text not null unique,
      secret_key_hash text not null,
      private_key_hash text not null,
      seller boolean not null,
      scopes jsonb not null,
      allowed_ips jsonb not null,
      api_version text not null,
      webhook_url text,
      merchant jsonb not null,
      key_expires_at timestamptz,
      pgs jsonb not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`.execute(db);
    await sql`create table access_tokens (
      token_hash text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    )`.execute(db);
    await sql`create index access_tokens_expires_at on access_tokens (expires_at)`.execute(db);
  },
});

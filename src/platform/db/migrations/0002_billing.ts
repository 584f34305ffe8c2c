// Key-in billing: billing keys, payment receipts and their cancels, Idempotency-Key records.
// No column holds raw card data: only the masked number and card company are kept.
import { sql, type Generated } from 'kysely';
import { defineMigration } from '../migrate.js';
import type { Json } from './0001_platform.js';

export interface BillingKeysTable {
  /** paygate's own id handed to the merchant */
  billing_key: string;
  application_id: string;
  /** the issuance receipt */
  receipt_id: string;
  subscription_id: string;
  order_name: string;
  pg: string;
  /** the gateway's key; never leaves the server */
  gateway_billing_key: string;
  card_masked_number: string;
  card_company: string;
  card_company_code: string;
  card_type: 'credit' | 'check';
  expires_at: Date;
  published_at: Date;
  requested_at: Date;
  destroyed_at: Date | null;
}

export interface ReceiptsTable {
  receipt_id: string;
  application_id: string;
  order_id: string;
  order_name: string;
  billing_key: string | null;
  /** what makes a retry under the same order_id "the same charge" (billing key, amounts, quota, name) */
  charge_hash: string | null;
  pg: string;
  method: string;
  method_symbol: string;
  price: number;
  tax_free: number;
  cancelled_price: Generated<number>;
  cancelled_tax_free: Generated<number>;
  status: number;
  card_masked_number: string | null;
  card_company: string | null;
  card_company_code: string | null;
  card_type: string | null;
  card_quota: number;
  approval_no: string | null;
  gateway_tid: string | null;
  metadata: Json<Record<string, unknown>> | null;
  requested_at: Date;
  purchased_at: Date | null;
  cancelled_at: Date | null;
  /** a cancel holds the receipt until then while it waits for the PG */
  cancel_locked_until: Date | null;
}

export interface ReceiptCancelsTable {
  cancel_key: string;
  receipt_id: string;
  /** the merchant's cancel_id; a repeat returns the stored response */
  cancel_id: string | null;
  amount: number;
  tax_free: number;
  gateway_cancel_tid: string;
  cancelled_at: Date;
  /** the receipt as returned by this cancel */
  response: Json<Record<string, unknown>>;
}

export interface IdempotencyKeysTable {
  application_id: string;
  idempotency_key: string;
  /** salted SHA-256 of method, route and canonical body */
  request_hash: string;
  request_salt: string;
  state: 'in_flight' | 'complete';
  response_status: number | null;
  /** the response body only (never the request, which may hold card data) */
  response_body: string | null;
  created_at: Date;
  expires_at: Date;
}

export interface BillingTables {
  billing_keys: BillingKeysTable;
  receipts: ReceiptsTable;
  receipt_cancels: ReceiptCancelsTable;
  idempotency_keys: IdempotencyKeysTable;
}

export const migration = defineMigration<BillingTables>({
  name: '0002_billing',
  async up(db) {
    await sql`create table billing_keys (
      billing_key text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      receipt_id text not null unique,
      subscription_id text not null,
      order_name text not null,
      pg text not null,
      gateway_billing_key text not null,
      card_masked_number text not null,
      card_company text not null,
      card_company_code text not null,
      card_type text not null,
      expires_at timestamptz not null,
      published_at timestamptz not null,
      requested_at timestamptz not null,
      destroyed_at timestamptz
    )`.execute(db);
    await sql`create index billing_keys_subscription on billing_keys (application_id, subscription_id)`.execute(db);

    await sql`create table receipts (
      receipt_id text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      order_id text not null,
      order_name text not null,
      billing_key text references billing_keys(billing_key),
      charge_hash text,
      pg text not null,
      method text not null,
      method_symbol text not null,
      price bigint not null check (price > 0),
      tax_free bigint not null check (tax_free >= 0 and tax_free <= price),
      cancelled_price bigint not null default 0 check (cancelled_price >= 0 and cancelled_price <= price),
      cancelled_tax_free bigint not null default 0 check (cancelled_tax_free >= 0 and cancelled_tax_free <= tax_free),
      status integer not null,
      card_masked_number text,
      card_company text,
      card_company_code text,
      card_type text,
      card_quota integer not null default 0,
      approval_no text,
      gateway_tid text,
      metadata jsonb,
      requested_at timestamptz not null,
      purchased_at timestamptz,
      cancelled_at timestamptz,
      cancel_locked_until timestamptz,
      unique (application_id, order_id)
    )`.execute(db);

    await sql`create table receipt_cancels (
      cancel_key text primary key,
      receipt_id text not null references receipts(receipt_id) on delete cascade,
      cancel_id text,
      amount bigint not null,
      tax_free bigint not null,
      gateway_cancel_tid text not null,
      cancelled_at timestamptz not null,
      response jsonb not null,
      unique (receipt_id, cancel_id)
    )`.execute(db);

    await sql`create table idempotency_keys (
      application_id text not null references projects(application_id) on delete cascade,
      idempotency_key text not null,
      request_hash text not null,
      request_salt text not null,
      state text not null check (state in ('in_flight', 'complete')),
      response_status integer,
      response_body text,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      primary key (application_id, idempotency_key)
    )`.execute(db);
    await sql`create index idempotency_keys_expires_at on idempotency_keys (expires_at)`.execute(db);
  },
});

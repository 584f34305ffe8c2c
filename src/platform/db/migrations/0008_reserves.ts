// Reserved charges: one row per reserve, its charge fields as requested, its status and times, the receipt
// once charged, and the feedback delivery of its result. The order_id is the project's (one reserve per
// order_id; the receipts table still guards the charge itself).
import { sql } from 'kysely';
import { defineMigration } from '../migrate.js';
import type { Json } from './0001_platform.js';

export interface ReservesTable {
  reserve_id: string;
  application_id: string;
  billing_key: string;
  order_id: string;
  order_name: string;
  price: number;
  tax_free: number;
  /** instalment months, as the charge request's card_quota */
  quota: number;
  /** the buyer as given, sealed JSON bound to the row; null: none given */
  user_sealed: string | null;
  items: Json<unknown[]> | null;
  metadata: Json<Record<string, unknown>> | null;
  feedback_url: string | null;
  content_type: string | null;
  /** reserved | executing | paid | failed | revoked */
  status: string;
  receipt_id: string | null;
  /** a failed reserve's catalog error name, and the PG's code when the PG refused */
  error_code: string | null;
  pg_error_code: string | null;
  feedback_delivery_id: string | null;
  requested_at: Date;
  execute_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  revoked_at: Date | null;
}

export interface ReserveTables {
  reserves: ReservesTable;
}

export const migration = defineMigration<ReserveTables>({
  name: '0008_reserves',
  async up(db) {
    await sql`create table reserves (
      reserve_id text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      billing_key text not null,
      order_id text not null,
      order_name text not null,
      price bigint not null check (price > 0),
      tax_free bigint not null check (tax_free >= 0 and tax_free <= price),
      quota integer not null default 0,
      user_sealed text,
      items jsonb,
      metadata jsonb,
      feedback_url text,
      content_type text,
      status text not null check (status in ('reserved', 'executing', 'paid', 'failed', 'revoked')),
      receipt_id text,
      error_code text,
      pg_error_code text,
      feedback_delivery_id text,
      requested_at timestamptz not null,
      execute_at timestamptz not null,
      started_at timestamptz,
      finished_at timestamptz,
      revoked_at timestamptz,
      unique (application_id, order_id)
    )`.execute(db);
  },
});

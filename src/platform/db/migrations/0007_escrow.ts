// Escrow orders: one row per escrow payment (its status and times, the buyer saved at payment, sealed) and
// the history of every event the order saw (applied or ignored), with the webhook delivery each produced.
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

export interface EscrowOrdersTable {
  receipt_id: string;
  application_id: string;
  pg: string;
  status: number;
  /** the payment-time buyer (username, phone, email, address, zipcode) as sealed JSON, bound to the row; null: none given */
  buyer_sealed: string | null;
  tracking_number: string | null;
  delivery_corp: string | null;
  shipping_started_at: Date | null;
  receipt_confirmed_at: Date | null;
  receipt_revoked_at: Date | null;
  /** the first escrow PG's purchase confirmation page, from shipping start */
  confirm_url: string | null;
  /** the workflow's sequence number of the last event recorded: a retried activity records nothing twice */
  last_seq: ColumnType<number, number | undefined, number>;
  created_at: Date;
  updated_at: Date;
}

export interface EscrowEventsTable {
  receipt_id: string;
  seq: number;
  event: string;
  /** 'api' | 'pg_notification' | 'reconcile' */
  source: string;
  from_status: number;
  /** null: recorded and ignored */
  to_status: number | null;
  note: string | null;
  notification_id: string | null;
  /** the ESCROW_STATUS_CHANGED delivery this transition produced; null when none (no webhook_url, ignored) */
  delivery_id: string | null;
  occurred_at: Date;
  recorded_at: Date;
}

export interface ProjectEscrowColumns {
  /** hours without a PG notification (in 3 or -2) before the order is reconciled with the PG */
  escrow_reconcile_hours: ColumnType<number, number | undefined, number>;
}

export interface EscrowTables {
  escrow_orders: EscrowOrdersTable;
  escrow_events: EscrowEventsTable;
  projects: ProjectEscrowColumns;
}

export const migration = defineMigration<EscrowTables>({
  name: '0007_escrow',
  async up(db) {
    await sql`create table escrow_orders (
      receipt_id text primary key references receipts(receipt_id) on delete cascade,
      application_id text not null references projects(application_id) on delete cascade,
      pg text not null,
      status integer not null check (status in (0, 3, 1, -2, -3, -1)),
      buyer_sealed text,
      tracking_number text,
      delivery_corp text,
      shipping_started_at timestamptz,
      receipt_confirmed_at timestamptz,
      receipt_revoked_at timestamptz,
      confirm_url text,
      last_seq integer not null default 0,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`.execute(db);
    await sql`create table escrow_events (
      receipt_id text not null references escrow_orders(receipt_id) on delete cascade,
      seq integer not null,
      event text not null,
      source text not null check (source in ('api', 'pg_notification', 'reconcile')),
      from_status integer not null,
      to_status integer,
      note text,
      notification_id text,
      delivery_id text,
      occurred_at timestamptz not null,
      recorded_at timestamptz not null,
      primary key (receipt_id, seq)
    )`.execute(db);
    await sql`alter table projects add column escrow_reconcile_hours integer not null default 72
      check (escrow_reconcile_hours between 1 and 8760)`.execute(db);
  },
});

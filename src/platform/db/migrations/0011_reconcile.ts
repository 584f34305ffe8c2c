// Reconciliation (issue 13): what a charge or cancel that left paygate's control needs to be settled by
// its reconcile workflow without the merchant: when the process calling the PG stops being its owner, the
// cancel the PG may have made, the feedback_url to tell, and the attempt number that keeps a PG key of an
// order_id freed by a decline from being reused.
import { sql, type ColumnType, type Generated } from 'kysely';
import { defineMigration } from '../migrate.js';

/** A cancel sent to the PG whose answer is not recorded yet (the receipt's cancel lease is held for it). */
export interface PendingCancel {
  readonly cancel_key: string;
  readonly cancel_id: string | null;
  readonly pg_key: string;
  readonly amount: number;
  readonly tax_free: number;
  readonly fully_cancelled: boolean;
  readonly reason: string;
}

export interface ReceiptReconcileColumns {
  /** a pending charge's PG call is owned by a live request until then; after it, by its reconcile workflow */
  pg_call_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** 0 for the first attempt of an order_id; n after n declines freed it (part of the PG key) */
  pg_key_attempt: Generated<number>;
  /** where the charge's result is posted: {url, content_type} */
  feedback: ColumnType<{ url: string; content_type: string } | null, string | null | undefined, string | null>;
  /** set when a reconcile workflow (not a request) recorded the PG's answer */
  reconciled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  cancel_pending: ColumnType<PendingCancel | null, string | null | undefined, string | null>;
}

export interface OrderDeclinesTable {
  application_id: string;
  order_id: string;
  /** how many charges of this order_id the PG declined: the next attempt's number */
  declines: number;
}

export interface ReconcileTables {
  receipts: ReceiptReconcileColumns;
  order_declines: OrderDeclinesTable;
}

export const migration = defineMigration<ReconcileTables>({
  name: '0011_reconcile',
  async up(db) {
    await sql`alter table receipts
      add column pg_call_until timestamptz,
      add column pg_key_attempt integer not null default 0,
      add column feedback jsonb,
      add column reconciled_at timestamptz,
      add column cancel_pending jsonb`.execute(db);
    // the sweep's two questions: pending charges and pending cancels whose owner is gone
    await sql`create index receipts_pending_call on receipts (pg_call_until) where status = 0`.execute(db);
    await sql`create index receipts_pending_cancel on receipts (cancel_locked_until) where cancel_pending is not null`.execute(
      db,
    );
    await sql`create table order_declines (
      application_id text not null references projects(application_id) on delete cascade,
      order_id text not null,
      declines integer not null,
      primary key (application_id, order_id)
    )`.execute(db);
  },
});

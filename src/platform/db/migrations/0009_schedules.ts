// Subscription schedules: one row per schedule (its plan, its current price / order_name / metadata, its
// status and next due time as its workflow last wrote them) and one row per period it reached (charged,
// failed, retrying or skipped). The workflow is the one writer after creation, through guarded updates.
import { sql } from 'kysely';
import { defineMigration } from '../migrate.js';
import type { Json } from './0001_platform.js';

export interface SchedulesTable {
  schedule_id: string;
  application_id: string;
  billing_key: string;
  order_name: string;
  price: number;
  tax_free: number;
  /** day | week | month | year */
  interval: string;
  interval_count: number;
  start_at: Date;
  end_at: Date | null;
  max_charges: number | null;
  retry_delays: Json<number[]>;
  /** pause | cancel */
  on_exhausted: string;
  metadata: Json<Record<string, unknown>> | null;
  /** active | past_due | paused | cancelled | completed */
  status: string;
  next_charge_at: Date | null;
  charges_made: number;
  created_at: Date;
  updated_at: Date;
}

export interface ScheduleChargesTable {
  schedule_id: string;
  period: number;
  order_id: string;
  due_at: Date;
  /** paid | failed | retrying | skipped */
  status: string;
  attempts: number;
  /** the price and name of the period, taken at its first attempt (a PATCH applies from the next period) */
  price: number;
  tax_free: number;
  order_name: string;
  receipt_id: string | null;
  pg_error_code: string | null;
  charged_at: Date | null;
}

export interface ScheduleTables {
  schedules: SchedulesTable;
  schedule_charges: ScheduleChargesTable;
}

export const migration = defineMigration<ScheduleTables>({
  name: '0009_schedules',
  async up(db) {
    await sql`create table schedules (
      schedule_id text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      billing_key text not null,
      order_name text not null,
      price bigint not null check (price > 0),
      tax_free bigint not null check (tax_free >= 0),
      interval text not null check (interval in ('day', 'week', 'month', 'year')),
      interval_count integer not null check (interval_count between 1 and 365),
      start_at timestamptz not null,
      end_at timestamptz,
      max_charges integer,
      retry_delays jsonb not null,
      on_exhausted text not null check (on_exhausted in ('pause', 'cancel')),
      metadata jsonb,
      status text not null check (status in ('active', 'past_due', 'paused', 'cancelled', 'completed')),
      next_charge_at timestamptz,
      charges_made integer not null default 0,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`.execute(db);
    await sql`create index schedules_by_project on schedules (application_id, created_at desc)`.execute(db);
    await sql`create index schedules_by_key on schedules (billing_key)`.execute(db);
    await sql`create table schedule_charges (
      schedule_id text not null references schedules(schedule_id) on delete cascade,
      period integer not null,
      order_id text not null,
      due_at timestamptz not null,
      status text not null check (status in ('paid', 'failed', 'retrying', 'skipped')),
      attempts integer not null default 0,
      price bigint not null,
      tax_free bigint not null,
      order_name text not null,
      receipt_id text,
      pg_error_code text,
      charged_at timestamptz,
      primary key (schedule_id, period)
    )`.execute(db);
  },
});

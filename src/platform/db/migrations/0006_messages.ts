// Sandbox messages (POST /sandbox/v1/messages) and deliveries beyond an endpoint's own URL: a charge's
// feedback_url receives its receipt signed with the project's secret, as JSON or a form body.
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

export interface MessagesTable {
  /** the message's id, the first of its events' tags */
  receipt_id: string;
  application_id: string;
  ref_id: string | null;
  template_code: string;
  /** sealed, bound to the row */
  phone_sealed: string;
  /** 'delivered' | 'failed' | 'fallback_sms' */
  outcome: string;
  created_at: Date;
}

export interface DeliveryDestinationColumns {
  /** 'endpoint': the endpoint's URL, counted in its health; 'feedback': a charge's feedback_url, only signed with its secret */
  destination: ColumnType<string, string | undefined, string>;
  /** the body's content type: application/json, or application/x-www-form-urlencoded for a feedback_url that asked */
  content_type: ColumnType<string, string | undefined, string>;
}

export interface MessageTables {
  messages: MessagesTable;
  webhook_deliveries: DeliveryDestinationColumns;
}

export const migration = defineMigration<MessageTables>({
  name: '0006_messages',
  async up(db) {
    await sql`create table messages (
      receipt_id text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      ref_id text,
      template_code text not null,
      phone_sealed text not null,
      outcome text not null check (outcome in ('delivered', 'failed', 'fallback_sms')),
      created_at timestamptz not null
    )`.execute(db);
    await sql`alter table webhook_deliveries
      add column destination text not null default 'endpoint' check (destination in ('endpoint', 'feedback')),
      add column content_type text not null default 'application/json'
        check (content_type in ('application/json', 'application/x-www-form-urlencoded'))`.execute(db);
    // the start-up sweep looks for deliveries left 'ready' without a workflow
    await sql`create index webhook_deliveries_ready on webhook_deliveries (created_at) where status = 'ready'`.execute(db);
  },
});

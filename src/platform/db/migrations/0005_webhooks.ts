// Outbound webhooks: one endpoint per (project, kind) with its sealed signing secrets and health,
// one delivery per (event, endpoint), one row per attempt. Deliveries hold the body sealed, never a secret;
// an attempt keeps at most the first 2 KB of the response body.
import { sql, type ColumnType, type Generated } from 'kysely';
import { defineMigration } from '../migrate.js';
import type { Json } from './0001_platform.js';

export interface WebhookEndpointsTable {
  endpoint_id: string;
  application_id: string;
  /** 'message': the messaging sub-service's webhook */
  kind: string;
  url: string | null;
  events: Json<number[]>;
  enabled: boolean;
  /** sealed `whsec_...`; null until the first save or rotation */
  secret_sealed: string | null;
  /** sealed; still signs until previous_secret_expires_at */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  /** attempts per delivery created from now on (max_retry) */
  retry_count: number;
  consecutive_failures: ColumnType<number, number | undefined, number>;
  auto_disabled_at: Date | null;
  last_sent_at: Date | null;
  last_status: number | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface WebhookDeliveriesTable {
  delivery_id: string;
  endpoint_id: string;
  application_id: string;
  event: string;
  event_code: number;
  url: string;
  /** 'ready' | 'doing' | 'done' | 'failed' */
  status: string;
  retry_count: ColumnType<number, number | undefined, number>;
  max_retry: number;
  tags: Json<string[]>;
  /** sealed JSON text: the exact body of every attempt */
  payload_sealed: string;
  /** tests and manual retries are sent even while the endpoint is disabled */
  sends_when_disabled: boolean;
  created_at: Date;
  updated_at: Generated<Date>;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  attempt: number;
  attempted_at: Date;
  duration_ms: number;
  http_status: number | null;
  /** the first 2 KB of the response body */
  response_body: string | null;
  error: string | null;
  retry_after_ms: number | null;
}

export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}

export const migration = defineMigration<WebhookTables>({
  name: '0005_webhooks',
  async up(db) {
    await sql`create table webhook_endpoints (
      endpoint_id text primary key,
      application_id text not null references projects(application_id) on delete cascade,
      kind text not null,
      url text,
      events jsonb not null,
      enabled boolean not null,
      secret_sealed text,
      previous_secret_sealed text,
      previous_secret_expires_at timestamptz,
      retry_count integer not null check (retry_count between 1 and 20),
      consecutive_failures integer not null default 0,
      auto_disabled_at timestamptz,
      last_sent_at timestamptz,
      last_status integer,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      unique (application_id, kind)
    )`.execute(db);
    await sql`create table webhook_deliveries (
      delivery_id text primary key,
      endpoint_id text not null references webhook_endpoints(endpoint_id) on delete cascade,
      application_id text not null,
      event text not null,
      event_code integer not null,
      url text not null,
      status text not null check (status in ('ready', 'doing', 'done', 'failed')),
      retry_count integer not null default 0,
      max_retry integer not null,
      tags jsonb not null,
      payload_sealed text not null,
      sends_when_disabled boolean not null,
      created_at timestamptz not null,
      updated_at timestamptz not null default now()
    )`.execute(db);
    await sql`create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, created_at desc, delivery_id)`.execute(
      db,
    );
    await sql`create index webhook_deliveries_pending on webhook_deliveries (endpoint_id, status)`.execute(db);
    await sql`create table webhook_attempts (
      delivery_id text not null references webhook_deliveries(delivery_id) on delete cascade,
      attempt integer not null,
      attempted_at timestamptz not null,
      duration_ms integer not null,
      http_status integer,
      response_body text,
      error text,
      retry_after_ms bigint,
      primary key (delivery_id, attempt)
    )`.execute(db);
  },
});

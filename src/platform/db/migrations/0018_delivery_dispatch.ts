// Webhook deliveries without a workflow: the delivery row is the job. The worker's dispatcher
// (src/webhooks/dispatcher.ts) claims due rows with FOR UPDATE SKIP LOCKED, sends them at once, and a failed attempt
// only writes when the next one is due. Rows of an earlier release keep next_attempt_at null: the `delivery:<id>`
// workflow that owns them finishes them (the dispatcher takes over only those left without a run).
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

type NullableDate = ColumnType<Date | null, Date | null | undefined, Date | null>;
type NullableInt = ColumnType<number | null, number | null | undefined, number | null>;

export interface DeliveryDispatchColumns {
  /**
   * When the dispatcher makes the next attempt (the business clock: the sandbox clock's advance moves the ladder as it
   * moved the workflows' timers). Null on a row a `delivery:<id>` workflow of an earlier release owns.
   */
  next_attempt_at: NullableDate;
  /** the lease of the dispatcher that claimed the row ('doing'), on the database's clock: past it, another reclaims */
  claimed_until: NullableDate;
  /** the delivery fails after this attempt number: max_retry, or the one attempt of a manual retry */
  last_attempt: NullableInt;
}

export interface AttemptScheduleColumns {
  /** the wait before the next attempt chosen after this one (the ladder's rung with jitter, or Retry-After) */
  retry_in_ms: NullableInt;
}

export interface DeliveryDispatchTables {
  webhook_deliveries: DeliveryDispatchColumns;
  webhook_attempts: AttemptScheduleColumns;
}

export const migration = defineMigration<DeliveryDispatchTables>({
  name: '0018_delivery_dispatch',
  async up(db) {
    await sql`alter table webhook_deliveries
      add column next_attempt_at timestamptz,
      add column claimed_until timestamptz,
      add column last_attempt integer`.execute(db);
    await sql`alter table webhook_attempts add column retry_in_ms bigint`.execute(db);
    // the dispatcher's two questions: which waiting rows are due, which claims have lapsed
    await sql`create index webhook_deliveries_due on webhook_deliveries (next_attempt_at)
      where status = 'ready' and next_attempt_at is not null`.execute(db);
    await sql`create index webhook_deliveries_claimed on webhook_deliveries (claimed_until)
      where status = 'doing' and next_attempt_at is not null`.execute(db);
  },
});

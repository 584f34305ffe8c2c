// The schedule store's lifecycle writes (table schedules): a new schedule, one whose workflow never started, its
// status moves and its patch. store.ts puts them together with the periods (store-charges.ts) and the reads.
import type { Kysely, Selectable } from 'kysely';
import type { ScheduleRequest, ScheduleStatus } from './rules.js';
import type { Tables } from '../platform/db/db.js';
import type { SchedulesTable } from '../platform/db/migrations/0009_schedules.js';

export interface ScheduleLifecycleQueries {
  insert(s: {
    scheduleId: string;
    applicationId: string;
    request: ScheduleRequest;
    firstDueAt: Date;
    now: Date;
  }): Promise<Selectable<SchedulesTable>>;
  /** A schedule whose workflow could not be started: it never existed. */
  delete(scheduleId: string): Promise<void>;
  /** Moves the status; only from `from` (default: anything not ended). Returns the row as it is now. */
  setStatus(
    scheduleId: string,
    to: ScheduleStatus,
    now: Date,
    opts?: { from?: readonly ScheduleStatus[]; nextChargeAt?: Date | null },
  ): Promise<Selectable<SchedulesTable>>;
  patch(
    scheduleId: string,
    patch: { price?: number; orderName?: string; metadata?: Record<string, unknown> },
    now: Date,
  ): Promise<Selectable<SchedulesTable>>;
}

/** The schedule's row by its id: what a guarded write that changed nothing answers with. */
export const scheduleById = (db: Kysely<Tables>, scheduleId: string) =>
  db.selectFrom('schedules').selectAll().where('schedule_id', '=', scheduleId);

export function scheduleLifecycleQueries(db: Kysely<Tables>): ScheduleLifecycleQueries {
  return {
    async insert({ scheduleId, applicationId, request, firstDueAt, now }) {
      return db
        .insertInto('schedules')
        .values({
          schedule_id: scheduleId,
          application_id: applicationId,
          billing_key: request.billingKey,
          order_name: request.orderName,
          price: request.price,
          tax_free: request.taxFree,
          interval: request.plan.interval,
          interval_count: request.plan.intervalCount,
          start_at: new Date(request.plan.startAt),
          end_at: request.plan.endAt === undefined ? null : new Date(request.plan.endAt),
          max_charges: request.plan.maxCharges ?? null,
          retry_delays: JSON.stringify(request.retryDelaysSeconds),
          on_exhausted: request.onExhausted,
          metadata: request.metadata === undefined ? null : JSON.stringify(request.metadata),
          status: 'active',
          next_charge_at: firstDueAt,
          charges_made: 0,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    async delete(scheduleId) {
      await db.deleteFrom('schedules').where('schedule_id', '=', scheduleId).execute();
    },

    async setStatus(scheduleId, to, now, opts = {}) {
      const from = opts.from ?? ['active', 'past_due', 'paused'];
      const updated = await db
        .updateTable('schedules')
        .set({
          status: to,
          updated_at: now,
          ...(opts.nextChargeAt !== undefined ? { next_charge_at: opts.nextChargeAt } : {}),
        })
        .where('schedule_id', '=', scheduleId)
        .where('status', 'in', [...from])
        .returningAll()
        .executeTakeFirst();
      return updated ?? scheduleById(db, scheduleId).executeTakeFirstOrThrow();
    },

    async patch(scheduleId, patch, now) {
      return db
        .updateTable('schedules')
        .set({
          updated_at: now,
          ...(patch.price !== undefined ? { price: patch.price } : {}),
          ...(patch.orderName !== undefined ? { order_name: patch.orderName } : {}),
          ...(patch.metadata !== undefined ? { metadata: JSON.stringify(patch.metadata) } : {}),
        })
        .where('schedule_id', '=', scheduleId)
        .returningAll()
        .executeTakeFirstOrThrow();
    },
  };
}

// Subscription schedules. After creation only the schedule's workflow writes (through its activities), and
// every write is guarded by the state it leaves, so an activity run again after a crash changes nothing twice.
import { type Kysely, type Selectable, sql } from 'kysely';
import type { ScheduleChargeStatus, ScheduleChargeView, ScheduleInterval, ScheduleStatus, ScheduleView } from './rules.js';
import type { Tables } from '../platform/db/db.js';
import type { ScheduleChargesTable, SchedulesTable } from '../platform/db/migrations/0009_schedules.js';
import { type ScheduleChargeQueries, scheduleChargeQueries } from './store-charges.js';
import { scheduleById, type ScheduleLifecycleQueries, scheduleLifecycleQueries } from './store-lifecycle.js';

export type ScheduleRow = Selectable<SchedulesTable>;
export type ScheduleChargeRow = Selectable<ScheduleChargesTable>;

const ENDED: readonly ScheduleStatus[] = ['cancelled', 'completed'];

/** The schedule's lifecycle writes (store-lifecycle.ts), its periods (store-charges.ts), and the reads. */
export interface ScheduleStore extends ScheduleLifecycleQueries, ScheduleChargeQueries {
  find(scheduleId: string): Promise<ScheduleRow | undefined>;
  list(
    applicationId: string,
    q: { billingKey?: string; status?: ScheduleStatus; page: number; limit: number },
  ): Promise<{ rows: ScheduleRow[]; count: number }>;
  /** The schedules of a billing key that have not ended (the key is being destroyed). */
  openForKey(billingKey: string): Promise<ScheduleRow[]>;
  view(row: ScheduleRow): ScheduleView;
  chargeView(row: ScheduleChargeRow): ScheduleChargeView;
}

export function createScheduleStore(db: Kysely<Tables>): ScheduleStore {
  return {
    ...scheduleLifecycleQueries(db),
    ...scheduleChargeQueries(db),

    async find(scheduleId) {
      return scheduleById(db, scheduleId).executeTakeFirst();
    },

    async list(applicationId, q) {
      let base = db.selectFrom('schedules').where('application_id', '=', applicationId);
      if (q.billingKey !== undefined) base = base.where('billing_key', '=', q.billingKey);
      if (q.status !== undefined) base = base.where('status', '=', q.status);
      const rows = await base
        .selectAll()
        .orderBy('created_at', 'desc')
        .orderBy('schedule_id', 'desc')
        .limit(q.limit)
        .offset((q.page - 1) * q.limit)
        .execute();
      const counted = await base.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
      return { rows, count: Number(counted.n) };
    },

    async openForKey(billingKey) {
      return db
        .selectFrom('schedules')
        .selectAll()
        .where('billing_key', '=', billingKey)
        .where('status', 'not in', [...ENDED])
        .execute();
    },

    view(row) {
      return {
        scheduleId: row.schedule_id,
        billingKey: row.billing_key,
        orderName: row.order_name,
        price: Number(row.price),
        taxFree: Number(row.tax_free),
        interval: row.interval as ScheduleInterval,
        intervalCount: row.interval_count,
        startAt: row.start_at,
        endAt: row.end_at,
        maxCharges: row.max_charges,
        status: row.status as ScheduleStatus,
        nextChargeAt: row.next_charge_at,
        chargesMade: row.charges_made,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
        metadata: row.metadata,
      };
    },

    chargeView(row) {
      return {
        period: row.period,
        orderId: row.order_id,
        dueAt: row.due_at,
        status: row.status as ScheduleChargeStatus,
        attempts: row.attempts,
        receiptId: row.receipt_id,
        pgErrorCode: row.pg_error_code,
        chargedAt: row.charged_at,
      };
    },
  };
}

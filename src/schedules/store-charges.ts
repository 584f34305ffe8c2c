// The schedule store's periods (table schedule_charges): a period's row opened at its first attempt, its paid or
// declined outcome, the periods skipped while paused, and the schedule's charge history. store.ts puts them together.
import { transactionally } from '../platform/db/transaction.js';
import { type Kysely, type Selectable, sql } from 'kysely';
import type { ScheduleStatus } from './rules.js';
import type { Tables } from '../platform/db/db.js';
import type { ScheduleChargesTable, SchedulesTable } from '../platform/db/migrations/0009_schedules.js';
import { scheduleById } from './store-lifecycle.js';

/** A schedule still billing: the statuses a charge outcome may change. */
const BILLING: readonly ScheduleStatus[] = ['active', 'past_due'];

export interface ScheduleChargeQueries {
  /**
   * The period's row, created at its first attempt with the schedule's price and name of that moment; `opened`
   * when this call created it (no earlier attempt got this far, so nothing was charged for the period yet).
   */
  openCharge(
    row: Selectable<SchedulesTable>,
    period: number,
    dueAt: Date,
    orderId: string,
  ): Promise<{ charge: Selectable<ScheduleChargesTable>; opened: boolean }>;
  findCharge(scheduleId: string, period: number): Promise<Selectable<ScheduleChargesTable> | undefined>;
  /**
   * Records a paid period once, in one statement: the charge row, charges_made + 1, the schedule back to active.
   * `charge` is the period's row as the activity read it (its due time, price and name never change).
   */
  recordPaid(
    charge: Selectable<ScheduleChargesTable>,
    paid: { attempt: number; orderId: string; receiptId: string; chargedAt: Date; nextChargeAt: Date | null },
    now: Date,
  ): Promise<{ schedule: Selectable<SchedulesTable>; charge: Selectable<ScheduleChargesTable> }>;
  /** Records a declined attempt (retrying, or failed when it was the last). */
  recordDeclined(
    scheduleId: string,
    period: number,
    d: { attempt: number; orderId: string; pgErrorCode: string | null; final: boolean },
  ): Promise<Selectable<ScheduleChargesTable>>;
  /** Missed periods while paused: recorded skipped (never charged); a period left retrying becomes failed. */
  skipPeriods(
    row: Selectable<SchedulesTable>,
    periods: readonly { period: number; dueAt: Date; orderId: string }[],
  ): Promise<void>;
  charges(scheduleId: string): Promise<Selectable<ScheduleChargesTable>[]>;
}

const chargeOf = (db: Kysely<Tables>, scheduleId: string, period: number) =>
  db.selectFrom('schedule_charges').selectAll().where('schedule_id', '=', scheduleId).where('period', '=', period);

/** A period's new row, not yet attempted, with the schedule's price and name of this moment. */
function newPeriodRow(
  row: Selectable<SchedulesTable>,
  p: { period: number; dueAt: Date; orderId: string },
  status: 'retrying' | 'skipped',
) {
  return {
    schedule_id: row.schedule_id,
    period: p.period,
    order_id: p.orderId,
    due_at: p.dueAt,
    status,
    attempts: 0,
    price: row.price,
    // a PATCH may have lowered the price under the tax-free part
    tax_free: Math.min(row.tax_free, row.price),
    order_name: row.order_name,
    receipt_id: null,
    pg_error_code: null,
    charged_at: null,
  };
}

export function scheduleChargeQueries(db: Kysely<Tables>): ScheduleChargeQueries {
  return {
    async openCharge(row, period, dueAt, orderId) {
      const opened = await db
        .insertInto('schedule_charges')
        .values(newPeriodRow(row, { period, dueAt, orderId }, 'retrying'))
        .onConflict((oc) => oc.columns(['schedule_id', 'period']).doNothing())
        .returningAll()
        .executeTakeFirst();
      if (opened) return { charge: opened, opened: true };
      return { charge: await chargeOf(db, row.schedule_id, period).executeTakeFirstOrThrow(), opened: false };
    },

    async findCharge(scheduleId, period) {
      return chargeOf(db, scheduleId, period).executeTakeFirst();
    },

    async recordPaid(charge, paid, now) {
      const { schedule_id: scheduleId, period } = charge;
      const set = {
        status: 'paid',
        attempts: paid.attempt,
        order_id: paid.orderId,
        receipt_id: paid.receiptId,
        charged_at: paid.chargedAt,
        pg_error_code: null,
      } as const;
      const billing = sql<boolean>`${sql.ref('status')} in (${sql.join([...BILLING])})`;
      // one statement, so atomic without a transaction: the schedule moves only with the charge row it pays
      const schedule = await db
        .with('paid_charge', (q) =>
          q
            .updateTable('schedule_charges')
            .set(set)
            .where('schedule_id', '=', scheduleId)
            .where('period', '=', period)
            .where('status', '!=', 'paid')
            .returning('schedule_id'),
        )
        .updateTable('schedules')
        .set((eb) => ({
          charges_made: eb('charges_made', '+', 1),
          updated_at: now,
          status: sql<string>`case when ${billing} then 'active' else ${sql.ref('status')} end`,
          next_charge_at: sql<Date | null>`case when ${billing} then ${paid.nextChargeAt}::timestamptz else ${sql.ref('next_charge_at')} end`,
        }))
        .where('schedule_id', '=', scheduleId)
        .where((eb) => eb.exists(eb.selectFrom('paid_charge').select('paid_charge.schedule_id')))
        .returningAll()
        .executeTakeFirst();
      if (schedule) return { schedule, charge: { ...charge, ...set } };
      // already paid (an earlier attempt of the activity recorded it): the rows as they are
      return {
        schedule: await scheduleById(db, scheduleId).executeTakeFirstOrThrow(),
        charge: await chargeOf(db, scheduleId, period).executeTakeFirstOrThrow(),
      };
    },

    async recordDeclined(scheduleId, period, d) {
      const updated = await db
        .updateTable('schedule_charges')
        .set({ status: d.final ? 'failed' : 'retrying', attempts: d.attempt, order_id: d.orderId, pg_error_code: d.pgErrorCode })
        .where('schedule_id', '=', scheduleId)
        .where('period', '=', period)
        .where('status', '=', 'retrying')
        .where('attempts', '<', d.attempt)
        .returningAll()
        .executeTakeFirst();
      return updated ?? chargeOf(db, scheduleId, period).executeTakeFirstOrThrow();
    },

    async skipPeriods(row, periods) {
      await transactionally(db, async (trx) => {
        await trx
          .updateTable('schedule_charges')
          .set({ status: 'failed' })
          .where('schedule_id', '=', row.schedule_id)
          .where('status', '=', 'retrying')
          .execute();
        for (const p of periods) {
          await trx
            .insertInto('schedule_charges')
            .values(newPeriodRow(row, p, 'skipped'))
            .onConflict((oc) => oc.columns(['schedule_id', 'period']).doNothing())
            .execute();
        }
      });
    },

    async charges(scheduleId) {
      return db
        .selectFrom('schedule_charges')
        .selectAll()
        .where('schedule_id', '=', scheduleId)
        .orderBy('period', 'asc')
        .execute();
    },
  };
}

// Subscription schedules. After creation only the schedule's workflow writes (through its activities), and
// every write is guarded by the state it leaves, so an activity run again after a crash changes nothing twice.
import { transactionally } from '../platform/db/transaction.js';
import { type Kysely, type Selectable, sql } from 'kysely';
import type {
  ScheduleChargeStatus,
  ScheduleChargeView,
  ScheduleInterval,
  ScheduleRequest,
  ScheduleStatus,
  ScheduleView,
} from './rules.js';
import type { Tables } from '../platform/db/db.js';
import type { ScheduleChargesTable, SchedulesTable } from '../platform/db/migrations/0009_schedules.js';

export type ScheduleRow = Selectable<SchedulesTable>;
export type ScheduleChargeRow = Selectable<ScheduleChargesTable>;

/** A schedule still billing: the statuses a charge outcome may change. */
const BILLING: readonly ScheduleStatus[] = ['active', 'past_due'];
const ENDED: readonly ScheduleStatus[] = ['cancelled', 'completed'];

export interface ScheduleStore {
  insert(s: {
    scheduleId: string;
    applicationId: string;
    request: ScheduleRequest;
    firstDueAt: Date;
    now: Date;
  }): Promise<ScheduleRow>;
  /** A schedule whose workflow could not be started: it never existed. */
  delete(scheduleId: string): Promise<void>;
  find(scheduleId: string): Promise<ScheduleRow | undefined>;
  list(
    applicationId: string,
    q: { billingKey?: string; status?: ScheduleStatus; page: number; limit: number },
  ): Promise<{ rows: ScheduleRow[]; count: number }>;
  /** The schedules of a billing key that have not ended (the key is being destroyed). */
  openForKey(billingKey: string): Promise<ScheduleRow[]>;
  /** Moves the status; only from `from` (default: anything not ended). Returns the row as it is now. */
  setStatus(
    scheduleId: string,
    to: ScheduleStatus,
    now: Date,
    opts?: { from?: readonly ScheduleStatus[]; nextChargeAt?: Date | null },
  ): Promise<ScheduleRow>;
  patch(
    scheduleId: string,
    patch: { price?: number; orderName?: string; metadata?: Record<string, unknown> },
    now: Date,
  ): Promise<ScheduleRow>;
  /**
   * The period's row, created at its first attempt with the schedule's price and name of that moment; `opened`
   * when this call created it (no earlier attempt got this far, so nothing was charged for the period yet).
   */
  openCharge(
    row: ScheduleRow,
    period: number,
    dueAt: Date,
    orderId: string,
  ): Promise<{ charge: ScheduleChargeRow; opened: boolean }>;
  findCharge(scheduleId: string, period: number): Promise<ScheduleChargeRow | undefined>;
  /**
   * Records a paid period once, in one statement: the charge row, charges_made + 1, the schedule back to active.
   * `charge` is the period's row as the activity read it (its due time, price and name never change).
   */
  recordPaid(
    charge: ScheduleChargeRow,
    paid: { attempt: number; orderId: string; receiptId: string; chargedAt: Date; nextChargeAt: Date | null },
    now: Date,
  ): Promise<{ schedule: ScheduleRow; charge: ScheduleChargeRow }>;
  /** Records a declined attempt (retrying, or failed when it was the last). */
  recordDeclined(
    scheduleId: string,
    period: number,
    d: { attempt: number; orderId: string; pgErrorCode: string | null; final: boolean },
  ): Promise<ScheduleChargeRow>;
  /** Missed periods while paused: recorded skipped (never charged); a period left retrying becomes failed. */
  skipPeriods(row: ScheduleRow, periods: readonly { period: number; dueAt: Date; orderId: string }[]): Promise<void>;
  charges(scheduleId: string): Promise<ScheduleChargeRow[]>;
  view(row: ScheduleRow): ScheduleView;
  chargeView(row: ScheduleChargeRow): ScheduleChargeView;
}

export function createScheduleStore(db: Kysely<Tables>): ScheduleStore {
  const byId = (scheduleId: string) => db.selectFrom('schedules').selectAll().where('schedule_id', '=', scheduleId);
  const chargeOf = (scheduleId: string, period: number) =>
    db.selectFrom('schedule_charges').selectAll().where('schedule_id', '=', scheduleId).where('period', '=', period);
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

    async find(scheduleId) {
      return byId(scheduleId).executeTakeFirst();
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
      return updated ?? byId(scheduleId).executeTakeFirstOrThrow();
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

    async openCharge(row, period, dueAt, orderId) {
      const opened = await db
        .insertInto('schedule_charges')
        .values({
          schedule_id: row.schedule_id,
          period,
          order_id: orderId,
          due_at: dueAt,
          status: 'retrying',
          attempts: 0,
          price: row.price,
          // a PATCH may have lowered the price under the tax-free part
          tax_free: Math.min(row.tax_free, row.price),
          order_name: row.order_name,
          receipt_id: null,
          pg_error_code: null,
          charged_at: null,
        })
        .onConflict((oc) => oc.columns(['schedule_id', 'period']).doNothing())
        .returningAll()
        .executeTakeFirst();
      if (opened) return { charge: opened, opened: true };
      return { charge: await chargeOf(row.schedule_id, period).executeTakeFirstOrThrow(), opened: false };
    },

    async findCharge(scheduleId, period) {
      return chargeOf(scheduleId, period).executeTakeFirst();
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
        schedule: await byId(scheduleId).executeTakeFirstOrThrow(),
        charge: await chargeOf(scheduleId, period).executeTakeFirstOrThrow(),
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
      return updated ?? chargeOf(scheduleId, period).executeTakeFirstOrThrow();
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
            .values({
              schedule_id: row.schedule_id,
              period: p.period,
              order_id: p.orderId,
              due_at: p.dueAt,
              status: 'skipped',
              attempts: 0,
              price: row.price,
              tax_free: Math.min(row.tax_free, row.price),
              order_name: row.order_name,
              receipt_id: null,
              pg_error_code: null,
              charged_at: null,
            })
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

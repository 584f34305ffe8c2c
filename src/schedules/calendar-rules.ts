// The Asia/Seoul billing calendar of subscription schedules: when each period is due. Pure and free of the request
// checks (rules.ts), so the schedule workflow imports it without them: everything a workflow imports is evaluated
// again for each run the worker holds.

export const SCHEDULE_INTERVALS = ['day', 'week', 'month', 'year'] as const;
export type ScheduleInterval = (typeof SCHEDULE_INTERVALS)[number];
export const SCHEDULE_STATUSES = ['active', 'past_due', 'paused', 'cancelled', 'completed'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

/** Whatever the calendar needs: the anchor (start_at) and the step. */
export interface SchedulePlan {
  readonly startAt: string;
  readonly interval: ScheduleInterval;
  readonly intervalCount: number;
  readonly endAt?: string | undefined;
  readonly maxCharges?: number | undefined;
}

// Asia/Seoul has had no daylight saving since 1988: a fixed +09:00 is exact.
const KST_OFFSET_MS = 9 * 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

function daysInMonth(year: number, month0: number): number {
  return new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
}

/**
 * The due time of a period (1 = start_at). Days and weeks are fixed lengths in KST; months and years count
 * calendar months from the anchor's KST date, the anchor day clamped to the month's end (Jan 31 -> Feb 28/29,
 * Mar 31, Apr 30): computed from the anchor every time, so a short month never drifts the later ones.
 */
export function dueAt(plan: SchedulePlan, period: number): Date {
  const anchor = Date.parse(plan.startAt);
  const steps = (period - 1) * plan.intervalCount;
  if (plan.interval === 'day') return new Date(anchor + steps * DAY_MS);
  if (plan.interval === 'week') return new Date(anchor + steps * 7 * DAY_MS);
  const local = new Date(anchor + KST_OFFSET_MS);
  const months = plan.interval === 'month' ? steps : steps * 12;
  const total = local.getUTCMonth() + months;
  const year = local.getUTCFullYear() + Math.floor(total / 12);
  const month0 = ((total % 12) + 12) % 12;
  const day = Math.min(local.getUTCDate(), daysInMonth(year, month0));
  const msOfDay = anchor + KST_OFFSET_MS - Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate());
  return new Date(Date.UTC(year, month0, day) + msOfDay - KST_OFFSET_MS);
}

/** Whether a period lies beyond end_at or max_charges (given the charges made so far). */
export function isPastEnd(plan: SchedulePlan, period: number, chargesMade: number): boolean {
  if (plan.maxCharges !== undefined && chargesMade >= plan.maxCharges) return true;
  return plan.endAt !== undefined && dueAt(plan, period).getTime() > Date.parse(plan.endAt);
}

/** The first period due strictly after `now`, not before `from` (resume: the missed ones are skipped). */
export function firstPeriodAfter(plan: SchedulePlan, now: Date, from: number): number {
  let period = from;
  while (dueAt(plan, period).getTime() <= now.getTime()) period++;
  return period;
}

/** The next `count` due times from `period` on, stopping at end_at / max_charges. */
export function upcoming(plan: SchedulePlan, period: number, chargesMade: number, count: number): Date[] {
  const out: Date[] = [];
  for (let p = period, made = chargesMade; out.length < count && !isPastEnd(plan, p, made); p++, made++) {
    out.push(dueAt(plan, p));
  }
  return out;
}

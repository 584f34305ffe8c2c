// The schedule workflow's status activities: pause, resume (the periods missed while paused recorded skipped),
// cancel and complete, each with its SUBSCRIPTION_* webhook when it moved the status, and the patch.
import type { SchedulePatchArgs } from '../schedules/contract.js';
import { dueAt, firstPeriodAfter, type SchedulePlan, type ScheduleStatus, scheduleOrderId } from '../schedules/rules.js';

import { notify, nowOf, type ScheduleActivityDeps, scheduleRow } from './schedule-context.js';

export async function pauseSchedule(deps: ScheduleActivityDeps, input: { scheduleId: string; nonce: string }): Promise<void> {
  const row = await deps.stores.schedules.setStatus(input.scheduleId, 'paused', nowOf(deps), {
    from: ['active', 'past_due'],
    nextChargeAt: null,
  });
  if (row.status === 'paused') await notify(deps, 'SUBSCRIPTION_PAUSED', row, `pause:${input.nonce}`);
}

export async function resumeSchedule(
  deps: ScheduleActivityDeps,
  input: { scheduleId: string; plan: SchedulePlan; fromPeriod: number; chargesMade: number },
): Promise<{ period: number; status: ScheduleStatus }> {
  const row = await scheduleRow(deps, input.scheduleId);
  const now = nowOf(deps);
  const period = firstPeriodAfter(input.plan, now, input.fromPeriod);
  const missed = [];
  for (let p = input.fromPeriod; p < period; p++) {
    missed.push({ period: p, dueAt: dueAt(input.plan, p), orderId: scheduleOrderId(row.schedule_id, p) });
  }
  await deps.stores.schedules.skipPeriods(row, missed);
  const resumed = await deps.stores.schedules.setStatus(input.scheduleId, 'active', now, {
    from: ['paused'],
    nextChargeAt: dueAt(input.plan, period),
  });
  return { period, status: resumed.status as ScheduleStatus };
}

export async function cancelSchedule(deps: ScheduleActivityDeps, input: { scheduleId: string; nonce: string }): Promise<void> {
  const row = await deps.stores.schedules.setStatus(input.scheduleId, 'cancelled', nowOf(deps), { nextChargeAt: null });
  if (row.status === 'cancelled') await notify(deps, 'SUBSCRIPTION_CANCELLED', row, `cancel:${input.nonce}`);
}

export async function patchSchedule(
  deps: ScheduleActivityDeps,
  input: { scheduleId: string; patch: SchedulePatchArgs },
): Promise<void> {
  await deps.stores.schedules.patch(input.scheduleId, input.patch, nowOf(deps));
}

export async function completeSchedule(deps: ScheduleActivityDeps, input: { scheduleId: string }): Promise<ScheduleStatus> {
  const row = await deps.stores.schedules.setStatus(input.scheduleId, 'completed', nowOf(deps), {
    from: ['active', 'past_due'],
    nextChargeAt: null,
  });
  if (row.status === 'completed') await notify(deps, 'SUBSCRIPTION_COMPLETED', row, 'completed');
  return row.status as ScheduleStatus;
}

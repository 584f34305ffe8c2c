// The subscription schedule workflow's activities: a period's charge through the charge service (order_id
// <schedule_id>-<period>, every dunning attempt on its own PG key), the status changes of pause / resume / cancel / complete, the patch, and the
// SUBSCRIPTION_* webhooks to the project's webhook_url. Each is safe to run again: the period's row and the
// schedule's status guard every write, the charge service's order_id claim makes a retried charge re-drive
// (never repeat) the PG call, and each webhook has a delivery id derived from (schedule, period, event).
// The activities are files of their own (schedule-charge.ts, schedule-status.ts, on schedule-context.ts); this
// factory binds them under the names the workflow calls them by.
import { chargePeriod, type ChargePeriodInput } from './schedule-charge.js';
import type { ScheduleActivityDeps } from './schedule-context.js';
import { cancelSchedule, completeSchedule, patchSchedule, pauseSchedule, resumeSchedule } from './schedule-status.js';

export function createScheduleActivities(deps: ScheduleActivityDeps) {
  return {
    chargePeriod: (input: ChargePeriodInput) => chargePeriod(deps, input),
    pauseSchedule: (input: Parameters<typeof pauseSchedule>[1]) => pauseSchedule(deps, input),
    resumeSchedule: (input: Parameters<typeof resumeSchedule>[1]) => resumeSchedule(deps, input),
    cancelSchedule: (input: Parameters<typeof cancelSchedule>[1]) => cancelSchedule(deps, input),
    patchSchedule: (input: Parameters<typeof patchSchedule>[1]) => patchSchedule(deps, input),
    completeSchedule: (input: Parameters<typeof completeSchedule>[1]) => completeSchedule(deps, input),
  };
}

export type ScheduleActivities = ReturnType<typeof createScheduleActivities>;

// Subscription schedules: the database answers what it can (the billing key, ownership, the status), then the
// schedule's workflow (src/workflows/schedules.ts) is started, or sent its update. Charges are the charge
// service's, made by the workflow's activity at each due time. The start and the updates are use cases of their own
// (create.ts, updates.ts, on context.ts); this service puts them together with the reads.
import { renderScheduleCharge, type ScheduleListQuery, type SchedulePatch, type ScheduleRequest, upcoming } from './rules.js';
import { formatTimestamp } from '../platform/time.js';
import type { Project } from '../projects/index.js';
import type { OperationLog } from '../platform/operation-log.js';

import { hasEnded, ownSchedule, planOf, renderRow, type ScheduleServiceDeps } from './context.js';
import { createSchedule } from './create.js';
import { cancelSchedule, cancelSchedulesOfKey, patchSchedule, pauseSchedule, resumeSchedule } from './updates.js';

type Rendered = Record<string, unknown>;

export interface ScheduleService {
  create(project: Project, request: ScheduleRequest): Promise<Rendered>;
  get(project: Project, scheduleId: string): Promise<Rendered>;
  list(project: Project, query: ScheduleListQuery): Promise<{ list: Rendered[]; page: number; per: number; count: number }>;
  charges(project: Project, scheduleId: string): Promise<{ list: Rendered[] }>;
  upcoming(project: Project, scheduleId: string, count: number): Promise<{ schedule_id: string; list: string[] }>;
  pause(project: Project, scheduleId: string): Promise<Rendered>;
  resume(project: Project, scheduleId: string): Promise<Rendered>;
  cancel(project: Project, scheduleId: string): Promise<Rendered>;
  patch(project: Project, scheduleId: string, patch: SchedulePatch): Promise<Rendered>;
  /** The billing key was destroyed: every schedule still open on it is cancelled. */
  cancelForKey(project: Project, billingKey: string, log?: Pick<OperationLog, 'warn'>): Promise<number>;
}

export function createScheduleService(deps: ScheduleServiceDeps): ScheduleService {
  return {
    create: (project, request) => createSchedule(deps, project, request),

    async get(project, scheduleId) {
      return renderRow(deps, await ownSchedule(deps, project, scheduleId));
    },

    async list(project, query) {
      const { rows, count } = await deps.stores.schedules.list(project.application_id, query);
      return { list: rows.map((row) => renderRow(deps, row)), page: query.page, per: query.limit, count };
    },

    async charges(project, scheduleId) {
      await ownSchedule(deps, project, scheduleId);
      const rows = await deps.stores.schedules.charges(scheduleId);
      return { list: rows.map((r) => renderScheduleCharge(deps.stores.schedules.chargeView(r))) };
    },

    async upcoming(project, scheduleId, count) {
      const row = await ownSchedule(deps, project, scheduleId);
      if (hasEnded(row) || row.status === 'paused' || row.next_charge_at === null) return { schedule_id: scheduleId, list: [] };
      const plan = planOf(row);
      const charged = await deps.stores.schedules.charges(scheduleId);
      // the next period is the first one after those recorded (a period in dunning is still the next)
      const open = charged.find((c) => c.status === 'retrying');
      const next = open ? open.period : (charged.at(-1)?.period ?? 0) + 1;
      const dues = upcoming(plan, next, row.charges_made, count);
      if (open && row.next_charge_at) dues[0] = row.next_charge_at;
      return { schedule_id: scheduleId, list: dues.map(formatTimestamp) };
    },

    pause: (project, scheduleId) => pauseSchedule(deps, project, scheduleId),
    resume: (project, scheduleId) => resumeSchedule(deps, project, scheduleId),
    cancel: (project, scheduleId) => cancelSchedule(deps, project, scheduleId),
    patch: (project, scheduleId, patch) => patchSchedule(deps, project, scheduleId, patch),
    cancelForKey: (project, billingKey, log) => cancelSchedulesOfKey(deps, project, billingKey, log),
  };
}

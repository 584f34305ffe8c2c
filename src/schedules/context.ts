// What every schedule use case stands on: the dependencies the composition root hands the area, the workflow runtime,
// and the project's own schedule. The use cases that start or update a workflow are files of their own (create.ts,
// updates.ts); service.ts puts them together with the reads.
import { ApiError } from '../platform/errors.js';
import { assertOwnedBy } from '../projects/access.js';
import { isResourceId } from '../payments/receipt-rules.js';
import { renderSchedule, type SchedulePlan } from './rules.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { Project } from '../projects/index.js';
import type { BillingKeyStore } from '../payments/index.js';
import type { ScheduleRow, ScheduleStore } from './store.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, type WorkflowRuntime } from '../platform/temporal/workflow-calls.js';

/** What the schedules area's service is built from (the composition root fills it). */
export interface ScheduleServiceDeps {
  readonly stores: { readonly schedules: ScheduleStore; readonly billingKeys: BillingKeyStore };
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a key issued at one is charged there */
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  readonly workflows?: WorkflowRuntime;
  readonly workflowCallTimeoutMs?: number;
}

export function planOf(row: ScheduleRow): SchedulePlan {
  return {
    startAt: row.start_at.toISOString(),
    interval: row.interval as SchedulePlan['interval'],
    intervalCount: row.interval_count,
    endAt: row.end_at?.toISOString(),
    maxCharges: row.max_charges ?? undefined,
  };
}

export function workflowsOf(deps: ScheduleServiceDeps): WorkflowRuntime {
  if (!deps.workflows) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
  return deps.workflows;
}

export const callTimeoutOf = (deps: ScheduleServiceDeps): number =>
  deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;

/** The project's schedule: SCHEDULE_NOT_FOUND when there is none, 1225 when it is another project's. */
export async function ownSchedule(deps: ScheduleServiceDeps, project: Project, scheduleId: string): Promise<ScheduleRow> {
  if (!isResourceId(scheduleId)) throw new ApiError('SCHEDULE_NOT_FOUND');
  const row = await deps.stores.schedules.find(scheduleId);
  if (!row) throw new ApiError('SCHEDULE_NOT_FOUND');
  assertOwnedBy(project, row.application_id);
  return row;
}

export const renderRow = (deps: ScheduleServiceDeps, row: ScheduleRow): Record<string, unknown> =>
  renderSchedule(deps.stores.schedules.view(row));

export const hasEnded = (row: ScheduleRow): boolean => row.status === 'cancelled' || row.status === 'completed';

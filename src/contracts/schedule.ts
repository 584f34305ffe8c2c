import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { OnExhausted, SchedulePlan, ScheduleStatus } from '../domain/schedule.js';
import type { UpdateProof } from './verification.js';

// The subscription schedule workflow's contract, shared by the workflow, its activities and the API.

export const SCHEDULE_WORKFLOW_TYPE = 'scheduleWorkflow';
export const scheduleWorkflowId = (scheduleId: string): string => `schedule:${scheduleId}`;

/** Everything a run needs, carried whole across continue-as-new. */
export interface ScheduleInput {
  readonly scheduleId: string;
  readonly plan: SchedulePlan;
  readonly retryDelaysSeconds: readonly number[];
  readonly onExhausted: OnExhausted;
  /** the next period to charge (1 = start_at) */
  readonly period: number;
  readonly status: ScheduleStatus;
  readonly chargesMade: number;
  /** declined attempts of `period` so far (dunning) */
  readonly attempts: number;
  /** ISO 8601: the next dunning retry, while attempts > 0 */
  readonly retryAt?: string;
  /** the update proofs' nonces the earlier runs took: a proof replayed after continue-as-new is still refused */
  readonly spentNonces?: readonly string[];
}

export interface ScheduleChargeResult {
  readonly outcome: 'paid' | 'declined' | 'ended';
  readonly status: ScheduleStatus;
  readonly chargesMade: number;
}

/** Failures handed back to the API: ApplicationFailure type = catalog error name. */
export type ScheduleErrorName = 'SCHEDULE_STATE_INVALID';

export interface SchedulePatchArgs {
  readonly price?: number;
  readonly orderName?: string;
  readonly metadata?: Record<string, unknown>;
}

export const pauseScheduleUpdate = defineUpdate<ScheduleStatus, [UpdateProof]>('pauseSchedule');
export const resumeScheduleUpdate = defineUpdate<ScheduleStatus, [UpdateProof]>('resumeSchedule');
export const cancelScheduleUpdate = defineUpdate<ScheduleStatus, [UpdateProof]>('cancelSchedule');
export const patchScheduleUpdate = defineUpdate<ScheduleStatus, [UpdateProof, SchedulePatchArgs]>('patchSchedule');
/** The workflow's own view (tests, diagnostics): status, period, attempts. */
export const scheduleStateQuery = defineQuery<{ status: ScheduleStatus; period: number; attempts: number; runPeriods: number }>(
  'scheduleState',
);

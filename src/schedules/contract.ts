import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { OnExhausted, SchedulePlan, ScheduleStatus } from './rules.js';
import type { UpdateProof } from '../platform/temporal/messages.js';

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
  /**
   * Read by no run any more (kept so inputs recorded by earlier code still decode): a proof now names its run
   * (ScheduleUpdateProof), so nonces are no longer carried across continue-as-new, where they grew without bound.
   */
  readonly spentNonces?: readonly string[];
}

/** The subscription schedule workflow's signature, for the services that start it without importing workflow code. */
export type ScheduleWorkflow = (input: ScheduleInput) => Promise<ScheduleStatus>;

/**
 * A schedule update's proof (see UpdateProof): a fresh nonce, and the id of the run paygate read from describe
 * just before sending it. A run takes only proofs made for itself, each once, so its spent nonces (bounded by
 * its own history, which continue-as-new bounds) are all it must keep: a sealed argument copied from any
 * history — this run's or an earlier one's — is refused, by its nonce or by its run id. A proof that reaches
 * the next run (the update was sent as the run continued as new) is refused too; the service then asks again.
 */
export interface ScheduleUpdateProof extends UpdateProof {
  readonly runId: string;
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

export const pauseScheduleUpdate = defineUpdate<ScheduleStatus, [ScheduleUpdateProof]>('pauseSchedule');
export const resumeScheduleUpdate = defineUpdate<ScheduleStatus, [ScheduleUpdateProof]>('resumeSchedule');
export const cancelScheduleUpdate = defineUpdate<ScheduleStatus, [ScheduleUpdateProof]>('cancelSchedule');
export const patchScheduleUpdate = defineUpdate<ScheduleStatus, [ScheduleUpdateProof, SchedulePatchArgs]>('patchSchedule');
/** The workflow's own view (tests, diagnostics): status, period, attempts. */
export const scheduleStateQuery = defineQuery<{ status: ScheduleStatus; period: number; attempts: number; runPeriods: number }>(
  'scheduleState',
);

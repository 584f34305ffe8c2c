// A schedule's changes after its creation: pause, resume, cancel and patch, each checked against the stored status and
// then sent to the schedule's workflow as an update; and the cancel of every schedule on a destroyed billing key.
import { randomUUID } from 'node:crypto';
import { type WorkflowHandle, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  cancelScheduleUpdate,
  pauseScheduleUpdate,
  patchScheduleUpdate,
  resumeScheduleUpdate,
  type ScheduleUpdateProof,
  scheduleWorkflowId,
} from './contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../platform/temporal/messages.js';
import { ApiError, isErrorName } from '../platform/errors.js';
import { updateTimedOut } from '../platform/temporal/workflow-calls.js';
import type { SchedulePatch } from './rules.js';
import type { Project } from '../projects/index.js';
import type { OperationLog } from '../platform/operation-log.js';

import { callTimeoutOf, hasEnded, ownSchedule, renderRow, type ScheduleServiceDeps, workflowsOf } from './context.js';

/** Proofs sent per request: a second run can only appear if the first continued as new meanwhile. */
const PROOF_ATTEMPTS = 3;

/**
 * Sends an update with a proof for the schedule's current run (read by describe); a validator's refusal becomes
 * its catalog error, and nothing changed. A proof refused as not fresh was made for a run that has since
 * continued as new (the update followed it to the next run): asked again with the new run's id.
 */
async function sendUpdate(
  deps: ScheduleServiceDeps,
  scheduleId: string,
  send: (handle: WorkflowHandle, proof: ScheduleUpdateProof) => Promise<unknown>,
): Promise<void> {
  const { client } = workflowsOf(deps);
  const handle = client.workflow.getHandle(scheduleWorkflowId(scheduleId));
  for (let attempt = 1; ; attempt++) {
    try {
      await client.withDeadline(Date.now() + callTimeoutOf(deps), async () => {
        const { runId } = await handle.describe();
        return send(handle, { nonce: randomUUID(), runId });
      });
      return;
    } catch (err) {
      if (updateTimedOut(err))
        throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The schedule did not answer in time; retry.' });
      if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
        const type = err.cause.type;
        if (type === UPDATE_NOT_AUTHORIZED && attempt < PROOF_ATTEMPTS) continue;
        if (type && isErrorName(type)) throw new ApiError(type);
      }
      // the run ended between the database read and the update
      if (err instanceof WorkflowNotFoundError) throw new ApiError('SCHEDULE_STATE_INVALID');
      throw err;
    }
  }
}

export async function pauseSchedule(
  deps: ScheduleServiceDeps,
  project: Project,
  scheduleId: string,
): Promise<Record<string, unknown>> {
  const row = await ownSchedule(deps, project, scheduleId);
  if (hasEnded(row) || row.status === 'paused') throw new ApiError('SCHEDULE_STATE_INVALID');
  await sendUpdate(deps, scheduleId, (h, proof) => h.executeUpdate(pauseScheduleUpdate, { args: [proof] }));
  return renderRow(deps, await ownSchedule(deps, project, scheduleId));
}

export async function resumeSchedule(
  deps: ScheduleServiceDeps,
  project: Project,
  scheduleId: string,
): Promise<Record<string, unknown>> {
  const row = await ownSchedule(deps, project, scheduleId);
  if (row.status !== 'paused') throw new ApiError('SCHEDULE_STATE_INVALID');
  await sendUpdate(deps, scheduleId, (h, proof) => h.executeUpdate(resumeScheduleUpdate, { args: [proof] }));
  return renderRow(deps, await ownSchedule(deps, project, scheduleId));
}

export async function cancelSchedule(
  deps: ScheduleServiceDeps,
  project: Project,
  scheduleId: string,
): Promise<Record<string, unknown>> {
  const row = await ownSchedule(deps, project, scheduleId);
  if (hasEnded(row)) throw new ApiError('SCHEDULE_STATE_INVALID');
  await sendUpdate(deps, scheduleId, (h, proof) => h.executeUpdate(cancelScheduleUpdate, { args: [proof] }));
  return renderRow(deps, await ownSchedule(deps, project, scheduleId));
}

export async function patchSchedule(
  deps: ScheduleServiceDeps,
  project: Project,
  scheduleId: string,
  patch: SchedulePatch,
): Promise<Record<string, unknown>> {
  const row = await ownSchedule(deps, project, scheduleId);
  if (hasEnded(row)) throw new ApiError('SCHEDULE_STATE_INVALID');
  await sendUpdate(deps, scheduleId, (h, proof) => h.executeUpdate(patchScheduleUpdate, { args: [proof, { ...patch }] }));
  return renderRow(deps, await ownSchedule(deps, project, scheduleId));
}

/** The billing key was destroyed: every schedule of the project still open on it is cancelled. Returns how many. */
export async function cancelSchedulesOfKey(
  deps: ScheduleServiceDeps,
  project: Project,
  billingKey: string,
  log?: Pick<OperationLog, 'warn'>,
): Promise<number> {
  const open = await deps.stores.schedules.openForKey(billingKey);
  let cancelled = 0;
  for (const row of open) {
    if (row.application_id !== project.application_id) continue;
    try {
      await cancelSchedule(deps, project, row.schedule_id);
      cancelled++;
    } catch (err) {
      // the key is destroyed either way: a schedule that could not be told now fails its next charge and cancels itself
      log?.warn({ schedule_id: row.schedule_id, err }, 'could not cancel a schedule of a destroyed billing key');
    }
  }
  return cancelled;
}

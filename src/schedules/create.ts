// POST /v2/subscribe/schedules: the billing key checked as a charge would use it, the schedule stored, and its
// workflow started; a workflow that could not be started leaves no schedule behind.
import { SCHEDULE_WORKFLOW_TYPE, scheduleWorkflowId, type ScheduleWorkflow } from './contract.js';
import { ApiError } from '../platform/errors.js';
import { updateTimedOut } from '../platform/temporal/workflow-calls.js';
import { newId } from '../platform/ids.js';
import { dueAt, type ScheduleRequest } from './rules.js';
import type { Project } from '../projects/index.js';
import { chargingCardGateway, findUsableBillingKey, merchantBillingKey } from '../payments/index.js';
import { bindLogIds } from '../platform/observability/log-context.js';

import { callTimeoutOf, planOf, renderRow, type ScheduleServiceDeps, workflowsOf } from './context.js';

export async function createSchedule(
  deps: ScheduleServiceDeps,
  project: Project,
  request: ScheduleRequest,
): Promise<Record<string, unknown>> {
  const { stores } = deps;
  const key = await findUsableBillingKey(stores, project, request.billingKey);
  await chargingCardGateway(deps, project, key);
  const { client, taskQueue } = workflowsOf(deps);
  const scheduleId = newId();
  bindLogIds({ schedule_id: scheduleId });
  const now = deps.clock();
  const row = await stores.schedules.insert({
    scheduleId,
    applicationId: project.application_id,
    // the key as the merchant names it (an upstream provider's id, unique per project): charged by that name
    request: { ...request, billingKey: merchantBillingKey(key) },
    firstDueAt: dueAt(request.plan, 1),
    now,
  });
  try {
    await client.withDeadline(Date.now() + callTimeoutOf(deps), () =>
      client.workflow.start<ScheduleWorkflow>(SCHEDULE_WORKFLOW_TYPE, {
        workflowId: scheduleWorkflowId(scheduleId),
        taskQueue,
        args: [
          {
            scheduleId,
            plan: planOf(row),
            retryDelaysSeconds: request.retryDelaysSeconds,
            onExhausted: request.onExhausted,
            period: 1,
            status: 'active',
            chargesMade: 0,
            attempts: 0,
          },
        ],
      }),
    );
  } catch (err) {
    // no workflow, no schedule: nothing is left that could charge
    await stores.schedules.delete(scheduleId);
    if (updateTimedOut(err)) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine did not answer; retry.' });
    throw err;
  }
  return renderRow(deps, row);
}

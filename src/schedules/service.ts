// Subscription schedules: the database answers what it can (the billing key, ownership, the status), then the
// schedule's workflow (src/workflows/schedules.ts) is started, or sent its update. Charges are the charge
// service's, made by the workflow's activity at each due time.
import { randomUUID } from 'node:crypto';
import { type WorkflowHandle, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  cancelScheduleUpdate,
  pauseScheduleUpdate,
  patchScheduleUpdate,
  resumeScheduleUpdate,
  SCHEDULE_WORKFLOW_TYPE,
  type ScheduleUpdateProof,
  scheduleWorkflowId,
  type ScheduleWorkflow,
} from './contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../platform/temporal/messages.js';
import { assertOwnedBy } from '../projects/access.js';
import { ApiError, isErrorName } from '../platform/errors.js';
import { updateTimedOut } from '../platform/temporal/workflow-calls.js';
import { newId } from '../platform/ids.js';
import { isResourceId } from '../payments/receipt-rules.js';
import {
  dueAt,
  renderSchedule,
  renderScheduleCharge,
  type ScheduleListQuery,
  type SchedulePatch,
  type SchedulePlan,
  type ScheduleRequest,
  upcoming,
} from './rules.js';
import { formatTimestamp } from '../platform/time.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { Project } from '../projects/index.js';
import type { ScheduleRow } from './store.js';
import { chargingCardGateway, findUsableBillingKey, type BillingKeyStore, merchantBillingKey } from '../payments/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, type WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import { bindLogIds } from '../platform/observability/log-context.js';
import type { ScheduleStore } from './store.js';

type Rendered = Record<string, unknown>;

/** Proofs sent per request: a second run can only appear if the first continued as new meanwhile. */
const PROOF_ATTEMPTS = 3;

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

export function planOf(row: ScheduleRow): SchedulePlan {
  return {
    startAt: row.start_at.toISOString(),
    interval: row.interval as SchedulePlan['interval'],
    intervalCount: row.interval_count,
    endAt: row.end_at?.toISOString(),
    maxCharges: row.max_charges ?? undefined,
  };
}

export function createScheduleService(deps: {
  readonly stores: { readonly schedules: ScheduleStore; readonly billingKeys: BillingKeyStore };
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a key issued at one is charged there */
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  readonly workflows?: WorkflowRuntime;
  readonly workflowCallTimeoutMs?: number;
}): ScheduleService {
  const { stores } = deps;
  const callTimeoutMs = deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;
  const workflows = (): WorkflowRuntime => {
    if (!deps.workflows) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
    return deps.workflows;
  };
  const own = async (project: Project, scheduleId: string): Promise<ScheduleRow> => {
    if (!isResourceId(scheduleId)) throw new ApiError('SCHEDULE_NOT_FOUND');
    const row = await stores.schedules.find(scheduleId);
    if (!row) throw new ApiError('SCHEDULE_NOT_FOUND');
    assertOwnedBy(project, row.application_id);
    return row;
  };
  const render = (row: ScheduleRow) => renderSchedule(stores.schedules.view(row));
  const ended = (row: ScheduleRow) => row.status === 'cancelled' || row.status === 'completed';

  /**
   * Sends an update with a proof for the schedule's current run (read by describe); a validator's refusal becomes
   * its catalog error, and nothing changed. A proof refused as not fresh was made for a run that has since
   * continued as new (the update followed it to the next run): asked again with the new run's id.
   */
  const update = async (
    scheduleId: string,
    send: (handle: WorkflowHandle, proof: ScheduleUpdateProof) => Promise<unknown>,
  ): Promise<void> => {
    const { client } = workflows();
    const handle = client.workflow.getHandle(scheduleWorkflowId(scheduleId));
    for (let attempt = 1; ; attempt++) {
      try {
        await client.withDeadline(Date.now() + callTimeoutMs, async () => {
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
  };

  const service: ScheduleService = {
    async create(project, request) {
      const key = await findUsableBillingKey(stores, project, request.billingKey);
      await chargingCardGateway(deps, project, key);
      const { client, taskQueue } = workflows();
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
        await client.withDeadline(Date.now() + callTimeoutMs, () =>
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
        if (updateTimedOut(err))
          throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine did not answer; retry.' });
        throw err;
      }
      return render(row);
    },

    async get(project, scheduleId) {
      return render(await own(project, scheduleId));
    },

    async list(project, query) {
      const { rows, count } = await stores.schedules.list(project.application_id, query);
      return { list: rows.map(render), page: query.page, per: query.limit, count };
    },

    async charges(project, scheduleId) {
      await own(project, scheduleId);
      const rows = await stores.schedules.charges(scheduleId);
      return { list: rows.map((r) => renderScheduleCharge(stores.schedules.chargeView(r))) };
    },

    async upcoming(project, scheduleId, count) {
      const row = await own(project, scheduleId);
      if (ended(row) || row.status === 'paused' || row.next_charge_at === null) return { schedule_id: scheduleId, list: [] };
      const plan = planOf(row);
      const charged = await stores.schedules.charges(scheduleId);
      // the next period is the first one after those recorded (a period in dunning is still the next)
      const open = charged.find((c) => c.status === 'retrying');
      const next = open ? open.period : (charged.at(-1)?.period ?? 0) + 1;
      const dues = upcoming(plan, next, row.charges_made, count);
      if (open && row.next_charge_at) dues[0] = row.next_charge_at;
      return { schedule_id: scheduleId, list: dues.map(formatTimestamp) };
    },

    async pause(project, scheduleId) {
      const row = await own(project, scheduleId);
      if (ended(row) || row.status === 'paused') throw new ApiError('SCHEDULE_STATE_INVALID');
      await update(scheduleId, (h, proof) => h.executeUpdate(pauseScheduleUpdate, { args: [proof] }));
      return render(await own(project, scheduleId));
    },

    async resume(project, scheduleId) {
      const row = await own(project, scheduleId);
      if (row.status !== 'paused') throw new ApiError('SCHEDULE_STATE_INVALID');
      await update(scheduleId, (h, proof) => h.executeUpdate(resumeScheduleUpdate, { args: [proof] }));
      return render(await own(project, scheduleId));
    },

    async cancel(project, scheduleId) {
      const row = await own(project, scheduleId);
      if (ended(row)) throw new ApiError('SCHEDULE_STATE_INVALID');
      await update(scheduleId, (h, proof) => h.executeUpdate(cancelScheduleUpdate, { args: [proof] }));
      return render(await own(project, scheduleId));
    },

    async patch(project, scheduleId, patch) {
      const row = await own(project, scheduleId);
      if (ended(row)) throw new ApiError('SCHEDULE_STATE_INVALID');
      await update(scheduleId, (h, proof) => h.executeUpdate(patchScheduleUpdate, { args: [proof, { ...patch }] }));
      return render(await own(project, scheduleId));
    },

    async cancelForKey(project, billingKey, log) {
      const open = await stores.schedules.openForKey(billingKey);
      let cancelled = 0;
      for (const row of open) {
        if (row.application_id !== project.application_id) continue;
        try {
          await service.cancel(project, row.schedule_id);
          cancelled++;
        } catch (err) {
          // the key is destroyed either way: a schedule that could not be told now fails its next charge and cancels itself
          log?.warn({ schedule_id: row.schedule_id, err }, 'could not cancel a schedule of a destroyed billing key');
        }
      }
      return cancelled;
    },
  };
  return service;
}

// Reserved charges: the database answers what it can (the billing key, ownership, the order_id, the status),
// then the reserve's workflow (src/workflows/reserves.ts) is started, or sent its revoke update. The charge
// itself is the charge service's, made by the workflow's activity at reserve_execute_at.
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { RESERVE_WORKFLOW_TYPE, reserveWorkflowId, revokeReserveUpdate, type ReserveWorkflow } from './contract.js';
import { assertOwnedBy } from '../projects/access.js';
import { ApiError, isErrorName } from '../platform/errors.js';
import { updateTimedOut } from '../platform/temporal/workflow-calls.js';
import { newId } from '../platform/ids.js';
import { isResourceId } from '../payments/receipt-rules.js';
import { renderReserve, type ReserveRequest, type ReserveResponse } from './rules.js';
import { formatTimestamp } from '../platform/time.js';
import type { FeedbackTarget } from '../webhooks/rules.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { Project } from '../projects/index.js';
import type { ReserveRow } from './store.js';
import { chargingCardGateway, findUsableBillingKey, type BillingKeyStore, merchantBillingKey } from '../payments/index.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, type WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import { bindLogIds } from '../platform/observability/log-context.js';
import type { ReserveStore } from './store.js';

export interface ReserveService {
  /** POST /v2/subscribe/payment/reserve: stored and its workflow started, or nothing stored. */
  create(
    project: Project,
    request: ReserveRequest,
    feedback: FeedbackTarget | undefined,
    requestedAt: Date,
  ): Promise<{ reserve_id: string; reserve_execute_at: string }>;
  get(project: Project, reserveId: string): Promise<ReserveResponse>;
  /** The project's reserved charges, newest first (the dashboard). */
  list(project: Project, limit: number): Promise<ReserveResponse[]>;
  /** DELETE .../reserve/{reserve_id}: revoked, or 9441 when it was revoked or has started executing. */
  revoke(project: Project, reserveId: string): Promise<{ reserve_id: string; success: boolean }>;
}

export function createReserveService(deps: {
  readonly stores: { readonly reserves: ReserveStore; readonly billingKeys: BillingKeyStore };
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a key issued at one is charged there */
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  readonly workflows?: WorkflowRuntime;
  readonly workflowCallTimeoutMs?: number;
}): ReserveService {
  const { stores } = deps;
  const callTimeoutMs = deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;
  const workflows = (): WorkflowRuntime => {
    if (!deps.workflows) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
    return deps.workflows;
  };
  const ownReserve = async (project: Project, reserveId: string): Promise<ReserveRow> => {
    if (!isResourceId(reserveId)) throw new ApiError('RESERVE_NOT_FOUND');
    const row = await stores.reserves.find(reserveId);
    if (!row) throw new ApiError('RESERVE_NOT_FOUND');
    assertOwnedBy(project, row.application_id);
    return row;
  };

  return {
    async create(project, request, feedback, requestedAt) {
      const key = await findUsableBillingKey(stores, project, request.charge.billingKey);
      // a PG the project no longer uses would only fail at execution: refuse it now
      await chargingCardGateway(deps, project, key);
      const { client, taskQueue } = workflows();
      const reserveId = newId();
      bindLogIds({ reserve_id: reserveId });
      const row = await stores.reserves.insert({
        reserveId,
        applicationId: project.application_id,
        // the key as the merchant names it (an upstream provider's id, unique per project): charged by that name
        billingKey: merchantBillingKey(key),
        orderId: request.charge.orderId,
        orderName: request.charge.orderName,
        price: request.charge.price,
        taxFree: request.charge.taxFree,
        quota: request.charge.quota,
        user: request.user,
        items: request.items,
        metadata: request.charge.metadata,
        feedback,
        requestedAt,
        executeAt: request.executeAt,
      });
      const startRun = (id: string, executeAt: Date) =>
        client.withDeadline(Date.now() + callTimeoutMs, () =>
          client.workflow.start<ReserveWorkflow>(RESERVE_WORKFLOW_TYPE, {
            workflowId: reserveWorkflowId(id),
            taskQueue,
            args: [{ reserveId: id, executeAt: executeAt.toISOString() }],
            // a reserve has one run, ever: a run that ended is never started again
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
          }),
        );
      if (!row) {
        // The same reserve asked again (a retry) whose first request stored it and died before it started the run
        // (its process killed in between): the retry starts that run and answers with the reserve. Any other
        // order_id already used, or a reserve whose run exists or existed, is 9410.
        const stored = await stores.reserves.findByOrder(project.application_id, request.charge.orderId);
        const sameReserve =
          stored !== undefined &&
          stored.status === 'reserved' &&
          stored.billing_key === merchantBillingKey(key) &&
          Number(stored.price) === request.charge.price &&
          stored.execute_at.getTime() === request.executeAt.getTime();
        if (sameReserve) {
          try {
            await startRun(stored.reserve_id, stored.execute_at);
            bindLogIds({ reserve_id: stored.reserve_id });
            return { reserve_id: stored.reserve_id, reserve_execute_at: formatTimestamp(stored.execute_at) };
          } catch (err) {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          }
        }
        throw new ApiError('ORDER_ID_DUPLICATED');
      }
      try {
        await startRun(reserveId, request.executeAt);
      } catch (err) {
        // a retry of this very reserve started its run first (see above): the run exists, the reserve stands
        if (err instanceof WorkflowExecutionAlreadyStartedError) {
          return { reserve_id: reserveId, reserve_execute_at: formatTimestamp(request.executeAt) };
        }
        // no timer, no reserve: nothing is left that could charge
        await stores.reserves.delete(reserveId);
        if (updateTimedOut(err))
          throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine did not answer; retry.' });
        throw err;
      }
      return { reserve_id: reserveId, reserve_execute_at: formatTimestamp(request.executeAt) };
    },

    async get(project, reserveId) {
      return renderReserve(stores.reserves.view(await ownReserve(project, reserveId)));
    },

    async list(project, limit) {
      const rows = await stores.reserves.listOf(project.application_id, limit);
      return rows.map((row) => renderReserve(stores.reserves.view(row)));
    },

    async revoke(project, reserveId) {
      const row = await ownReserve(project, reserveId);
      if (row.status !== 'reserved') throw new ApiError('RESERVE_NOT_REVOKABLE');
      const { client } = workflows();
      try {
        await client.withDeadline(Date.now() + callTimeoutMs, () =>
          client.workflow.getHandle(reserveWorkflowId(reserveId)).executeUpdate(revokeReserveUpdate, {
            args: [{ nonce: randomUUID() }],
          }),
        );
      } catch (err) {
        if (updateTimedOut(err))
          throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The reserve did not answer in time; retry.' });
        if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
          const type = err.cause.type;
          if (type && isErrorName(type)) throw new ApiError(type);
        }
        throw err;
      }
      return { reserve_id: reserveId, success: true };
    },
  };
}

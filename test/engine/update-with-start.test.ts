// Update-with-start (ExecuteMultiOperation [StartWorkflow, UpdateWorkflow]) through the SDK's
// startUpdateWithStart / executeUpdateWithStart and on the wire: the first workflow task carries the start and the
// update; conflict policies (USE_EXISTING updates the running workflow, FAIL is WorkflowExecutionAlreadyStarted,
// TERMINATE_EXISTING starts afresh); a closed workflow is started again; request-id and update-id dedupe (one run,
// one update); a completed update answers its outcome; Temporal's validation and its error shape
// (MultiOperationExecutionFailure with one status per operation); the in-flight update limit.
import { randomUUID } from 'node:crypto';
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import {
  Client,
  Connection,
  isGrpcServiceError,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
} from '@temporalio/client';
import { type ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import { google, temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bounded, createEnv, eventTypeName, historyEvents, namespaceOf, uniqueId, withWorker } from './env.js';
import { doneUpdate, neverEndingUpdate, recordedQuery, recordsUntilDone, recordUpdate, unfinishedUpdates } from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;
const Stage = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
const ConflictPolicy = temporal.api.enums.v1.WorkflowIdConflictPolicy;
type MultiOperationRequest = temporal.api.workflowservice.v1.IExecuteMultiOperationRequest;
type OperationStatus = temporal.api.errordetails.v1.MultiOperationExecutionFailure.IOperationStatus;

const OUTCOME_MS = 20_000;

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

async function typesOf(workflowId: string, runId?: string): Promise<string[]> {
  return (await historyEvents(env.client.workflow.getHandle(workflowId, runId))).map((e) => eventTypeName(e, EventType));
}

async function failureOf(promise: Promise<unknown>, what: string): Promise<unknown> {
  return bounded(promise, OUTCOME_MS, what).then(
    (value) => {
      throw new Error(`${what} resolved with ${JSON.stringify(value)}; a rejection was expected`);
    },
    (err: unknown) => err,
  );
}

function startOperation(workflowId: string, taskQueue: string, conflict: 'USE_EXISTING' | 'FAIL' | 'TERMINATE_EXISTING') {
  return new WithStartWorkflowOperation(recordsUntilDone, {
    workflowId,
    taskQueue,
    args: ['started'],
    workflowIdConflictPolicy: conflict,
  });
}

/** startUpdateWithStart, then the update's result and the run it ran in. */
async function updateWithStart(
  startOp: WithStartWorkflowOperation<typeof recordsUntilDone>,
  update: typeof recordUpdate | typeof doneUpdate,
  args: [string] | [],
): Promise<{ result: string[]; runId: string | undefined }> {
  const handle = await env.client.workflow.startUpdateWithStart(update as typeof recordUpdate, {
    args: args as [string],
    waitForStage: WorkflowUpdateStage.ACCEPTED,
    startWorkflowOperation: startOp,
  });
  return { result: await bounded(handle.result(), OUTCOME_MS, 'the update result'), runId: handle.workflowRunId };
}

describe('update-with-start through the SDK', () => {
  it('starts the workflow and runs the update in its first workflow task (startUpdateWithStart)', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const workflowId = uniqueId('uws');
      const startOp = startOperation(workflowId, taskQueue, 'USE_EXISTING');
      const updateHandle = await env.client.workflow.startUpdateWithStart(recordUpdate, {
        args: ['a'],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: startOp,
      });
      expect(await updateHandle.result()).toEqual(['started', 'a']);
      const handle = await startOp.workflowHandle();
      expect(handle.workflowId).toBe(workflowId);
      expect(await handle.executeUpdate(recordUpdate, { args: ['b'] })).toEqual(['started', 'a', 'b']);
      expect((await typesOf(workflowId)).slice(0, 6)).toEqual([
        'WORKFLOW_EXECUTION_STARTED',
        'WORKFLOW_TASK_SCHEDULED',
        'WORKFLOW_TASK_STARTED',
        'WORKFLOW_TASK_COMPLETED',
        'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
        'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
      ]);
      // A start operation is spent once used (the SDK's own rule).
      await expect(
        env.client.workflow.executeUpdateWithStart(recordUpdate, { args: ['c'], startWorkflowOperation: startOp }),
      ).rejects.toThrow('WithStartWorkflowOperation instance has already been executed');
      await handle.executeUpdate(doneUpdate);
      expect(await handle.result()).toEqual(['started', 'a', 'b']);
    });
  });

  it('answers the update result in one call (executeUpdateWithStart), with the workflow and update arguments', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const startOp = startOperation(uniqueId('uws-execute'), taskQueue, 'FAIL');
      const result = await env.client.workflow.executeUpdateWithStart(recordUpdate, {
        args: ['update arg'],
        startWorkflowOperation: startOp,
      });
      expect(result).toEqual(['started', 'update arg']);
      const handle = await startOp.workflowHandle();
      expect(await handle.query(recordedQuery)).toEqual(['started', 'update arg']);
      await handle.terminate();
    });
  });

  it('sends the update to the running workflow under USE_EXISTING: one run, both updates', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const workflowId = uniqueId('uws-existing');
      const first = await updateWithStart(startOperation(workflowId, taskQueue, 'USE_EXISTING'), recordUpdate, ['a']);
      expect(first.result).toEqual(['started', 'a']);
      const second = await updateWithStart(startOperation(workflowId, taskQueue, 'USE_EXISTING'), recordUpdate, ['b']);
      expect(second.result).toEqual(['started', 'a', 'b']);
      expect(second.runId).toBe(first.runId);
      expect((await typesOf(workflowId)).filter((t) => t === 'WORKFLOW_EXECUTION_STARTED')).toHaveLength(1);
      await env.client.workflow.getHandle(workflowId).terminate();
    });
  });

  it('refuses to start over a running workflow under FAIL: WorkflowExecutionAlreadyStartedError, no update', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const workflowId = uniqueId('uws-fail');
      const first = startOperation(workflowId, taskQueue, 'FAIL');
      await env.client.workflow.startUpdateWithStart(recordUpdate, {
        args: ['a'],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: first,
      });
      const second = startOperation(workflowId, taskQueue, 'FAIL');
      const call = env.client.workflow.startUpdateWithStart(recordUpdate, {
        args: ['b'],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: second,
      });
      for (const promise of [call, second.workflowHandle()]) {
        const err = await failureOf(promise, 'the conflicting update-with-start');
        expect(err).toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
        expect((err as Error).message).toBe('Workflow execution already started');
      }
      const handle = await first.workflowHandle();
      expect(await handle.query(recordedQuery)).toEqual(['started', 'a']);
      await handle.terminate();
    });
  });

  it('terminates the running workflow and starts a new run under TERMINATE_EXISTING', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const workflowId = uniqueId('uws-terminate');
      const first = await updateWithStart(startOperation(workflowId, taskQueue, 'TERMINATE_EXISTING'), recordUpdate, ['a']);
      const second = await updateWithStart(startOperation(workflowId, taskQueue, 'TERMINATE_EXISTING'), recordUpdate, ['b']);
      expect(second.result).toEqual(['started', 'b']);
      expect(second.runId).not.toBe(first.runId);
      expect((await env.client.workflow.getHandle(workflowId, first.runId).describe()).status.name).toBe('TERMINATED');
      await env.client.workflow.getHandle(workflowId).terminate();
    });
  });

  it('starts a new run when the workflow has closed, even under USE_EXISTING', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const workflowId = uniqueId('uws-closed');
      const startOp = startOperation(workflowId, taskQueue, 'USE_EXISTING');
      const first = await updateWithStart(startOp, doneUpdate, []);
      expect(await (await startOp.workflowHandle()).result()).toEqual(['started']);
      const second = await updateWithStart(startOperation(workflowId, taskQueue, 'USE_EXISTING'), recordUpdate, ['again']);
      expect(second.result).toEqual(['started', 'again']);
      expect(second.runId).not.toBe(first.runId);
      await env.client.workflow.getHandle(workflowId).terminate();
    });
  });

  it('starts the workflow even when the update is rejected', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const startOp = startOperation(uniqueId('uws-rejected'), taskQueue, 'FAIL');
      const err = await failureOf(
        env.client.workflow.executeUpdateWithStart(recordUpdate, { args: [''], startWorkflowOperation: startOp }),
        'the refused update',
      );
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((err as WorkflowUpdateFailedError).cause?.message).toContain('an empty item is refused');
      const handle = await startOp.workflowHandle();
      expect(await handle.query(recordedQuery)).toEqual(['started']);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      await handle.terminate();
    });
  });

  it('returns at ACCEPTED for startUpdateWithStart; an accepted update the run outlives fails as on Temporal', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const startOp = new WithStartWorkflowOperation(unfinishedUpdates, {
        workflowId: uniqueId('uws-accepted'),
        taskQueue,
        workflowIdConflictPolicy: 'FAIL',
      });
      const updateHandle = await env.client.workflow.startUpdateWithStart(neverEndingUpdate, {
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        startWorkflowOperation: startOp,
      });
      await (await startOp.workflowHandle()).terminate();
      const err = await failureOf(updateHandle.result(), 'the accepted update');
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(((err as WorkflowUpdateFailedError).cause as ApplicationFailure).type).toBe('AcceptedUpdateCompletedWorkflow');
    });
  });

  it('refuses an invalid start with INVALID_ARGUMENT for the update call and the workflow handle', async () => {
    const startOp = new WithStartWorkflowOperation(recordsUntilDone, {
      workflowId: randomUUID().repeat(77),
      taskQueue: 'does-not-exist',
      workflowIdConflictPolicy: 'FAIL',
    });
    const call = env.client.workflow.startUpdateWithStart(recordUpdate, {
      args: ['a'],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
      startWorkflowOperation: startOp,
    });
    for (const promise of [call, startOp.workflowHandle()]) {
      const err = await failureOf(promise, 'the invalid update-with-start');
      expect(isGrpcServiceError(err) && err.code).toBe(grpcStatus.INVALID_ARGUMENT);
      expect((err as Error).message).toMatch(/workflowid.*length/i);
    }
  });
});

// ---------------------------------------------------------------- on the wire

const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);

function multiOperation(
  workflowId: string,
  taskQueue: string,
  opts: { requestId?: string; updateId?: string; item?: string; conflict?: number } = {},
): MultiOperationRequest {
  const namespace = namespaceOf(env);
  return {
    namespace,
    operations: [
      {
        startWorkflow: {
          namespace,
          workflowId,
          workflowType: { name: 'recordsUntilDone' },
          taskQueue: { name: taskQueue },
          input: { payloads: [payload('started')] },
          requestId: opts.requestId ?? randomUUID(),
          workflowIdConflictPolicy: opts.conflict ?? ConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
        },
      },
      {
        updateWorkflow: {
          namespace,
          workflowExecution: { workflowId },
          waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED },
          request: {
            meta: { updateId: opts.updateId ?? randomUUID() },
            input: { name: 'record', args: { payloads: [payload(opts.item ?? 'a')] } },
          },
        },
      },
    ],
  };
}

/** The per-operation statuses of a MultiOperationExecution error. */
function operationStatuses(err: unknown): OperationStatus[] {
  const bin = (err as ServiceError).metadata?.get('grpc-status-details-bin')?.[0];
  if (!(bin instanceof Buffer)) throw new Error(`no status details on ${String(err)}`);
  const detail = google.rpc.Status.decode(bin).details?.find((d) => d.type_url?.endsWith('MultiOperationExecutionFailure'));
  if (!detail?.value) throw new Error(`no MultiOperationExecutionFailure on ${String(err)}`);
  return temporal.api.errordetails.v1.MultiOperationExecutionFailure.decode(detail.value).statuses ?? [];
}

function isAborted(status: OperationStatus): boolean {
  return (
    status.code === grpcStatus.ABORTED &&
    (status.details ?? []).some((d) => d.type_url?.endsWith('temporal.api.failure.v1.MultiOperationExecutionAborted'))
  );
}

async function resultOf(workflowService: Client['workflowService'], request: MultiOperationRequest) {
  const response = await bounded(workflowService.executeMultiOperation(request), OUTCOME_MS, 'ExecuteMultiOperation');
  const start = response.responses?.[0]?.startWorkflow;
  const update = response.responses?.[1]?.updateWorkflow;
  const success = update?.outcome?.success?.payloads?.[0];
  return {
    runId: start?.runId,
    started: start?.started,
    stage: update?.stage,
    updateRunId: update?.updateRef?.workflowExecution?.runId,
    result: success ? defaultPayloadConverter.fromPayload(success) : undefined,
  };
}

describe('ExecuteMultiOperation on the wire', () => {
  it('runs a repeated request (same request id and update id) once: one run, one update, the first outcome', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const workflowId = uniqueId('uws-dedupe');
      const request = multiOperation(workflowId, taskQueue, { requestId: 'one-request', updateId: 'one-update' });
      const first = await resultOf(env.client.workflowService, request);
      expect(first).toMatchObject({ started: true, stage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED });
      expect(first.result).toEqual(['started', 'a']);
      expect(first.updateRunId).toBe(first.runId);
      const again = await resultOf(env.client.workflowService, request);
      expect(again).toMatchObject({ runId: first.runId, started: false, result: ['started', 'a'] });
      const types = await typesOf(workflowId);
      expect(types.filter((t) => t === 'WORKFLOW_EXECUTION_STARTED')).toHaveLength(1);
      expect(types.filter((t) => t === 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).toHaveLength(1);
      await env.client.workflow.getHandle(workflowId).terminate();
      // Once closed, a completed update still answers its outcome.
      expect(await resultOf(env.client.workflowService, request)).toMatchObject({ runId: first.runId, result: ['started', 'a'] });
    });
  });

  it('refuses anything but [Start, Update] with INVALID_ARGUMENT', async () => {
    const request = multiOperation(uniqueId('uws-shape'), 'tq');
    const reversed = { ...request, operations: [...(request.operations ?? [])].reverse() };
    for (const bad of [reversed, { ...request, operations: request.operations?.slice(0, 1) }]) {
      const err = await failureOf(env.client.workflowService.executeMultiOperation(bad), 'a malformed multi-operation');
      expect(isGrpcServiceError(err) && err.code).toBe(grpcStatus.INVALID_ARGUMENT);
      expect((err as ServiceError).details).toBe('Operations have to be exactly [Start, Update].');
    }
  });

  it("reports a validation failure in the failing operation's status and marks the other aborted", async () => {
    const request = multiOperation(uniqueId('uws-invalid'), 'tq');
    const [start, update] = request.operations ?? [];
    const cases: Array<{ ops: MultiOperationRequest['operations']; failing: 0 | 1; message: string }> = [
      {
        ops: [start!, { updateWorkflow: { ...update!.updateWorkflow, workflowExecution: { workflowId: 'another-id' } } }],
        failing: 1,
        message: 'WorkflowId is not consistent with previous operation(s).',
      },
      {
        ops: [{ startWorkflow: { ...start!.startWorkflow, workflowStartDelay: { nanos: 5_000_000 } } }, update!],
        failing: 0,
        message: 'WorkflowStartDelay is not supported.',
      },
      {
        ops: [
          start!,
          {
            updateWorkflow: {
              ...update!.updateWorkflow,
              workflowExecution: { workflowId: start!.startWorkflow!.workflowId, runId: randomUUID() },
            },
          },
        ],
        failing: 1,
        message: 'RunId is not allowed.',
      },
    ];
    for (const c of cases) {
      const err = await failureOf(env.client.workflowService.executeMultiOperation({ ...request, operations: c.ops }), c.message);
      expect(isGrpcServiceError(err) && err.code).toBe(grpcStatus.INVALID_ARGUMENT);
      const statuses = operationStatuses(err);
      expect(statuses).toHaveLength(2);
      expect(statuses[c.failing]).toMatchObject({ code: grpcStatus.INVALID_ARGUMENT, message: c.message });
      expect(isAborted(statuses[1 - c.failing]!)).toBe(true);
    }
  });

  it('puts WorkflowExecutionAlreadyStarted in the start status under FAIL', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const workflowId = uniqueId('uws-fail-wire');
      const first = await resultOf(env.client.workflowService, multiOperation(workflowId, taskQueue));
      const err = await failureOf(
        env.client.workflowService.executeMultiOperation(multiOperation(workflowId, taskQueue, { item: 'b' })),
        'the conflicting start',
      );
      expect(isGrpcServiceError(err) && err.code).toBe(grpcStatus.ALREADY_EXISTS);
      const [start, update] = operationStatuses(err);
      expect(start?.code).toBe(grpcStatus.ALREADY_EXISTS);
      expect(start?.message).toContain('Workflow execution is already running');
      const detail = start?.details?.find((d) => d.type_url?.endsWith('WorkflowExecutionAlreadyStartedFailure'));
      expect(
        detail?.value && temporal.api.errordetails.v1.WorkflowExecutionAlreadyStartedFailure.decode(detail.value).runId,
      ).toBe(first.runId);
      expect(isAborted(update!)).toBe(true);
      await env.client.workflow.getHandle(workflowId).terminate();
    });
  });

  it('refuses an 11th update in flight with RESOURCE_EXHAUSTED in the update status', async () => {
    const connection = await Connection.connect({ address: env.address, interceptors: [] });
    try {
      const client = new Client({ connection, namespace: namespaceOf(env) });
      const workflowId = uniqueId('uws-limit');
      const taskQueue = uniqueId('no-worker');
      const admit = (i: number) => {
        const request = multiOperation(workflowId, taskQueue, {
          conflict: ConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
          updateId: `u${i}`,
        });
        // Nobody runs these updates: leave them waiting.
        client.workflowService.executeMultiOperation(request).catch(() => undefined);
      };
      for (let i = 0; i < 10; i++) admit(i);
      await bounded(
        (async () => {
          for (;;) {
            const described = await client.workflowService
              .pollWorkflowExecutionUpdate({
                namespace: namespaceOf(env),
                updateRef: { workflowExecution: { workflowId }, updateId: 'u9' },
              })
              .catch(() => undefined);
            if (described) return;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        })(),
        OUTCOME_MS,
        'the tenth update to be admitted',
      );
      const err = await failureOf(
        client.workflowService.executeMultiOperation(
          multiOperation(workflowId, taskQueue, { conflict: ConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING }),
        ),
        'the 11th update',
      );
      expect(isGrpcServiceError(err) && err.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
      const [start, update] = operationStatuses(err);
      expect(isAborted(start!)).toBe(true);
      expect(update?.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
      await client.workflow.getHandle(workflowId).terminate();
    } finally {
      await connection.close();
    }
  });
});

// Payload and request size limits, as Temporal enforces them: an oversized start input, memo or signal is refused
// (INVALID_ARGUMENT), a request over 4 MiB is RESOURCE_EXHAUSTED, and — with the limits lowered through
// `--dynamic-config-value` the way the SDK's own tests lower them — a workflow-task command with an oversized payload
// terminates the workflow, an oversized activity result fails the activity for good, and a history past
// `limit.historyCount.error` is terminated. DescribeNamespace reports the limits, which the Core SDK enforces itself.
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  Client,
  Connection,
  isGrpcServiceError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type WorkflowHandle,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  againstRealServer,
  createEnv,
  DEVSERVER_PATH,
  excludedAgainstRealServer,
  historyEvents,
  namespaceOf,
  uniqueId,
  withWorker,
  type HistoryEvent,
} from './env.js';
import {
  activityResultOfSize,
  activityWithInput,
  manyTimers,
  resultOfSize,
  returnValue,
  signalCollector,
  type ErrorsActivities,
} from './workflows.js';

const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
const MiB = 1024 * 1024;
const BLOB_ERROR = 10 * 1024;
const BLOB_WARN = 2 * 1024;
const HISTORY_COUNT_ERROR = 100;

const activities: ErrorsActivities = {
  sleepOnServer: async () => {},
  measure: async (data: string) => data.length,
  produce: async (bytes: number) => 'x'.repeat(bytes),
};

async function grpcErrorOf(promise: Promise<unknown>): Promise<{ code: number; details: string } | undefined> {
  try {
    await promise;
    return undefined;
  } catch (err) {
    const grpc = isGrpcServiceError(err) ? err : err instanceof Error && isGrpcServiceError(err.cause) ? err.cause : undefined;
    if (!grpc) throw err;
    return { code: grpc.code, details: grpc.details };
  }
}

function ofType(events: HistoryEvent[], type: number): HistoryEvent[] {
  return events.filter((e) => e.eventType === type);
}

describe("Temporal's default limits", () => {
  let env: TestWorkflowEnvironment;

  beforeAll(async () => {
    env = await createEnv('dev-server');
  });

  afterAll(async () => {
    await env?.teardown();
  });

  it('reports the 2 MiB blob and memo limits in DescribeNamespace', async () => {
    const { namespaceInfo } = await env.connection.workflowService.describeNamespace({ namespace: namespaceOf(env) });
    expect(Number(namespaceInfo?.limits?.blobSizeLimitError)).toBe(2 * MiB);
    expect(Number(namespaceInfo?.limits?.memoSizeLimitError)).toBe(2 * MiB);
  });

  it('refuses a start whose input is over 2 MiB, storing nothing', async () => {
    const workflowId = uniqueId('big-input');
    const err = await grpcErrorOf(
      env.client.workflow.start(returnValue, { taskQueue: 'nobody', workflowId, args: ['x'.repeat(2.5 * MiB)] }),
    );
    expect(err).toEqual({ code: GrpcStatus.INVALID_ARGUMENT, details: 'Blob data size exceeds limit.' });
    await expect(env.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  it('refuses a start whose memo is over 2 MiB', async () => {
    const err = await grpcErrorOf(
      env.client.workflow.start(returnValue, {
        taskQueue: 'nobody',
        workflowId: uniqueId('big-memo'),
        args: ['small'],
        memo: { big: 'x'.repeat(2.5 * MiB) },
      }),
    );
    expect(err).toEqual({ code: GrpcStatus.INVALID_ARGUMENT, details: 'Memo size exceeds limit.' });
  });

  it('refuses a signal over 2 MiB and keeps the workflow as it was', async () => {
    const handle = await env.client.workflow.start(signalCollector, { taskQueue: 'nobody', workflowId: uniqueId('big-signal') });
    const err = await grpcErrorOf(handle.signal('push', 'x'.repeat(2.5 * MiB)));
    expect(err).toEqual({ code: GrpcStatus.INVALID_ARGUMENT, details: 'Blob data size exceeds limit.' });
    const types = (await historyEvents(handle)).map((e) => e.eventType);
    expect(types).not.toContain(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
    await handle.terminate();
  });

  it('answers a request over 4 MiB with RESOURCE_EXHAUSTED', async () => {
    // Without the SDK's retry interceptor: it retries RESOURCE_EXHAUSTED for a while.
    const connection = await Connection.connect({ address: env.address, interceptors: [] });
    try {
      const client = new Client({ connection, namespace: namespaceOf(env) });
      const err = await grpcErrorOf(
        client.workflow.start(returnValue, { taskQueue: 'nobody', workflowId: uniqueId('huge'), args: ['x'.repeat(5 * MiB)] }),
      );
      expect(err?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    } finally {
      await connection.close();
    }
  });
});

if (againstRealServer) {
  excludedAgainstRealServer('the lowered-limit checks in limits.test.ts', 'they launch the engine with --dynamic-config-value');
} else {
  describe('limits lowered with --dynamic-config-value', () => {
    let env: TestWorkflowEnvironment;

    beforeAll(async () => {
      env = await TestWorkflowEnvironment.createLocal({
        server: {
          executable: { type: 'existing-path', path: DEVSERVER_PATH },
          extraArgs: [
            '--dynamic-config-value',
            `limit.blobSize.error=${BLOB_ERROR}`,
            '--dynamic-config-value',
            `limit.blobSize.warn=${BLOB_WARN}`,
            '--dynamic-config-value',
            `limit.historyCount.error=${HISTORY_COUNT_ERROR}`,
            // these tests pass the limits on purpose: the engine's warnings about it would only be noise in npm test
            '--log-level',
            'error',
          ],
        },
      });
    });

    afterAll(async () => {
      await env?.teardown();
    });

    async function terminatedBy(handle: WorkflowHandle, cause: number, message: string): Promise<void> {
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      const events = await historyEvents(handle);
      const failed = ofType(events, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
      expect(failed.map((e) => e.workflowTaskFailedEventAttributes?.cause)).toEqual([cause]);
      const reason = `${WorkflowTaskFailedCause[cause]}: ${message}`;
      expect(failed[0]?.workflowTaskFailedEventAttributes?.failure?.message).toBe(reason);
      const terminated = ofType(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
      expect(terminated.map((e) => e.workflowExecutionTerminatedEventAttributes?.reason)).toEqual([reason]);
      expect(terminated[0]?.workflowExecutionTerminatedEventAttributes?.identity).toBe('history-service');
      expect((await handle.describe()).status.name).toBe('TERMINATED');
    }

    it('reports the lowered limit, which the Core SDK then enforces before sending (PAYLOADS_TOO_LARGE)', async () => {
      const { namespaceInfo } = await env.connection.workflowService.describeNamespace({ namespace: namespaceOf(env) });
      expect(Number(namespaceInfo?.limits?.blobSizeLimitError)).toBe(BLOB_ERROR);
      await withWorker(env, { activities }, async (taskQueue) => {
        const handle = await env.client.workflow.start(resultOfSize, {
          taskQueue,
          workflowId: uniqueId('core-limit'),
          args: [BLOB_ERROR + 1024],
          workflowExecutionTimeout: '3s',
        });
        await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
        const causes = ofType(await historyEvents(handle), EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED).map(
          (e) => e.workflowTaskFailedEventAttributes?.cause,
        );
        expect(causes).toContain(WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_PAYLOADS_TOO_LARGE);
      });
    });

    it('refuses a start input between the warn and the error limit only above the error limit', async () => {
      const small = await env.client.workflow.start(returnValue, {
        taskQueue: 'nobody',
        workflowId: uniqueId('mid-input'),
        args: ['x'.repeat(BLOB_ERROR - 1024)],
      });
      await small.terminate();
      const err = await grpcErrorOf(
        env.client.workflow.start(returnValue, {
          taskQueue: 'nobody',
          workflowId: uniqueId('big'),
          args: ['x'.repeat(BLOB_ERROR)],
        }),
      );
      expect(err).toEqual({ code: GrpcStatus.INVALID_ARGUMENT, details: 'Blob data size exceeds limit.' });
    });

    it('terminates a workflow whose ScheduleActivityTask input is too large (worker limit disabled)', async () => {
      await withWorker(env, { activities, disablePayloadErrorLimit: true }, async (taskQueue) => {
        const handle = await env.client.workflow.start(activityWithInput, {
          taskQueue,
          workflowId: uniqueId('big-activity-input'),
          args: [BLOB_ERROR + 1024],
        });
        await terminatedBy(
          handle,
          WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES,
          'ScheduleActivityTaskCommandAttributes.Input exceeds size limit.',
        );
        expect(ofType(await historyEvents(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)).toEqual([]);
      });
    });

    it('terminates a workflow whose result is too large, with the cause Temporal reports', async () => {
      await withWorker(env, { activities, disablePayloadErrorLimit: true }, async (taskQueue) => {
        const handle = await env.client.workflow.start(resultOfSize, {
          taskQueue,
          workflowId: uniqueId('big-result'),
          args: [BLOB_ERROR + 1024],
        });
        await terminatedBy(
          handle,
          WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES,
          'CompleteWorkflowExecutionCommandAttributes.Result exceeds size limit.',
        );
      });
    });

    it('fails an activity whose result is too large, without retrying it', async () => {
      await withWorker(env, { activities, disablePayloadErrorLimit: true }, async (taskQueue) => {
        const handle = await env.client.workflow.start(activityResultOfSize, {
          taskQueue,
          workflowId: uniqueId('big-activity-result'),
          args: [BLOB_ERROR + 1024],
        });
        await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
        const events = await historyEvents(handle);
        const started = ofType(events, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED);
        expect(started.map((e) => e.activityTaskStartedEventAttributes?.attempt)).toEqual([1]);
        const failed = ofType(events, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED);
        expect(failed).toHaveLength(1);
        const failure = failed[0]?.activityTaskFailedEventAttributes?.failure;
        expect(failure?.message).toBe('Complete result exceeds size limit.');
        expect(failure?.serverFailureInfo?.nonRetryable).toBe(true);
        expect(ofType(events, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)).toEqual([]);
      });
    });

    it('terminates a workflow whose history passes limit.historyCount.error', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const handle = await env.client.workflow.start(manyTimers, {
          taskQueue,
          workflowId: uniqueId('long-history'),
          args: [HISTORY_COUNT_ERROR],
        });
        await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
        const events = await historyEvents(handle);
        const terminated = ofType(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
        expect(terminated.map((e) => e.workflowExecutionTerminatedEventAttributes?.reason)).toEqual([
          'Workflow history count exceeds limit.',
        ]);
        expect(events.length).toBeGreaterThan(HISTORY_COUNT_ERROR);
        expect(events.length).toBeLessThan(HISTORY_COUNT_ERROR + 10);
      });
    });
  });
}

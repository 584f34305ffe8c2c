// Cancel, terminate and describe.
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, RetryState, TerminatedFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import {
  createEnv,
  eventTypeName,
  eventually,
  expectReplays,
  historyEvents,
  isSubsequence,
  KEYWORD_KEY,
  uniqueId,
  withWorker,
} from './env.js';
import { cleanupOnCancel, failWithType, finishSignal, signalCollector, sleeper } from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;
const DAY_MS = 24 * 60 * 60 * 1000;

let env: TestWorkflowEnvironment;
const activities = createActivities();

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

async function failureOf(promise: Promise<unknown>): Promise<WorkflowFailedError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return err as WorkflowFailedError;
}

describe('cancel', () => {
  it('cancels a sleeping workflow: CancelledFailure, status CANCELED, cancel-requested then canceled events', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(sleeper, { taskQueue, workflowId: uniqueId('cancel'), args: [DAY_MS] });
      await eventually(
        async () =>
          (await historyEvents(handle)).some((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED) ? true : undefined,
        'the timer to start',
      );
      await handle.cancel();
      const failure = await failureOf(handle.result());
      expect(failure.cause).toBeInstanceOf(CancelledFailure);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(
        isSubsequence(types, ['TIMER_STARTED', 'WORKFLOW_EXECUTION_CANCEL_REQUESTED', 'WORKFLOW_EXECUTION_CANCELED']),
        types.join(' '),
      ).toBe(true);
      expect(types.at(-1)).toBe('WORKFLOW_EXECUTION_CANCELED');
      await expectReplays(handle);
    });
  });

  it('lets a workflow clean up after a cancel request and complete normally', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(cleanupOnCancel, { taskQueue, workflowId: uniqueId('cancel-cleanup') });
      await eventually(
        async () =>
          (await historyEvents(handle)).some((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED) ? true : undefined,
        'the timer to start',
      );
      await handle.cancel();
      expect(await handle.result()).toBe('cleaned up');
      expect((await handle.describe()).status.name).toBe('COMPLETED');
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(
        isSubsequence(types, [
          'WORKFLOW_EXECUTION_CANCEL_REQUESTED',
          'ACTIVITY_TASK_SCHEDULED',
          'ACTIVITY_TASK_COMPLETED',
          'WORKFLOW_EXECUTION_COMPLETED',
        ]),
        types.join(' '),
      ).toBe(true);
      await expectReplays(handle);
    });
  });

  it('refuses to cancel a closed workflow with WorkflowNotFoundError', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('cancel-closed') });
      await handle.signal(finishSignal);
      await handle.result();
      await expect(handle.cancel()).rejects.toBeInstanceOf(WorkflowNotFoundError);
      expect((await handle.describe()).status.name).toBe('COMPLETED');
    });
  });

  it('refuses to cancel an unknown workflow with WorkflowNotFoundError', async () => {
    await expect(env.client.workflow.getHandle(uniqueId('nobody')).cancel()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });
});

describe('fail', () => {
  it('fails a workflow that throws an ApplicationFailure: status FAILED, failure in the close event', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(failWithType, { taskQueue, workflowId: uniqueId('fail'), args: ['Broken'] });
      const failure = await failureOf(handle.result());
      expect(failure.cause).toBeInstanceOf(ApplicationFailure);
      expect((failure.cause as ApplicationFailure).type).toBe('Broken');
      expect((failure.cause as ApplicationFailure).message).toBe('workflow failed with Broken');
      expect(failure.retryState).toBe(RetryState.RETRY_POLICY_NOT_SET);
      expect((await handle.describe()).status.name).toBe('FAILED');
      const last = (await historyEvents(handle)).at(-1);
      expect(last?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED);
      expect(last?.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo?.type).toBe('Broken');
      await expectReplays(handle);
    });
  });
});

describe('terminate', () => {
  it('terminates a running workflow with a reason: TerminatedFailure, status TERMINATED', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('terminate') });
      await handle.terminate('conformance says stop');
      const failure = await failureOf(handle.result());
      expect(failure.cause).toBeInstanceOf(TerminatedFailure);
      expect(failure.message).toBe('conformance says stop');
      expect((await handle.describe()).status.name).toBe('TERMINATED');
      const last = (await historyEvents(handle)).at(-1);
      expect(last?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
      expect(last?.workflowExecutionTerminatedEventAttributes?.reason).toBe('conformance says stop');
    });
  });

  it('terminates a workflow no worker ever picked up', async () => {
    const handle = await env.client.workflow.start(signalCollector, {
      taskQueue: uniqueId('unpolled'),
      workflowId: uniqueId('terminate-unpolled'),
    });
    await handle.terminate();
    expect((await handle.describe()).status.name).toBe('TERMINATED');
  });

  it('refuses to terminate a closed workflow with WorkflowNotFoundError', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('terminate-closed') });
      await handle.signal(finishSignal);
      await handle.result();
      await expect(handle.terminate()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    });
  });
});

describe('describe', () => {
  it('describes running and closed executions', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('describe');
      const handle = await env.client.workflow.start(signalCollector, {
        taskQueue,
        workflowId,
        memo: { purpose: 'describe' },
        typedSearchAttributes: [{ key: KEYWORD_KEY, value: 'described' }],
      });
      const running = await handle.describe();
      expect(running.workflowId).toBe(workflowId);
      expect(running.runId).toBe(handle.firstExecutionRunId);
      expect(running.type).toBe('signalCollector');
      expect(running.taskQueue).toBe(taskQueue);
      expect(running.status.name).toBe('RUNNING');
      expect(running.startTime).toBeInstanceOf(Date);
      expect(running.closeTime).toBeUndefined();
      expect(running.memo).toEqual({ purpose: 'describe' });
      expect(running.typedSearchAttributes.get(KEYWORD_KEY)).toBe('described');
      expect(running.historyLength).toBeGreaterThanOrEqual(2);

      await handle.signal(finishSignal);
      await handle.result();
      const closed = await handle.describe();
      const events = await historyEvents(handle);
      expect(closed.status.name).toBe('COMPLETED');
      expect(closed.closeTime).toBeInstanceOf(Date);
      expect(closed.closeTime!.getTime()).toBeGreaterThanOrEqual(closed.startTime.getTime());
      expect(closed.historyLength).toBe(events.length);
    });
  });

  it('refuses to describe an unknown workflow with WorkflowNotFoundError', async () => {
    await expect(env.client.workflow.getHandle(uniqueId('nobody')).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });
});

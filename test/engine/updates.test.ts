// Updates: accepted/completed events, validator rejection writes no history, one run per update id,
// callers wait for the outcome, failing handlers, replay of accepted updates, closed workflows.
import { WorkflowNotFoundError, WorkflowUpdateFailedError, WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
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
  uniqueId,
  withWorker,
  type HistoryEvent,
} from './env.js';
import {
  countQuery,
  finishSignal,
  incrementUpdate,
  releaseSignal,
  throwingUpdate,
  updatable,
  waitForReleaseUpdate,
} from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;

let env: TestWorkflowEnvironment;
const activities = createActivities();

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

async function typesOf(handle: WorkflowHandle): Promise<string[]> {
  return (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
}

function updateEvents(events: HistoryEvent[]): HistoryEvent[] {
  return events.filter(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED ||
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
  );
}

/** Waits until the first workflow task completed, so the workflow is idle and has its handlers. */
async function waitUntilIdle(handle: WorkflowHandle): Promise<void> {
  await eventually(
    async () => ((await typesOf(handle)).includes('WORKFLOW_TASK_COMPLETED') ? true : undefined),
    'the first workflow task to complete',
  );
}

async function finish(handle: WorkflowHandle<typeof updatable>): Promise<number> {
  await handle.signal(finishSignal);
  return handle.result();
}

describe('updates', () => {
  it('runs an update and writes UPDATE_ACCEPTED then UPDATE_COMPLETED with its id', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update') });
      expect(await handle.executeUpdate(incrementUpdate, { args: [5], updateId: 'add-five' })).toBe(5);
      expect(await handle.query(countQuery)).toBe(5);

      const events = updateEvents(await historyEvents(handle));
      expect(events.map((e) => e.eventType)).toEqual([
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
      ]);
      const accepted = events[0]?.workflowExecutionUpdateAcceptedEventAttributes;
      expect(accepted?.acceptedRequest?.meta?.updateId).toBe('add-five');
      expect(accepted?.acceptedRequest?.input?.name).toBe('increment');
      expect(events[1]?.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId).toBe('add-five');
      expect(await finish(handle)).toBe(5);
    });
  });

  it('holds an update sent before any worker polled until a worker runs it', async () => {
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update-early') });
    const early = handle.executeUpdate(incrementUpdate, { args: [4], updateId: 'early' });
    await withWorker(env, { activities, taskQueue }, async () => {
      expect(await early).toBe(4);
      expect(await finish(handle)).toBe(4);
    });
    const events = updateEvents(await historyEvents(handle));
    expect(events.map((e) => e.eventType)).toEqual([
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
    ]);
  });

  it('rejects an update in its validator without writing any history', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update-rejected') });
      await waitUntilIdle(handle);
      const before = await historyEvents(handle);

      const err = await handle.executeUpdate(incrementUpdate, { args: [-1] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((err as WorkflowUpdateFailedError).cause).toBeInstanceOf(ApplicationFailure);
      expect((err as WorkflowUpdateFailedError).cause?.message).toContain('must not be negative');

      const after = await historyEvents(handle);
      expect(after.map((e) => e.eventType)).toEqual(before.map((e) => e.eventType));
      expect(await handle.query(countQuery)).toBe(0);
      expect(await finish(handle)).toBe(0);
      await expectReplays(handle);
    });
  });

  it('runs an update id once: a repeated request gets the first outcome', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update-dedupe') });
      expect(await handle.executeUpdate(incrementUpdate, { args: [1], updateId: 'only-once' })).toBe(1);
      expect(await handle.executeUpdate(incrementUpdate, { args: [1], updateId: 'only-once' })).toBe(1);
      expect(await handle.getUpdateHandle<number>('only-once').result()).toBe(1);
      expect(await handle.executeUpdate(incrementUpdate, { args: [1] })).toBe(2);
      const accepted = (await historyEvents(handle)).filter(
        (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
      );
      expect(accepted).toHaveLength(2);
      expect(await finish(handle)).toBe(2);
      await expectReplays(handle);
    });
  });

  it('lets the caller wait for the outcome of an accepted update that blocks', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update-wait') });
      const updateHandle = await handle.startUpdate(waitForReleaseUpdate, {
        waitForStage: WorkflowUpdateStage.ACCEPTED,
        updateId: 'blocked',
      });
      expect(await typesOf(handle)).toContain('WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
      expect(await typesOf(handle)).not.toContain('WORKFLOW_EXECUTION_UPDATE_COMPLETED');

      // A second caller waits through executeUpdate while the first holds the handle.
      const blockedCall = handle.executeUpdate(waitForReleaseUpdate, { updateId: 'blocked-too' });
      await eventually(async () => {
        const accepted = updateEvents(await historyEvents(handle)).filter(
          (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId === 'blocked-too',
        );
        return accepted.length > 0 ? true : undefined;
      }, 'the second update to be accepted');

      await handle.signal(releaseSignal);
      expect(await updateHandle.result()).toBe('released');
      expect(await blockedCall).toBe('released');
      expect(await handle.getUpdateHandle<string>('blocked').result()).toBe('released');
      expect(
        isSubsequence(await typesOf(handle), [
          'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
          'WORKFLOW_EXECUTION_SIGNALED',
          'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
        ]),
      ).toBe(true);
      await finish(handle);
      await expectReplays(handle);
    });
  });

  it('reports a failing handler as WorkflowUpdateFailedError after accepting it; the workflow runs on', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update-fails') });
      const err = await handle.executeUpdate(throwingUpdate, { args: ['handler broke'] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      const cause = (err as WorkflowUpdateFailedError).cause;
      expect(cause).toBeInstanceOf(ApplicationFailure);
      expect((cause as ApplicationFailure).type).toBe('UpdateBroke');
      expect((cause as ApplicationFailure).message).toBe('handler broke');

      const completed = (await historyEvents(handle)).find(
        (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
      );
      expect(completed?.workflowExecutionUpdateCompletedEventAttributes?.outcome?.failure?.message).toBe('handler broke');
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(await finish(handle)).toBe(0);
      await expectReplays(handle);
    });
  });

  it('replays accepted updates from history when the worker caches nothing', async () => {
    await withWorker(env, { activities, maxCachedWorkflows: 0 }, async (taskQueue) => {
      const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update-replay') });
      for (let i = 1; i <= 3; i++) {
        expect(await handle.executeUpdate(incrementUpdate, { args: [10] })).toBe(10 * i);
      }
      expect(await handle.query(countQuery)).toBe(30);
      expect(await finish(handle)).toBe(30);
    });
  });

  it('refuses an update to a closed workflow', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(updatable, { taskQueue, workflowId: uniqueId('update-closed') });
      await finish(handle);
      await expect(handle.executeUpdate(incrementUpdate, { args: [1] })).rejects.toBeInstanceOf(WorkflowNotFoundError);
    });
  });
});

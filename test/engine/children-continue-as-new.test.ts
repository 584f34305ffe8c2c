// Child workflows (complete, fail, cancel, parent link) and continue-as-new (run chain, history, describe).
import { WorkflowContinuedAsNewError } from '@temporalio/client';
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
} from './env.js';
import {
  continueAsNewCounter,
  duplicateChild,
  externalToNobody,
  itemsQuery,
  parentLeavesChild,
  parentOfChild,
  pushSignal,
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

describe('child workflows', () => {
  it('runs a child to completion and links it to its parent', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('parent-complete');
      const handle = await env.client.workflow.start(parentOfChild, { taskQueue, workflowId, args: ['complete'] });
      expect(await handle.result()).toBe(`child of ${workflowId}`);

      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(
        isSubsequence(types, [
          'START_CHILD_WORKFLOW_EXECUTION_INITIATED',
          'CHILD_WORKFLOW_EXECUTION_STARTED',
          'CHILD_WORKFLOW_EXECUTION_COMPLETED',
          'WORKFLOW_EXECUTION_COMPLETED',
        ]),
        types.join(' '),
      ).toBe(true);

      const child = await env.client.workflow.getHandle(`${workflowId}-child`).describe();
      expect(child.status.name).toBe('COMPLETED');
      expect(child.type).toBe('childReportsParent');
      expect(child.parentExecution?.workflowId).toBe(workflowId);
      expect(child.parentExecution?.runId).toBe(handle.firstExecutionRunId);
      const childStarted = (await historyEvents(env.client.workflow.getHandle(`${workflowId}-child`)))[0];
      expect(childStarted?.workflowExecutionStartedEventAttributes?.parentWorkflowExecution?.workflowId).toBe(workflowId);
      await expectReplays(handle);
    });
  });

  it('reports a failed child to the parent as ChildWorkflowFailure with the child failure as cause', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('parent-fail');
      const handle = await env.client.workflow.start(parentOfChild, { taskQueue, workflowId, args: ['fail'] });
      expect(await handle.result()).toBe('failed: ChildBroke');
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(isSubsequence(types, ['CHILD_WORKFLOW_EXECUTION_STARTED', 'CHILD_WORKFLOW_EXECUTION_FAILED']), types.join(' ')).toBe(
        true,
      );
      expect((await env.client.workflow.getHandle(`${workflowId}-child`).describe()).status.name).toBe('FAILED');
      await expectReplays(handle);
    });
  });

  it('cancels a child: cancel request to the child, child canceled, parent sees the cancellation', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('parent-cancel');
      const handle = await env.client.workflow.start(parentOfChild, { taskQueue, workflowId, args: ['cancel'] });
      expect(await handle.result()).toBe('cancelled');
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(
        isSubsequence(types, [
          'CHILD_WORKFLOW_EXECUTION_STARTED',
          'REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
          'EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED',
          'CHILD_WORKFLOW_EXECUTION_CANCELED',
        ]),
        types.join(' '),
      ).toBe(true);
      expect((await env.client.workflow.getHandle(`${workflowId}-child`).describe()).status.name).toBe('CANCELLED');
      await expectReplays(handle);
      await expectReplays(env.client.workflow.getHandle(`${workflowId}-child`));
    });
  });
});

describe('child id conflicts', () => {
  it('fails a child start whose id is taken by a running workflow with WorkflowExecutionAlreadyStartedError', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(duplicateChild, { taskQueue, workflowId: uniqueId('duplicate-child') });
      expect(await handle.result()).toBe('already started');
      const events = await historyEvents(handle);
      const failed = events.find((e) => e.startChildWorkflowExecutionFailedEventAttributes);
      expect(failed?.startChildWorkflowExecutionFailedEventAttributes?.cause).toBe(
        temporal.api.enums.v1.StartChildWorkflowExecutionFailedCause
          .START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_WORKFLOW_ALREADY_EXISTS,
      );
      await expectReplays(handle);
    });
  });
});

describe('signal and cancel of an external workflow that does not exist', () => {
  it('fails both commands with their failed events, and the workflow carries on', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(externalToNobody, {
        taskQueue,
        workflowId: uniqueId('external-nobody'),
        args: [uniqueId('nobody')],
      });
      expect(await handle.result()).toEqual(['signal failed', 'cancel failed']);
      const events = await historyEvents(handle);
      const types = events.map((e) => eventTypeName(e, EventType));
      expect(
        isSubsequence(types, [
          'SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
          'SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED',
          'REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
          'REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED',
          'WORKFLOW_EXECUTION_COMPLETED',
        ]),
        types.join(' '),
      ).toBe(true);
      const signalFailed = events.find((e) => e.signalExternalWorkflowExecutionFailedEventAttributes);
      expect(signalFailed?.signalExternalWorkflowExecutionFailedEventAttributes?.cause).toBe(
        temporal.api.enums.v1.SignalExternalWorkflowExecutionFailedCause
          .SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND,
      );
      await expectReplays(handle);
    });
  });
});

describe('parent close policy', () => {
  it.each([
    { policy: 'TERMINATE', childStatus: 'TERMINATED' },
    { policy: 'REQUEST_CANCEL', childStatus: 'CANCELLED' },
    { policy: 'ABANDON', childStatus: 'RUNNING' },
  ] as const)('applies $policy to a running child when the parent closes', async ({ policy, childStatus }) => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(parentLeavesChild, {
        taskQueue,
        workflowId: uniqueId(`parent-close-${policy.toLowerCase()}`),
        args: [policy],
      });
      const childId = await handle.result();
      const child = env.client.workflow.getHandle(childId);
      await eventually(
        async () => ((await child.describe()).status.name === childStatus ? true : undefined),
        `the child to become ${childStatus}`,
      );
      if (childStatus === 'RUNNING') {
        // An abandoned child keeps running: it still takes a signal and a workflow task after the parent closed.
        await child.signal(pushSignal, 'still there');
        const types = await eventually(async () => {
          const seen = (await historyEvents(child)).map((e) => eventTypeName(e, EventType));
          return isSubsequence(seen, ['WORKFLOW_EXECUTION_SIGNALED', 'WORKFLOW_TASK_COMPLETED']) ? seen : undefined;
        }, 'the abandoned child to process a signal');
        expect(types).not.toContain('WORKFLOW_EXECUTION_CANCEL_REQUESTED');
        expect((await child.describe()).status.name).toBe('RUNNING');
        expect(await child.query(itemsQuery)).toEqual(['still there']);
        await child.terminate('abandoned child cleaned up by the test');
      }
    });
  });
});

describe('continue-as-new', () => {
  it('chains runs: result follows the chain and every closed run points to the next', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('continue-as-new');
      const handle = await env.client.workflow.start(continueAsNewCounter, { taskQueue, workflowId, args: [0, 3] });
      const result = await handle.result();
      expect(result.iteration).toBe(3);
      expect(result.firstExecutionRunId).toBe(handle.firstExecutionRunId);
      expect(result.continuedFromExecutionRunId).toBeTruthy();
      expect(result.continuedFromExecutionRunId).not.toBe(handle.firstExecutionRunId);

      // Walk the chain from the first run.
      let runId = handle.firstExecutionRunId;
      const chain: string[] = [runId];
      for (let i = 0; i < 3; i++) {
        const run = env.client.workflow.getHandle(workflowId, runId);
        expect((await run.describe()).status.name).toBe('CONTINUED_AS_NEW');
        const last = (await historyEvents(run)).at(-1);
        expect(last?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
        const nextRunId = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
        expect(nextRunId).toBeTruthy();
        runId = nextRunId!;
        chain.push(runId);
      }
      expect(new Set(chain).size).toBe(4);
      const lastRun = env.client.workflow.getHandle(workflowId, runId);
      expect((await lastRun.describe()).status.name).toBe('COMPLETED');
      const firstEvent = (await historyEvents(lastRun))[0];
      expect(firstEvent?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId).toBe(chain[2]);
      expect(firstEvent?.workflowExecutionStartedEventAttributes?.firstExecutionRunId).toBe(chain[0]);

      // The latest run is what an id-only handle describes.
      expect((await env.client.workflow.getHandle(workflowId).describe()).runId).toBe(runId);
    });
  });

  it('stops at the first run when the caller does not follow runs', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(continueAsNewCounter, {
        taskQueue,
        workflowId: uniqueId('continue-as-new-no-follow'),
        args: [0, 1],
        followRuns: false,
      });
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowContinuedAsNewError);
      expect((err as WorkflowContinuedAsNewError).newExecutionRunId).toBeTruthy();
    });
  });
});

// Updates as Temporal ends and starts them: an accepted update whose run closes first (return, failure,
// cancellation, termination, timeout, continue-as-new) fails with AcceptedUpdateCompletedWorkflow, for the waiting
// caller and for any later poll; an update the worker never saw is aborted with the run; an update sent to a run
// waiting out its start delay starts it at once (a signal does not); PollWorkflowExecutionUpdate without a stage
// answers at once; a run takes at most 10 updates in flight.
import { status as grpcStatus } from '@grpc/grpc-js';
import {
  Client,
  Connection,
  isGrpcServiceError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bounded,
  createEnv,
  eventTypeName,
  eventually,
  expectReplays,
  historyEvents,
  namespaceOf,
  uniqueId,
  withWorker,
  workflowBundle,
} from './env.js';
import {
  doneUpdate,
  endRunSignal,
  mutateStateUpdate,
  neverEndingUpdate,
  recordedQuery,
  recordsUntilDone,
  recordUpdate,
  setUpdateHandlerAndReturn,
  shieldedUpdate,
  unfinishedUpdates,
} from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;
const Stage = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;

/** Long enough that only an update (never the clock, even a skipping one) can start the run within a test. */
const FOREVER = '10000 days';
/** Bound on an update outcome that must arrive: before the fixes these waited forever. */
const OUTCOME_MS = 20_000;

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

async function typesOf(handle: WorkflowHandle): Promise<string[]> {
  return (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
}

async function acceptedCount(handle: WorkflowHandle): Promise<number> {
  return (await typesOf(handle)).filter((t) => t === 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED').length;
}

/** Settles `promise` (bounded) and returns what it rejected with, failing the test if it resolved. */
async function rejection(promise: Promise<unknown>, what: string): Promise<unknown> {
  return bounded(promise, OUTCOME_MS, what).then(
    (value) => {
      throw new Error(`${what} resolved with ${JSON.stringify(value)}; a rejection was expected`);
    },
    (err: unknown) => err,
  );
}

/** The caller's view of an accepted update whose workflow closed first. */
async function expectFailedBecauseWorkflowCompleted(promise: Promise<unknown>, what: string): Promise<void> {
  const err = await rejection(promise, what);
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (err as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect((cause as ApplicationFailure).type).toBe('AcceptedUpdateCompletedWorkflow');
  expect((cause as ApplicationFailure).nonRetryable).toBe(true);
  expect(cause?.message).toBe('Workflow Update failed because the Workflow completed before the Update completed.');
}

/**
 * Starts `unfinishedUpdates`, has one update accepted through startUpdate and another waiting in executeUpdate
 * (both accepted, neither finishes), then ends the run with `end` and checks both callers and a later poll.
 */
async function acceptedUpdatesOutlivedBy(
  taskQueue: string,
  end: (handle: WorkflowHandle<typeof unfinishedUpdates>) => Promise<void>,
): Promise<WorkflowHandle<typeof unfinishedUpdates>> {
  const handle = await env.client.workflow.start(unfinishedUpdates, { taskQueue, workflowId: uniqueId('unfinished') });
  const started = await handle.startUpdate(neverEndingUpdate, {
    waitForStage: WorkflowUpdateStage.ACCEPTED,
    updateId: 'started',
  });
  const executing = handle.executeUpdate(neverEndingUpdate, { updateId: 'executing' });
  executing.catch(() => undefined);
  await eventually(async () => ((await acceptedCount(handle)) === 2 ? true : undefined), 'both updates to be accepted');

  await end(handle);
  await expectFailedBecauseWorkflowCompleted(started.result(), 'the started update');
  await expectFailedBecauseWorkflowCompleted(executing, 'the executing update');
  // A poll after the close (the handle names the closed run) gets the same outcome, not "update not found".
  await expectFailedBecauseWorkflowCompleted(
    handle.getUpdateHandle('started', { workflowRunId: started.workflowRunId }).result(),
    'a new handle on the started update',
  );
  expect(await typesOf(handle)).not.toContain('WORKFLOW_EXECUTION_UPDATE_COMPLETED');
  return handle;
}

describe('an accepted update whose run closes first', () => {
  it('fails with AcceptedUpdateCompletedWorkflow when the workflow returns', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await acceptedUpdatesOutlivedBy(taskQueue, (h) => h.signal(endRunSignal, 'return'));
      expect(await handle.result()).toMatch(/^returned by run /);
      await expectReplays(handle);
    });
  });

  it('fails with AcceptedUpdateCompletedWorkflow when the workflow fails', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await acceptedUpdatesOutlivedBy(taskQueue, (h) => h.signal(endRunSignal, 'fail'));
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    });
  });

  it('fails with AcceptedUpdateCompletedWorkflow when the workflow is terminated', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await acceptedUpdatesOutlivedBy(taskQueue, async (h) => {
        await h.terminate('ended by the test');
      });
      expect((await handle.describe()).status.name).toBe('TERMINATED');
    });
  });

  it('fails with AcceptedUpdateCompletedWorkflow when the run times out', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(unfinishedUpdates, {
        taskQueue,
        workflowId: uniqueId('unfinished-timeout'),
        workflowRunTimeout: '3s',
      });
      const started = await handle.startUpdate(neverEndingUpdate, { waitForStage: WorkflowUpdateStage.ACCEPTED });
      // result() lets a time-skipping server skip to the timeout.
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      expect((await handle.describe()).status.name).toBe('TIMED_OUT');
      await expectFailedBecauseWorkflowCompleted(started.result(), 'the update of the timed-out run');
    });
  });

  it('fails with AcceptedUpdateCompletedWorkflow when the run continues as new: the update does not move on', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await acceptedUpdatesOutlivedBy(taskQueue, (h) => h.signal(endRunSignal, 'continue-as-new'));
      const nextRunId = (await handle.describe()).runId;
      expect(await typesOf(env.client.workflow.getHandle(handle.workflowId, nextRunId))).not.toContain(
        'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      );
      await handle.signal(endRunSignal, 'return');
      expect(await handle.result()).toBe(`returned by run ${nextRunId}`);
    });
  });

  it('is cancelled with the workflow when its handler is cancellable, and fails with AcceptedUpdateCompletedWorkflow when shielded', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(unfinishedUpdates, { taskQueue, workflowId: uniqueId('unfinished-cancel') });
      const cancellable = await handle.startUpdate(neverEndingUpdate, { waitForStage: WorkflowUpdateStage.ACCEPTED });
      const shielded = await handle.startUpdate(shieldedUpdate, { waitForStage: WorkflowUpdateStage.ACCEPTED });
      await handle.cancel();

      const err = await rejection(cancellable.result(), 'the cancellable update');
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((err as WorkflowUpdateFailedError).cause).toBeInstanceOf(CancelledFailure);
      await expectFailedBecauseWorkflowCompleted(shielded.result(), 'the shielded update');
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
    });
  });
});

describe('an update the worker has not accepted when its run closes', () => {
  it('is aborted: the waiting caller hears the workflow is gone', async () => {
    // No worker polls this queue: the update stays admitted until the run is terminated.
    const handle = await env.client.workflow.start(unfinishedUpdates, {
      taskQueue: uniqueId('no-worker'),
      workflowId: uniqueId('admitted-then-terminated'),
    });
    const pending = handle.executeUpdate(neverEndingUpdate, { updateId: 'never-seen' });
    pending.catch(() => undefined);
    await eventually(() => updateAdmitted(handle, 'never-seen'), 'the update to be admitted');
    await handle.terminate('ended before any worker saw the update');
    expect(await rejection(pending, 'the admitted update')).toBeInstanceOf(WorkflowNotFoundError);
  });

  it('goes to the next run when the run is retried: the caller gets its outcome from there', async () => {
    const taskQueue = uniqueId('late-worker');
    // Each run has 10 s: the worker, built ahead, must come up within the second one (4 s was too short for a
    // worker starting on a loaded 2-core machine, and the second run timed out under the update)
    await workflowBundle();
    const handle = await env.client.workflow.start(recordsUntilDone, {
      taskQueue,
      workflowId: uniqueId('admitted-then-retried'),
      workflowRunTimeout: '10s',
      // The next attempt would wait an hour; the update starts it at once.
      retry: { maximumAttempts: 2, initialInterval: '1 hour' },
    });
    const firstRunId = (await handle.describe()).runId;
    const pending = handle.executeUpdate(recordUpdate, { args: ['carried over'], updateId: 'moves-on' });
    pending.catch(() => undefined);
    await eventually(() => updateAdmitted(handle, 'moves-on'), 'the update to be admitted');
    // No worker yet: the first run times out and the retry policy starts the next one.
    await eventually(
      async () => ((await handle.describe()).runId !== firstRunId ? true : undefined),
      'the retry run to start',
      30_000,
    );
    await withWorker(env, { taskQueue }, async () => {
      expect(await bounded(pending, OUTCOME_MS, 'the moved update')).toEqual(['start', 'carried over']);
      expect(await handle.executeUpdate(doneUpdate)).toEqual(['start', 'carried over']);
    });
    const firstRun = await typesOf(env.client.workflow.getHandle(handle.workflowId, firstRunId));
    expect(firstRun).not.toContain('WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
    expect(firstRun[firstRun.length - 1]).toBe('WORKFLOW_EXECUTION_TIMED_OUT');
    expect(await typesOf(handle)).toContain('WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
  });
});

/** PollWorkflowExecutionUpdate without a wait policy: true once the update exists (as the SDK's own tests probe it). */
async function updateAdmitted(handle: WorkflowHandle, updateId: string): Promise<true | undefined> {
  try {
    await env.client.workflowService.pollWorkflowExecutionUpdate({
      namespace: namespaceOf(env),
      updateRef: { workflowExecution: { workflowId: handle.workflowId }, updateId },
    });
    return true;
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === grpcStatus.NOT_FOUND) return undefined;
    throw err;
  }
}

describe('PollWorkflowExecutionUpdate', () => {
  it('answers the stage reached so far at once when no stage is asked for', async () => {
    const handle = await env.client.workflow.start(recordsUntilDone, {
      taskQueue: uniqueId('no-worker'),
      workflowId: uniqueId('poll-unspecified'),
    });
    const pending = handle.executeUpdate(recordUpdate, { args: ['x'], updateId: 'admitted-only' });
    pending.catch(() => undefined);
    await eventually(() => updateAdmitted(handle, 'admitted-only'), 'the update to be admitted');
    // Temporal does not long-poll here (the SDK's own tests probe admission this way).
    const response = await bounded(
      env.client.workflowService.pollWorkflowExecutionUpdate({
        namespace: namespaceOf(env),
        updateRef: { workflowExecution: { workflowId: handle.workflowId }, updateId: 'admitted-only' },
      }),
      10_000,
      'a poll without a wait policy',
    );
    expect(response.stage).toBe(Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED);
    expect(response.outcome ?? undefined).toBeUndefined();
    await handle.terminate();
  });
});

describe('an update to a run waiting out its start delay', () => {
  it('starts the run at once and comes in its first workflow task (executeUpdate)', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(recordsUntilDone, {
        taskQueue,
        workflowId: uniqueId('delayed-execute'),
        startDelay: FOREVER,
      });
      expect(await bounded(handle.executeUpdate(recordUpdate, { args: ['a'] }), OUTCOME_MS, 'the update')).toEqual([
        'start',
        'a',
      ]);
      const types = await typesOf(handle);
      expect(types.slice(0, 6)).toEqual([
        'WORKFLOW_EXECUTION_STARTED',
        'WORKFLOW_TASK_SCHEDULED',
        'WORKFLOW_TASK_STARTED',
        'WORKFLOW_TASK_COMPLETED',
        'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
        'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
      ]);
      const started = (await historyEvents(handle))[0]?.workflowExecutionStartedEventAttributes;
      expect(Number(started?.firstWorkflowTaskBackoff?.seconds)).toBe(10000 * 24 * 3600);
      expect(await handle.executeUpdate(doneUpdate)).toEqual(['start', 'a']);
      expect(await handle.result()).toEqual(['start', 'a']);
      await expectReplays(handle);
    });
  });

  it('delivers updates admitted before any worker polled together with the start (startUpdate)', async () => {
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(recordsUntilDone, {
      taskQueue,
      workflowId: uniqueId('delayed-start-update'),
      startDelay: FOREVER,
    });
    // startUpdate waits for ACCEPTED, which needs a worker: admitted first, then the worker comes.
    const first = handle.startUpdate(recordUpdate, {
      args: ['a'],
      updateId: 'first',
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    await eventually(() => updateAdmitted(handle, 'first'), 'the first update to be admitted');
    const second = handle.startUpdate(doneUpdate, { updateId: 'second', waitForStage: WorkflowUpdateStage.ACCEPTED });
    await eventually(() => updateAdmitted(handle, 'second'), 'the second update to be admitted');
    await withWorker(env, { taskQueue }, async () => {
      expect(await (await bounded(first, OUTCOME_MS, 'the first update')).result()).toEqual(['start', 'a']);
      expect(await (await bounded(second, OUTCOME_MS, 'the second update')).result()).toEqual(['start', 'a']);
      expect(await handle.result()).toEqual(['start', 'a']);
    });
    // One workflow task carried the start and both updates.
    const types = await typesOf(handle);
    expect(types.filter((t) => t === 'WORKFLOW_TASK_COMPLETED')).toHaveLength(1);
    expect(types.filter((t) => t === 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).toHaveLength(2);
    await expectReplays(handle);
  });

  it('runs the handler in the same workflow task as the start', async () => {
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(setUpdateHandlerAndReturn, {
      taskQueue,
      workflowId: uniqueId('delayed-first-task'),
      startDelay: FOREVER,
    });
    const update = handle.executeUpdate(mutateStateUpdate, { updateId: 'mutate' });
    update.catch(() => undefined);
    await eventually(() => updateAdmitted(handle, 'mutate'), 'the update to be admitted');
    await withWorker(env, { taskQueue }, async () => {
      expect(await handle.result()).toBe('mutated by update');
    });
  });

  it('still starts the run when the update is rejected', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(recordsUntilDone, {
        taskQueue,
        workflowId: uniqueId('delayed-rejected'),
        startDelay: FOREVER,
      });
      const err = await rejection(handle.executeUpdate(recordUpdate, { args: [''] }), 'the refused update');
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((err as WorkflowUpdateFailedError).cause?.message).toContain('an empty item is refused');
      expect(await handle.query(recordedQuery)).toEqual(['start']);
      expect(await handle.executeUpdate(doneUpdate)).toEqual(['start']);
      expect(await handle.result()).toEqual(['start']);
    });
  });

  it('is not what a signal does: a signal waits for the delay like the start', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(unfinishedUpdates, {
        taskQueue,
        workflowId: uniqueId('delayed-signal'),
        startDelay: FOREVER,
      });
      await handle.signal(endRunSignal, 'return');
      const withStart = await env.client.workflow.signalWithStart(unfinishedUpdates, {
        taskQueue,
        workflowId: uniqueId('delayed-signal-with-start'),
        startDelay: FOREVER,
        signal: endRunSignal,
        signalArgs: ['return'],
      });
      // A worker polls all along; give a wrongly scheduled task time to show.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await typesOf(handle)).toEqual(['WORKFLOW_EXECUTION_STARTED', 'WORKFLOW_EXECUTION_SIGNALED']);
      expect(await typesOf(withStart)).toEqual(['WORKFLOW_EXECUTION_STARTED', 'WORKFLOW_EXECUTION_SIGNALED']);
      await handle.terminate();
      await withStart.terminate();
    });
  });
});

describe('update limits of a run', () => {
  it('refuses an 11th update in flight with RESOURCE_EXHAUSTED', async () => {
    // A connection without the SDK's retry interceptor, which would retry RESOURCE_EXHAUSTED for a while.
    const connection = await Connection.connect({ address: env.address, interceptors: [] });
    try {
      const client = new Client({ connection, namespace: namespaceOf(env) });
      const handle = await client.workflow.start(unfinishedUpdates, {
        taskQueue: uniqueId('no-worker'),
        workflowId: uniqueId('update-limit'),
      });
      for (let i = 0; i < 10; i++) {
        const pending = handle.executeUpdate(neverEndingUpdate, { updateId: `in-flight-${i}` });
        pending.catch(() => undefined);
        await eventually(() => updateAdmitted(handle, `in-flight-${i}`), `update ${i} to be admitted`);
      }
      const err = await rejection(
        client.workflowService.updateWorkflowExecution({
          namespace: namespaceOf(env),
          workflowExecution: { workflowId: handle.workflowId },
          waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED },
          request: { meta: { updateId: 'one-too-many' }, input: { name: 'neverEnding' } },
        }),
        'the 11th update',
      );
      expect(isGrpcServiceError(err) && err.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
      expect((err as Error).message).toContain('limit on number of concurrent in-flight updates has been reached (10)');
      await handle.terminate();
    } finally {
      await connection.close();
    }
  });
});

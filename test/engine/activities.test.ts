// Activities: retry policy, the four timeouts, heartbeat details, cancellation through heartbeats,
// async completion by task token and by id.
import { ActivityCancelledError, ActivityNotFoundError, WorkflowFailedError } from '@temporalio/client';
import {
  ActivityFailure,
  ApplicationFailure,
  defaultPayloadConverter,
  RetryState,
  TimeoutFailure,
  TimeoutType,
} from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActivityRecorder, createActivities, type ActivityInfoSnapshot } from './activities.js';
import {
  againstRealServer,
  createEnv,
  eventTypeName,
  eventually,
  expectReplays,
  historyEvents,
  isSubsequence,
  uniqueId,
  withWorker,
} from './env.js';
import { cancelAsyncActivity, cancelHeartbeatingActivity, runActivity } from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;

let env: TestWorkflowEnvironment;
const recorder = new ActivityRecorder();
const activities = createActivities(recorder);

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

/** The failure chain of a workflow that failed because its activity failed. */
async function activityFailureOf(promise: Promise<unknown>): Promise<ActivityFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ActivityFailure);
  return cause as ActivityFailure;
}

describe('retry policy', () => {
  it('retries with initial interval, backoff coefficient and maximum interval until the activity succeeds', async () => {
    // Virtual time makes minute-scale intervals free; a real server gets sub-second ones.
    const unit = againstRealServer ? 100 : 10_000;
    const expectedGaps = [unit, 2 * unit, 2.5 * unit, 2.5 * unit];
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('retry-backoff');
      const attempt = await env.client.workflow.execute(runActivity, {
        taskQueue,
        workflowId,
        args: [
          'failTimes',
          [4],
          {
            startToCloseTimeout: '10s',
            retry: { initialInterval: unit, backoffCoefficient: 2, maximumInterval: 2.5 * unit, maximumAttempts: 5 },
          },
        ],
      });
      expect(attempt).toBe(5);
      const scheduledAt = recorder.attemptScheduledAt.get(`${workflowId}/1`) ?? [];
      expect(scheduledAt).toHaveLength(5);
      const gaps = scheduledAt.slice(1).map((t, i) => t - (scheduledAt[i] ?? 0));
      gaps.forEach((gap, i) => {
        const expected = expectedGaps[i] ?? 0;
        expect(gap, `gap before attempt ${i + 2}`).toBeGreaterThanOrEqual(expected);
        expect(gap, `gap before attempt ${i + 2}`).toBeLessThan(expected + (againstRealServer ? 2_000 : 10_000));
      });
      // Failed attempts are not history: only the last attempt's events are written.
      const types = (await historyEvents(env.client.workflow.getHandle(workflowId))).map((e) => eventTypeName(e, EventType));
      expect(types.filter((t) => t === 'ACTIVITY_TASK_STARTED')).toHaveLength(1);
      const started = (await historyEvents(env.client.workflow.getHandle(workflowId))).find(
        (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
      );
      expect(started?.activityTaskStartedEventAttributes?.attempt).toBe(5);
    });
  });

  it('gives up after maximum attempts with retry state MAXIMUM_ATTEMPTS_REACHED and the last failure as cause', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('retry-max-attempts');
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId,
          args: [
            'failWith',
            ['Flaky', false],
            { startToCloseTimeout: '10s', retry: { initialInterval: '1s', maximumAttempts: 3 } },
          ],
        }),
      );
      expect(failure.retryState).toBe(RetryState.MAXIMUM_ATTEMPTS_REACHED);
      expect(failure.activityType).toBe('failWith');
      expect(failure.cause).toBeInstanceOf(ApplicationFailure);
      expect((failure.cause as ApplicationFailure).type).toBe('Flaky');
      expect((failure.cause as ApplicationFailure).message).toBe('attempt 3 failed');
      expect(recorder.attemptScheduledAt.get(`${workflowId}/1`)).toHaveLength(3);
    });
  });

  it('does not retry error types listed in nonRetryableErrorTypes', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('retry-non-retryable-type');
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId,
          args: [
            'failWith',
            ['Fatal', false],
            {
              startToCloseTimeout: '10s',
              retry: { initialInterval: '1s', maximumAttempts: 10, nonRetryableErrorTypes: ['Fatal'] },
            },
          ],
        }),
      );
      expect(failure.retryState).toBe(RetryState.NON_RETRYABLE_FAILURE);
      expect((failure.cause as ApplicationFailure).type).toBe('Fatal');
      expect(recorder.attemptScheduledAt.get(`${workflowId}/1`)).toHaveLength(1);
    });
  });

  it('does not retry a failure marked non-retryable', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('retry-non-retryable-flag');
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId,
          args: ['failWith', ['Whatever', true], { startToCloseTimeout: '10s', retry: { maximumAttempts: 10 } }],
        }),
      );
      expect(failure.retryState).toBe(RetryState.NON_RETRYABLE_FAILURE);
      expect((failure.cause as ApplicationFailure).nonRetryable).toBe(true);
      expect(recorder.attemptScheduledAt.get(`${workflowId}/1`)).toHaveLength(1);
    });
  });

  it('stops retrying when the next attempt would pass the schedule-to-close timeout (retry state TIMEOUT)', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('retry-until-schedule-to-close');
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId,
          args: [
            'failWith',
            ['Flaky', false],
            { scheduleToCloseTimeout: '2500ms', retry: { initialInterval: '1s', backoffCoefficient: 1 } },
          ],
        }),
      );
      expect(failure.retryState).toBe(RetryState.TIMEOUT);
      expect(failure.cause).toBeInstanceOf(ApplicationFailure);
      expect(recorder.attemptScheduledAt.get(`${workflowId}/1`)).toHaveLength(3);
    });
  });
});

describe('timeouts', () => {
  it('fills in start-to-close from schedule-to-close the way the server normalises activity timeouts', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const seen = (await env.client.workflow.execute(runActivity, {
        taskQueue,
        workflowId: uniqueId('timeout-normalise'),
        args: ['describeSelf', [], { scheduleToCloseTimeout: '30s', heartbeatTimeout: '5s' }],
      })) as ActivityInfoSnapshot;
      expect(seen.startToCloseTimeoutMs).toBe(30_000);
      expect(seen.scheduleToCloseTimeoutMs).toBe(30_000);
      expect(seen.heartbeatTimeoutMs).toBe(5_000);
      expect(seen.activityType).toBe('describeSelf');
      expect(seen.taskQueue).toBe(taskQueue);
      expect(seen.attempt).toBe(1);
    });
  });

  it('times out an attempt at start-to-close', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId: uniqueId('timeout-start-to-close'),
          args: ['stall', [0], { startToCloseTimeout: '1s', retry: { maximumAttempts: 1 } }],
        }),
      );
      expect(failure.cause).toBeInstanceOf(TimeoutFailure);
      expect((failure.cause as TimeoutFailure).timeoutType).toBe(TimeoutType.START_TO_CLOSE);
    });
  });

  it('times out an activity nobody picks up at schedule-to-start', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId: uniqueId('timeout-schedule-to-start'),
          args: [
            'echo',
            ['never'],
            { taskQueue: uniqueId('unpolled'), scheduleToStartTimeout: '1s', startToCloseTimeout: '10s' },
          ],
        }),
      );
      expect(failure.cause).toBeInstanceOf(TimeoutFailure);
      expect((failure.cause as TimeoutFailure).timeoutType).toBe(TimeoutType.SCHEDULE_TO_START);
    });
  });

  it('times out across attempts at schedule-to-close', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId: uniqueId('timeout-schedule-to-close'),
          args: [
            'stall',
            [0],
            { startToCloseTimeout: '1s', scheduleToCloseTimeout: '1600ms', retry: { initialInterval: '100ms' } },
          ],
        }),
      );
      expect(failure.cause).toBeInstanceOf(TimeoutFailure);
      expect((failure.cause as TimeoutFailure).timeoutType).toBe(TimeoutType.SCHEDULE_TO_CLOSE);
    });
  });

  it('keeps a heartbeating activity alive past its heartbeat timeout until start-to-close', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId: uniqueId('heartbeat-keeps-alive'),
          args: ['stall', [200], { startToCloseTimeout: '3s', heartbeatTimeout: '1s', retry: { maximumAttempts: 1 } }],
        }),
      );
      expect(failure.cause).toBeInstanceOf(TimeoutFailure);
      expect((failure.cause as TimeoutFailure).timeoutType).toBe(TimeoutType.START_TO_CLOSE);
    });
  });

  it('times out an activity that stops heartbeating and reports its last heartbeat details', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const failure = await activityFailureOf(
        env.client.workflow.execute(runActivity, {
          taskQueue,
          workflowId: uniqueId('timeout-heartbeat'),
          args: [
            'heartbeatOnceThenStall',
            ['checkpoint-7'],
            { startToCloseTimeout: '30s', heartbeatTimeout: '1s', retry: { maximumAttempts: 1 } },
          ],
        }),
      );
      expect(failure.cause).toBeInstanceOf(TimeoutFailure);
      const timeout = failure.cause as TimeoutFailure;
      expect(timeout.timeoutType).toBe(TimeoutType.HEARTBEAT);
      expect(timeout.lastHeartbeatDetails).toBe('checkpoint-7');
    });
  });
});

describe('heartbeats and cancellation', () => {
  it('hands the last heartbeat details to the next attempt', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const result = await env.client.workflow.execute(runActivity, {
        taskQueue,
        workflowId: uniqueId('heartbeat-details'),
        args: [
          'resumeFromHeartbeat',
          ['checkpoint-42'],
          { startToCloseTimeout: '10s', heartbeatTimeout: '5s', retry: { initialInterval: '100ms', maximumAttempts: 3 } },
        ],
      });
      expect(result).toBe('attempt 2 resumed from checkpoint-42');
    });
  });

  it('delivers a cancel request to a heartbeating activity and records the cancellation', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('activity-cancel');
      const handle = await env.client.workflow.start(cancelHeartbeatingActivity, {
        taskQueue,
        workflowId,
        args: [500],
      });
      expect(await handle.result()).toBe('cancelled');
      expect(recorder.cancellationsSeen.has(`${workflowId}/1`)).toBe(true);
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(
        // ACTIVITY_TASK_STARTED is written together with the attempt's close event, as Temporal does.
        isSubsequence(types, [
          'ACTIVITY_TASK_SCHEDULED',
          'TIMER_STARTED',
          'TIMER_FIRED',
          'ACTIVITY_TASK_CANCEL_REQUESTED',
          'ACTIVITY_TASK_STARTED',
          'ACTIVITY_TASK_CANCELED',
          'WORKFLOW_EXECUTION_COMPLETED',
        ]),
        types.join(' '),
      ).toBe(true);
      await expectReplays(handle);
    });
  });
});

describe('async completion', () => {
  it('completes an activity later by its task token, accepting heartbeats meanwhile', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const key = uniqueId('token');
      const handle = await env.client.workflow.start(runActivity, {
        taskQueue,
        workflowId: uniqueId('async-token'),
        args: ['completeLater', [key], { startToCloseTimeout: '1 minute', heartbeatTimeout: '30s' }],
      });
      const token = await eventually(async () => recorder.taskTokens.get(key), 'the activity task token');
      await env.client.activity.heartbeat(token, 'still working');

      // Describe shows the started activity with its heartbeat details.
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      expect(pending).toHaveLength(1);
      expect(pending[0]?.activityId).toBe('1');
      expect(pending[0]?.activityType?.name).toBe('completeLater');
      expect(pending[0]?.state).toBe(temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED);
      expect(pending[0]?.attempt).toBe(1);
      expect(defaultPayloadConverter.fromPayload(pending[0]?.heartbeatDetails?.payloads?.[0] ?? {})).toBe('still working');

      await env.client.activity.complete(token, 'completed by token');
      expect(await handle.result()).toBe('completed by token');
      // The task token is spent: a second completion finds no activity.
      await expect(env.client.activity.complete(token, 'again')).rejects.toBeInstanceOf(ActivityNotFoundError);
    });
  });

  it('tells an outside completer about a cancel request through its heartbeat', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const key = uniqueId('token-cancel');
      const handle = await env.client.workflow.start(cancelAsyncActivity, {
        taskQueue,
        workflowId: uniqueId('async-cancel'),
        args: [key, 300],
      });
      const token = await eventually(async () => recorder.taskTokens.get(key), 'the activity task token');
      await eventually(async () => {
        const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
        return types.includes('ACTIVITY_TASK_CANCEL_REQUESTED') ? true : undefined;
      }, 'the cancel request');
      await expect(env.client.activity.heartbeat(token, 'still working?')).rejects.toBeInstanceOf(ActivityCancelledError);
      await env.client.activity.reportCancellation(token, 'stopped on request');
      expect(await handle.result()).toBe('cancelled');
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(isSubsequence(types, ['ACTIVITY_TASK_CANCEL_REQUESTED', 'ACTIVITY_TASK_CANCELED']), types.join(' ')).toBe(true);
    });
  });

  it('fails an activity later by its task token', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const key = uniqueId('token-fail');
      const handle = await env.client.workflow.start(runActivity, {
        taskQueue,
        workflowId: uniqueId('async-fail'),
        args: ['completeLater', [key], { startToCloseTimeout: '1 minute', retry: { maximumAttempts: 1 } }],
      });
      const token = await eventually(async () => recorder.taskTokens.get(key), 'the activity task token');
      await env.client.activity.fail(token, ApplicationFailure.nonRetryable('failed from outside', 'External'));
      const failure = await activityFailureOf(handle.result());
      expect(failure.cause).toBeInstanceOf(ApplicationFailure);
      expect((failure.cause as ApplicationFailure).message).toBe('failed from outside');
      expect((failure.cause as ApplicationFailure).type).toBe('External');
    });
  });

  it('completes an activity later by workflow id and activity id', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const key = uniqueId('by-id');
      const workflowId = uniqueId('async-by-id');
      const handle = await env.client.workflow.start(runActivity, {
        taskQueue,
        workflowId,
        args: ['completeLater', [key], { startToCloseTimeout: '1 minute' }],
      });
      await eventually(async () => recorder.taskTokens.get(key), 'the activity to start');
      await env.client.activity.complete({ workflowId, activityId: '1' }, 'completed by id');
      expect(await handle.result()).toBe('completed by id');
    });
  });
});

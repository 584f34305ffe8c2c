// Workflow tasks and history: every command writes its event in command order (and replays),
// sticky queues with fallback to full history, workflow-task failure and timeout retries,
// history paging, and the long poll for the close event.
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import {
  bounded,
  createEnv,
  eventTypeName,
  eventually,
  historyEvents,
  INT_KEY,
  isSubsequence,
  KEYWORD_KEY,
  namespaceOf,
  uniqueId,
  withWorker,
  workflowBundle,
  type HistoryEvent,
} from './env.js';
import {
  allCommands,
  finishSignal,
  flakyTask,
  itemsQuery,
  manyTimers,
  pushSignal,
  returnValue,
  signalCollector,
} from './workflows.js';

const { EventType, HistoryEventFilterType, TaskQueueKind, WorkflowTaskFailedCause, TimeoutType } = temporal.api.enums.v1;

let env: TestWorkflowEnvironment;
const activities = createActivities();

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

const typesOf = (events: HistoryEvent[]): string[] => events.map((e) => eventTypeName(e, EventType));

async function waitForEvent(handle: WorkflowHandle, type: string): Promise<void> {
  await eventually(
    async () => (typesOf(await historyEvents(handle)).includes(type) ? true : undefined),
    `${type} in the history of ${handle.workflowId}`,
  );
}

describe.each([
  { cache: 'a sticky cache', maxCachedWorkflows: undefined },
  { cache: 'no cache (every task replays full history)', maxCachedWorkflows: 0 },
])('every command writes its event, with $cache', ({ maxCachedWorkflows }) => {
  it('writes events in command order, replays deterministically and continues as new', async () => {
    await withWorker(env, { activities, maxCachedWorkflows }, async (taskQueue) => {
      const target = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('signal-target') });
      const workflowId = uniqueId('all-commands');
      const handle = await env.client.workflow.start(allCommands, {
        taskQueue,
        workflowId,
        args: [{ signalTarget: target.workflowId, continued: false }],
      });
      const firstRunId = handle.firstExecutionRunId;
      expect(await handle.result()).toBe(`continued from ${firstRunId}`);

      const firstRun = env.client.workflow.getHandle(workflowId, firstRunId);
      const events = await historyEvents(firstRun);
      const types = typesOf(events);

      // The first workflow task emitted four commands: their events follow its completion in that order.
      const firstCompletion = types.indexOf('WORKFLOW_TASK_COMPLETED');
      expect(types.slice(firstCompletion + 1, firstCompletion + 5)).toEqual([
        'TIMER_STARTED',
        'ACTIVITY_TASK_SCHEDULED',
        'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
        'WORKFLOW_PROPERTIES_MODIFIED',
      ]);
      expect(
        isSubsequence(types, [
          'WORKFLOW_EXECUTION_STARTED',
          'TIMER_STARTED',
          'ACTIVITY_TASK_SCHEDULED',
          'ACTIVITY_TASK_STARTED',
          'ACTIVITY_TASK_COMPLETED',
          'TIMER_CANCELED',
          'MARKER_RECORDED',
          'SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
          'EXTERNAL_WORKFLOW_EXECUTION_SIGNALED',
          'START_CHILD_WORKFLOW_EXECUTION_INITIATED',
          'CHILD_WORKFLOW_EXECUTION_STARTED',
          'CHILD_WORKFLOW_EXECUTION_COMPLETED',
          'START_CHILD_WORKFLOW_EXECUTION_INITIATED',
          'CHILD_WORKFLOW_EXECUTION_STARTED',
          'CHILD_WORKFLOW_EXECUTION_FAILED',
          'START_CHILD_WORKFLOW_EXECUTION_INITIATED',
          'CHILD_WORKFLOW_EXECUTION_STARTED',
          'REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED',
          'EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED',
          'CHILD_WORKFLOW_EXECUTION_CANCELED',
          'WORKFLOW_EXECUTION_CONTINUED_AS_NEW',
        ]),
        types.join(' '),
      ).toBe(true);
      expect(types.at(-1)).toBe('WORKFLOW_EXECUTION_CONTINUED_AS_NEW');

      // Event ids are dense and ascending; every event has a time.
      events.forEach((event, i) => {
        expect(Number(event.eventId)).toBe(i + 1);
        expect(event.eventTime).toBeTruthy();
      });

      const markers = events
        .filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED)
        .map((e) => e.markerRecordedEventAttributes?.markerName);
      expect(markers).toContain('core_patch');
      expect(markers).toContain('core_local_activity');
      const scheduled = events.find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
      expect(scheduled?.activityTaskScheduledEventAttributes?.activityType?.name).toBe('echo');

      // Upsert search attributes and modify properties are visible on the closed run.
      const description = await firstRun.describe();
      expect(description.status.name).toBe('CONTINUED_AS_NEW');
      expect(description.memo).toEqual({ note: 'modified' });
      expect(description.typedSearchAttributes.get(KEYWORD_KEY)).toBe('upserted');
      expect(description.typedSearchAttributes.get(INT_KEY)).toBe(7);

      // The history the server wrote replays through the SDK without a nondeterminism error.
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, await firstRun.fetchHistory(), workflowId);

      await target.signal(finishSignal);
      expect(await target.result()).toEqual(['from-external']);
    });
  });
});

describe('sticky queue', () => {
  it('sends later tasks to the sticky queue and falls back to the normal queue when that worker is gone', async () => {
    const taskQueue = uniqueId('tq');
    const workflowId = uniqueId('sticky');
    const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId });

    await withWorker(env, { activities, taskQueue }, async () => {
      await waitForEvent(handle, 'WORKFLOW_TASK_COMPLETED');
      await handle.signal(pushSignal, 'on sticky worker');
      expect(await handle.query(itemsQuery)).toEqual(['on sticky worker']);
      await eventually(async () => {
        const completed = (await historyEvents(handle)).filter(
          (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        );
        return completed.length >= 2 ? true : undefined;
      }, 'the second workflow task to complete');
    });

    const scheduled = (await historyEvents(handle)).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
    expect(scheduled[0]?.workflowTaskScheduledEventAttributes?.taskQueue?.kind).toBe(TaskQueueKind.TASK_QUEUE_KIND_NORMAL);
    expect(scheduled[1]?.workflowTaskScheduledEventAttributes?.taskQueue?.kind).toBe(TaskQueueKind.TASK_QUEUE_KIND_STICKY);

    // The sticky worker shut down: the next task must reach a fresh worker with full history.
    await handle.signal(pushSignal, 'after fallback');
    await handle.signal(finishSignal);
    await withWorker(env, { activities, taskQueue, maxCachedWorkflows: 0 }, async () => {
      expect(await handle.result()).toEqual(['on sticky worker', 'after fallback']);
    });
  });
});

describe('workflow task failures and timeouts', () => {
  it('retries a failed workflow task until a worker completes it', async () => {
    const failingBundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./workflows-failing-task.ts', import.meta.url)),
      logger: new DefaultLogger('ERROR'),
    });
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(flakyTask, { taskQueue, workflowId: uniqueId('task-failure') });

    await withWorker(env, { activities, taskQueue, workflowBundle: failingBundle }, async () => {
      await waitForEvent(handle, 'WORKFLOW_TASK_FAILED');
    });
    await withWorker(env, { activities, taskQueue }, async () => {
      expect(await handle.result()).toBe('recovered');
    });

    const events = await historyEvents(handle);
    const types = typesOf(events);
    expect(
      isSubsequence(types, [
        'WORKFLOW_TASK_SCHEDULED',
        'WORKFLOW_TASK_STARTED',
        'WORKFLOW_TASK_FAILED',
        'WORKFLOW_TASK_SCHEDULED',
        'WORKFLOW_TASK_STARTED',
        'WORKFLOW_TASK_COMPLETED',
        'WORKFLOW_EXECUTION_COMPLETED',
      ]),
      types.join(' '),
    ).toBe(true);
    const failed = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
    expect(failed?.workflowTaskFailedEventAttributes?.cause).toBe(
      WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
    );
    expect(failed?.workflowTaskFailedEventAttributes?.failure?.message).toContain('deliberate workflow task failure');
    const lastScheduled = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED).at(-1);
    expect(lastScheduled?.workflowTaskScheduledEventAttributes?.attempt).toBeGreaterThanOrEqual(2);
  });

  it('times out a workflow task its poller never answers and hands it to another worker', async () => {
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(returnValue<string>, {
      taskQueue,
      workflowId: uniqueId('task-timeout'),
      args: ['after timeout'],
      workflowTaskTimeout: '1s',
    });
    // A worker that takes the task and dies: poll it through the raw service and never respond.
    const polled = await env.connection.withDeadline(Date.now() + 15_000, () =>
      env.connection.workflowService.pollWorkflowTaskQueue({
        namespace: namespaceOf(env),
        taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        identity: 'stalled-worker',
      }),
    );
    expect(polled.taskToken?.length).toBeGreaterThan(0);
    expect(polled.workflowExecution?.workflowId).toBe(handle.workflowId);

    await withWorker(env, { activities, taskQueue }, async () => {
      expect(await handle.result()).toBe('after timeout');
    });
    const events = await historyEvents(handle);
    const types = typesOf(events);
    expect(
      isSubsequence(types, [
        'WORKFLOW_TASK_SCHEDULED',
        'WORKFLOW_TASK_STARTED',
        'WORKFLOW_TASK_TIMED_OUT',
        'WORKFLOW_TASK_SCHEDULED',
        'WORKFLOW_TASK_STARTED',
        'WORKFLOW_TASK_COMPLETED',
        'WORKFLOW_EXECUTION_COMPLETED',
      ]),
      types.join(' '),
    ).toBe(true);
    const timedOut = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT);
    expect(timedOut?.workflowTaskTimedOutEventAttributes?.timeoutType).toBe(TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE);
  });
});

describe('completion racing a signal', () => {
  it('refuses to close a workflow while a signal is buffered: the task fails with UNHANDLED_COMMAND', async () => {
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('unhandled') });
    // A worker that holds the first task while a signal arrives, then tries to complete the workflow.
    const polled = await env.connection.withDeadline(Date.now() + 15_000, () =>
      env.connection.workflowService.pollWorkflowTaskQueue({
        namespace: namespaceOf(env),
        taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        identity: 'racing-worker',
      }),
    );
    expect(polled.taskToken?.length).toBeGreaterThan(0);
    await handle.signal(pushSignal, 'arrived during the task');
    // Temporal answers InvalidArgument "UnhandledCommand": the SDK's core evicts the run on exactly that answer
    // and replays it with the signal; a success would leave the worker's cached run closed and the signal lost.
    const answer = await env.connection.workflowService
      .respondWorkflowTaskCompleted({
        namespace: namespaceOf(env),
        taskToken: polled.taskToken,
        identity: 'racing-worker',
        commands: [
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
            completeWorkflowExecutionCommandAttributes: {
              result: { payloads: [defaultPayloadConverter.toPayload(['premature'])] },
            },
          },
        ],
      })
      .then(
        () => 'success',
        (err: { code?: number; details?: string }) => `${err.code} ${err.details}`,
      );
    expect(answer).toBe('3 UnhandledCommand');

    expect((await handle.describe()).status.name).toBe('RUNNING');
    const failed = (await historyEvents(handle)).find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
    expect(failed?.workflowTaskFailedEventAttributes?.cause).toBe(
      WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
    );
    await handle.signal(finishSignal);
    await withWorker(env, { activities, taskQueue }, async () => {
      expect(await handle.result()).toEqual(['arrived during the task']);
    });
  });
});

describe('history paging', () => {
  it('pages a long history for the worker and for GetWorkflowExecutionHistory', async () => {
    // ~300 events: more than the 256 a real server puts in one poll response.
    const timers = 60;
    await withWorker(
      env,
      { activities, maxCachedWorkflows: 0 },
      async (taskQueue) => {
        const handle = await env.client.workflow.start(manyTimers, { taskQueue, workflowId: uniqueId('paging'), args: [timers] });
        expect(await handle.result()).toBe(timers);

        const pageSize = 50;
        const pages: HistoryEvent[][] = [];
        let nextPageToken: Uint8Array | undefined;
        do {
          const response = await env.connection.workflowService.getWorkflowExecutionHistory({
            namespace: namespaceOf(env),
            execution: { workflowId: handle.workflowId },
            maximumPageSize: pageSize,
            nextPageToken,
          });
          pages.push(response.history?.events ?? []);
          nextPageToken = response.nextPageToken?.length ? response.nextPageToken : undefined;
        } while (nextPageToken !== undefined && pages.length < 100);

        const paged = pages.flat();
        expect(pages.length).toBeGreaterThan(1);
        for (const page of pages) expect(page.length).toBeLessThanOrEqual(pageSize);
        expect(paged.length).toBeGreaterThan(5 * timers);
        for (const [i, event] of paged.entries()) expect(Number(event.eventId)).toBe(i + 1);
        expect(paged.length).toBe((await handle.describe()).historyLength);
        expect(paged.length).toBe((await historyEvents(handle)).length);
        expect(typesOf(paged).at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
      },
      90_000,
    );
  }, 120_000);
});

describe('long poll for the close event', () => {
  it('holds GetWorkflowExecutionHistory(waitNewEvent, CLOSE_EVENT) until the workflow closes', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('long-poll') });
      const pollCloseEvent = async (): Promise<HistoryEvent[]> => {
        let nextPageToken: Uint8Array | undefined;
        for (let round = 0; round < 20; round++) {
          const response = await env.connection.workflowService.getWorkflowExecutionHistory({
            namespace: namespaceOf(env),
            execution: { workflowId: handle.workflowId },
            waitNewEvent: true,
            historyEventFilterType: HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
            nextPageToken,
          });
          const events = response.history?.events ?? [];
          if (events.length > 0) return events;
          nextPageToken = response.nextPageToken ?? undefined;
        }
        throw new Error('no close event after 20 long polls');
      };
      const closeEvents = bounded(pollCloseEvent(), 30_000, 'the close event long poll');
      const early = await Promise.race([
        closeEvents.then(() => 'answered'),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 500)),
      ]);
      expect(early).toBe('still waiting');

      await handle.signal(finishSignal);
      const events = await closeEvents;
      expect(events).toHaveLength(1);
      expect(typesOf(events)).toEqual(['WORKFLOW_EXECUTION_COMPLETED']);
    });
  });
});

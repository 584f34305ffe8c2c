// Local activities that run longer than the workflow task timeout. The SDK's core then "heartbeats" the workflow
// task at ~80 % of its timeout: it completes it with `forceCreateNewWorkflowTask` and `returnNewWorkflowTask`, and
// Temporal creates the next task at once, starts it for the same worker and returns it in the completion's
// response (`workflowTask`), so the local activity carries on without a round trip through matching. Signals,
// updates and queries that arrive meanwhile ride on those tasks. The SDK tests run the real worker; the protocol
// tests check the response field by field through the raw WorkflowService.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
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
  type HistoryEvent,
} from './env.js';
import {
  idleThenLongLocalActivityUpdate,
  localActivitiesUnderLoad,
  longLocalActivities,
  longLocalActivityWithMessages,
  noteSignal,
  noteUpdate,
} from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;
const EVENT_TYPES = EventType as unknown as Record<number, string>;
const { CommandType, TaskQueueKind, QueryResultType, UpdateWorkflowExecutionLifecycleStage } = temporal.api.enums.v1;

/** The workflow task timeout of these runs: the SDK heartbeats the task every ~1.6 s. */
const WFT_TIMEOUT = '2s';
const LOCAL_ACTIVITY_MS = 5_000;

let env: TestWorkflowEnvironment;
const activities = createActivities();

beforeAll(async () => {
  // a real clock: the SDK times its heartbeats on the wall clock
  env = await createEnv('dev-server');
});
afterAll(async () => {
  await env?.teardown();
});

function typesOf(events: HistoryEvent[]): string[] {
  return events.map((e) => eventTypeName(e, EVENT_TYPES));
}

/** Every workflow task in the history was scheduled, started and completed in turn: none timed out or failed. */
function expectOnlyCompletedWorkflowTasks(types: string[]): void {
  const tasks = types.filter((t) => t.startsWith('WORKFLOW_TASK_'));
  expect(tasks.length % 3, types.join(' ')).toBe(0);
  for (let i = 0; i < tasks.length; i += 3) {
    expect(tasks.slice(i, i + 3), `workflow task ${i / 3 + 1} of ${types.join(' ')}`).toEqual([
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
      'WORKFLOW_TASK_COMPLETED',
    ]);
  }
}

function localActivityMarkers(events: HistoryEvent[]): HistoryEvent[] {
  return events.filter(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED &&
      e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
  );
}

describe('a local activity longer than the workflow task timeout (SDK worker)', () => {
  it('completes with the activity result; the history shows the heartbeat tasks and one marker', {
    timeout: 60_000,
  }, async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const startedAt = Date.now();
      const handle = await env.client.workflow.start(longLocalActivities, {
        taskQueue,
        workflowId: uniqueId('long-local-activity'),
        args: [1, LOCAL_ACTIVITY_MS],
        workflowTaskTimeout: WFT_TIMEOUT,
      });
      expect(await bounded(handle.result(), 30_000, 'the workflow result')).toEqual(['activity']);
      const elapsed = Date.now() - startedAt;
      // the activity's own 5 s and a little: a heartbeat that waits on anything (a poll, a timeout) shows here
      expect(elapsed, `took ${elapsed} ms`).toBeLessThan(LOCAL_ACTIVITY_MS + 3_000);

      const events = await historyEvents(handle);
      const types = typesOf(events);
      expectOnlyCompletedWorkflowTasks(types);
      // the first task plus at least two heartbeats (at ~1.6 s and ~3.2 s of the 5 s activity)
      expect(types.filter((t) => t === 'WORKFLOW_TASK_COMPLETED').length, types.join(' ')).toBeGreaterThanOrEqual(3);
      expect(localActivityMarkers(events)).toHaveLength(1);
      expect(types.slice(-3), types.join(' ')).toEqual([
        'WORKFLOW_TASK_COMPLETED',
        'MARKER_RECORDED',
        'WORKFLOW_EXECUTION_COMPLETED',
      ]);
      await expectReplays(handle);
    });
  });

  it('runs two such local activities in a row, one marker each', { timeout: 60_000 }, async () => {
    const each = 3_500;
    await withWorker(env, { activities }, async (taskQueue) => {
      const startedAt = Date.now();
      const handle = await env.client.workflow.start(longLocalActivities, {
        taskQueue,
        workflowId: uniqueId('two-long-local-activities'),
        args: [2, each],
        workflowTaskTimeout: WFT_TIMEOUT,
      });
      expect(await bounded(handle.result(), 30_000, 'the workflow result')).toEqual(['activity', 'activity']);
      const elapsed = Date.now() - startedAt;
      expect(elapsed, `took ${elapsed} ms`).toBeLessThan(2 * each + 3_000);

      const events = await historyEvents(handle);
      const types = typesOf(events);
      expectOnlyCompletedWorkflowTasks(types);
      expect(localActivityMarkers(events)).toHaveLength(2);
      // each activity outlives at least one heartbeat: a completed task before each marker that records nothing
      const firstMarker = types.indexOf('MARKER_RECORDED');
      expect(types.slice(0, firstMarker).filter((t) => t === 'WORKFLOW_TASK_COMPLETED').length).toBeGreaterThanOrEqual(2);
      expect(types.slice(firstMarker + 1).filter((t) => t === 'WORKFLOW_TASK_COMPLETED').length).toBeGreaterThanOrEqual(2);
      await expectReplays(handle);
    });
  });

  it('without a workflow cache (no sticky queue) the heartbeat tasks go through the normal queue', {
    timeout: 60_000,
  }, async () => {
    await withWorker(env, { activities, maxCachedWorkflows: 0 }, async (taskQueue) => {
      const handle = await env.client.workflow.start(longLocalActivities, {
        taskQueue,
        workflowId: uniqueId('long-local-activity-no-cache'),
        args: [1, 3_500],
        workflowTaskTimeout: WFT_TIMEOUT,
      });
      expect(await bounded(handle.result(), 30_000, 'the workflow result')).toEqual(['activity']);
      const events = await historyEvents(handle);
      const types = typesOf(events);
      expectOnlyCompletedWorkflowTasks(types);
      expect(localActivityMarkers(events)).toHaveLength(1);
    });
  });

  it('runs thirty of them at once on one worker, no workflow task timing out', { timeout: 90_000 }, async () => {
    const runs = 30;
    await withWorker(
      env,
      { activities },
      async (taskQueue) => {
        const startedAt = Date.now();
        const handles = await Promise.all(
          Array.from({ length: runs }, (_, i) =>
            env.client.workflow.start(longLocalActivities, {
              taskQueue,
              workflowId: uniqueId(`long-local-activity-many-${i}`),
              args: [1, 3_000],
              workflowTaskTimeout: WFT_TIMEOUT,
            }),
          ),
        );
        const results = await bounded(Promise.all(handles.map((h) => h.result())), 60_000, 'the workflow results');
        const elapsed = Date.now() - startedAt;
        expect(results).toEqual(Array.from({ length: runs }, () => ['activity']));
        for (const handle of handles) {
          const events = await historyEvents(handle);
          expectOnlyCompletedWorkflowTasks(typesOf(events));
          expect(localActivityMarkers(events)).toHaveLength(1);
        }
        expect(elapsed, `took ${elapsed} ms`).toBeLessThan(20_000);
      },
      75_000,
    );
  });

  it('delivers a signal and an update sent while the local activity runs', { timeout: 60_000 }, async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(longLocalActivityWithMessages, {
        taskQueue,
        workflowId: uniqueId('long-local-activity-messages'),
        args: [LOCAL_ACTIVITY_MS, 2],
        workflowTaskTimeout: WFT_TIMEOUT,
      });
      // the first task is running the local activity (it completes only at the first heartbeat)
      await eventually(
        async () => (typesOf(await historyEvents(handle)).includes('WORKFLOW_TASK_STARTED') ? true : undefined),
        'the first workflow task to start',
      );
      await handle.signal(noteSignal, 's1');
      const updated = await bounded(handle.executeUpdate(noteUpdate, { args: ['u1'] }), 30_000, 'the update result');
      expect(updated).toBe('noted u1');
      const outcome = await bounded(handle.result(), 30_000, 'the workflow result');
      expect(outcome.activity).toBe('activity');
      // both arrived through the heartbeat tasks, while the activity still ran
      expect(outcome.seenAfterActivity).toEqual(['signal:s1', 'update:u1']);

      const events = await historyEvents(handle);
      const types = typesOf(events);
      expectOnlyCompletedWorkflowTasks(types);
      expect(localActivityMarkers(events)).toHaveLength(1);
      const signaled = types.indexOf('WORKFLOW_EXECUTION_SIGNALED');
      const accepted = types.indexOf('WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
      const marker = types.indexOf('MARKER_RECORDED');
      expect(signaled, types.join(' ')).toBeGreaterThan(0);
      expect(accepted, types.join(' ')).toBeGreaterThan(signaled);
      expect(marker, types.join(' ')).toBeGreaterThan(accepted);
      await expectReplays(handle);
    });
  });
});

describe("an update's local activity longer than the workflow task timeout, on an idle run (SDK worker)", () => {
  // The update comes to a run that waits: its task is speculative. The SDK heartbeats it while the handler's local
  // activity runs; the engine dropped such a task when the heartbeat carried no command (Temporal keeps a heartbeat's
  // task and schedules the next), so the worker lost its task and the run stalled until something else woke it.
  it('answers the update from the heartbeat tasks, the history keeps every task', { timeout: 60_000 }, async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(idleThenLongLocalActivityUpdate, {
        taskQueue,
        workflowId: uniqueId('idle-long-update'),
        args: [2],
        workflowTaskTimeout: WFT_TIMEOUT,
      });
      // the first task completes with nothing to do: the run is idle
      await eventually(
        async () => (typesOf(await historyEvents(handle)).includes('WORKFLOW_TASK_COMPLETED') ? true : undefined),
        'the first workflow task to complete',
      );
      for (const ms of [String(LOCAL_ACTIVITY_MS), '3500']) {
        const startedAt = Date.now();
        expect(await bounded(handle.executeUpdate(noteUpdate, { args: [ms] }), 30_000, `the update of ${ms} ms`)).toBe(
          `noted ${ms}`,
        );
        const elapsed = Date.now() - startedAt;
        expect(elapsed, `took ${elapsed} ms`).toBeLessThan(Number(ms) + 3_000);
      }
      expect(await bounded(handle.result(), 30_000, 'the workflow result')).toEqual(['activity', 'activity']);
      const events = await historyEvents(handle);
      const types = typesOf(events);
      expectOnlyCompletedWorkflowTasks(types);
      expect(localActivityMarkers(events)).toHaveLength(2);
      expect(types.filter((t) => t === 'WORKFLOW_EXECUTION_UPDATE_COMPLETED')).toHaveLength(2);
      await expectReplays(handle);
    });
  });
});

describe('local activities under load (SDK worker)', () => {
  // Many runs at once on a worker with few task slots, few local-activity slots and a small cache, with 1-second
  // workflow tasks: local activities wait for slots inside held tasks (heartbeats), runs are evicted and replayed,
  // updates arrive on idle runs (speculative tasks) and on busy ones. Every run must finish: a task the engine drops
  // or never hands out again shows as a run that never completes. (Tasks may time out on a loaded machine: the SDK
  // heartbeats at 80 % of the timeout from when it got the task; a timed-out task is retried, not lost.)
  it('every run finishes, no workflow task fails', { timeout: 240_000 }, async () => {
    const runs = 24;
    const ms = (max: number) => Math.floor(Math.random() * max);
    await withWorker(
      env,
      { activities, maxConcurrentWorkflowTaskExecutions: 4, maxConcurrentLocalActivityExecutions: 6, maxCachedWorkflows: 8 },
      async (taskQueue) => {
        const loaded = Array.from({ length: runs }, async (_, i) => {
          const handle = await env.client.workflow.start(localActivitiesUnderLoad, {
            taskQueue,
            workflowId: uniqueId(`under-load-${i}`),
            args: [[ms(1_500), ms(300), ms(2_500)]],
            workflowTaskTimeout: '1s',
          });
          await handle.executeUpdate(noteUpdate, { args: [String(ms(1_200))] });
          return { handle, result: await handle.result() };
        });
        const idle = Array.from({ length: runs }, async (_, i) => {
          const handle = await env.client.workflow.start(idleThenLongLocalActivityUpdate, {
            taskQueue,
            workflowId: uniqueId(`idle-under-load-${i}`),
            args: [2],
            workflowTaskTimeout: '1s',
          });
          for (let u = 0; u < 2; u++) await handle.executeUpdate(noteUpdate, { args: [String(ms(2_000))] });
          return { handle, result: (await handle.result()).length };
        });
        const finished = await bounded(Promise.all([...loaded, ...idle]), 200_000, 'every run to finish');
        expect(finished.map((f) => f.result)).toEqual([...loaded.map(() => 4), ...idle.map(() => 2)]);
        for (const { handle } of finished) {
          const types = typesOf(await historyEvents(handle));
          expect(types, handle.workflowId).not.toContain('WORKFLOW_TASK_FAILED');
        }
      },
      230_000,
    );
  });
});

describe('RespondWorkflowTaskCompleted with returnNewWorkflowTask (protocol)', () => {
  const identity = 'raw-heartbeating-worker';

  function poll(name: string, kind: temporal.api.enums.v1.TaskQueueKind) {
    return env.connection.withDeadline(Date.now() + 15_000, () =>
      env.connection.workflowService.pollWorkflowTaskQueue({
        namespace: namespaceOf(env),
        taskQueue: kind === TaskQueueKind.TASK_QUEUE_KIND_STICKY ? { name, kind, normalName: '' } : { name, kind },
        identity,
      }),
    );
  }

  function sticky(name: string) {
    return { workerTaskQueue: { name, kind: TaskQueueKind.TASK_QUEUE_KIND_STICKY }, scheduleToStartTimeout: msToTs(10_000) };
  }

  /** A heartbeat as the SDK's core sends it: no commands, a new task forced and asked for. */
  function heartbeat(
    taskToken: Uint8Array | null | undefined,
    stickyQueue: string,
    returnNewWorkflowTask = true,
  ): Promise<temporal.api.workflowservice.v1.IRespondWorkflowTaskCompletedResponse> {
    return env.connection.workflowService.respondWorkflowTaskCompleted({
      namespace: namespaceOf(env),
      taskToken,
      identity,
      commands: [],
      stickyAttributes: sticky(stickyQueue),
      forceCreateNewWorkflowTask: true,
      returnNewWorkflowTask,
    });
  }

  function eventTypes(task: temporal.api.workflowservice.v1.IPollWorkflowTaskQueueResponse | null | undefined): string[] {
    return typesOf(task?.history?.events ?? []);
  }

  it('starts the new task for the worker and returns it, with the history, signals, updates and queries since the last one', {
    timeout: 60_000,
  }, async () => {
    const taskQueue = uniqueId('tq');
    const stickyQueue = uniqueId('sticky');
    const handle = await env.client.workflow.start('rawHeartbeats', {
      taskQueue,
      workflowId: uniqueId('raw-heartbeats'),
      workflowTaskTimeout: '10s',
    });
    const first = await poll(taskQueue, TaskQueueKind.TASK_QUEUE_KIND_NORMAL);
    expect(first.startedEventId?.toString()).toBe('3');

    const second = (await heartbeat(first.taskToken, stickyQueue)).workflowTask;
    expect(second?.taskToken?.length).toBeGreaterThan(0);
    expect(second?.workflowExecution).toMatchObject({ workflowId: handle.workflowId, runId: first.workflowExecution?.runId });
    expect(second?.workflowType?.name).toBe('rawHeartbeats');
    expect(second?.previousStartedEventId?.toString()).toBe('3');
    expect(second?.startedEventId?.toString()).toBe('6');
    expect(second?.attempt).toBe(1);
    expect(second?.workflowExecutionTaskQueue?.name).toBe(taskQueue);
    expect(second?.scheduledTime).toBeTruthy();
    expect(second?.startedTime).toBeTruthy();
    // the history a sticky worker is given: only what it has not seen
    expect(eventTypes(second)).toEqual(['WORKFLOW_TASK_COMPLETED', 'WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED']);
    const [, scheduled, started] = second?.history?.events ?? [];
    expect(scheduled?.eventId?.toString()).toBe('5');
    expect(scheduled?.workflowTaskScheduledEventAttributes?.taskQueue?.name).toBe(stickyQueue);
    expect(started?.workflowTaskStartedEventAttributes?.identity).toBe(identity);
    expect(second?.messages ?? []).toHaveLength(0);
    expect(Object.keys(second?.queries ?? {})).toHaveLength(0);

    // While the second task runs: a signal, an update (admitted, waiting for the workflow) and a query.
    await handle.signal('push', 'during the heartbeat');
    const updateId = uniqueId('update');
    const update = handle.executeUpdate('note', { args: ['u1'], updateId }).then(
      () => 'completed',
      (err: unknown) => (err instanceof WorkflowUpdateFailedError ? `rejected: ${err.cause?.message}` : `error: ${String(err)}`),
    );
    await eventually(async () => {
      const polled = await env.client.workflowService.pollWorkflowExecutionUpdate({
        namespace: namespaceOf(env),
        updateRef: { workflowExecution: { workflowId: handle.workflowId }, updateId },
        identity,
      });
      return (polled.stage ?? 0) >= UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED
        ? true
        : undefined;
    }, 'the update to be admitted');
    const query = handle.query<string>('items');
    // the query reaches the server without a way to see it there: give it a moment
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    const third = (await heartbeat(second?.taskToken, stickyQueue)).workflowTask;
    expect(third?.taskToken?.length).toBeGreaterThan(0);
    expect(third?.previousStartedEventId?.toString()).toBe('6');
    expect(third?.startedEventId?.toString()).toBe('10');
    expect(eventTypes(third)).toEqual([
      'WORKFLOW_TASK_COMPLETED',
      'WORKFLOW_EXECUTION_SIGNALED',
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
    ]);
    const messages = third?.messages ?? [];
    expect(messages).toHaveLength(1);
    expect(messages[0]?.protocolInstanceId).toBe(updateId);
    expect(messages[0]?.body?.type_url).toMatch(/temporal\.api\.update\.v1\.Request$/);
    const queryIds = Object.keys(third?.queries ?? {});
    expect(queryIds).toHaveLength(1);
    expect(third?.queries?.[queryIds[0] ?? '']?.queryType).toBe('items');

    // The workflow answers the query, rejects the update and completes: nothing more to return.
    const request = temporal.api.update.v1.Request.decode(messages[0]?.body?.value ?? new Uint8Array());
    const rejection = temporal.api.update.v1.Rejection.encode({
      rejectedRequestMessageId: messages[0]?.id,
      rejectedRequestSequencingEventId: messages[0]?.eventId,
      rejectedRequest: request,
      failure: { message: 'not now', applicationFailureInfo: { type: 'NotNow' } },
    }).finish();
    const last = await env.connection.workflowService.respondWorkflowTaskCompleted({
      namespace: namespaceOf(env),
      taskToken: third?.taskToken,
      identity,
      queryResults: {
        [queryIds[0] ?? '']: {
          resultType: QueryResultType.QUERY_RESULT_TYPE_ANSWERED,
          answer: { payloads: [defaultPayloadConverter.toPayload('answered by the heartbeat task')] },
        },
      },
      messages: [
        {
          id: `${updateId}/reject`,
          protocolInstanceId: updateId,
          body: { type_url: 'type.googleapis.com/temporal.api.update.v1.Rejection', value: rejection },
        },
      ],
      commands: [
        {
          commandType: CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
          completeWorkflowExecutionCommandAttributes: { result: { payloads: [defaultPayloadConverter.toPayload('done')] } },
        },
      ],
      stickyAttributes: sticky(stickyQueue),
      returnNewWorkflowTask: true,
    });
    expect(last.workflowTask?.taskToken?.length ?? 0).toBe(0);
    expect(await bounded(query, 10_000, 'the query answer')).toBe('answered by the heartbeat task');
    expect(await bounded(update, 10_000, 'the update outcome')).toBe('rejected: not now');
    expect(await bounded(handle.result(), 10_000, 'the workflow result')).toBe('done');
  });

  it("a heartbeat of an update's speculative task keeps it and returns the next, as Temporal does", {
    timeout: 60_000,
  }, async () => {
    // Temporal writes a heartbeat's WorkflowTaskCompleted even for a speculative task with no command or message
    // (skipWorkflowTaskCompletedEvent is false when ForceCreateNewWorkflowTask is set) and schedules a normal task;
    // the engine took it for an update task whose updates were all rejected and dropped it, with no next task.
    const taskQueue = uniqueId('tq');
    const stickyQueue = uniqueId('sticky');
    const handle = await env.client.workflow.start('rawHeartbeats', {
      taskQueue,
      workflowId: uniqueId('raw-speculative-heartbeat'),
      workflowTaskTimeout: '10s',
    });
    const first = await poll(taskQueue, TaskQueueKind.TASK_QUEUE_KIND_NORMAL);
    // the run has nothing to do: no command, no next task
    const idle = await env.connection.workflowService.respondWorkflowTaskCompleted({
      namespace: namespaceOf(env),
      taskToken: first.taskToken,
      identity,
      commands: [],
      stickyAttributes: sticky(stickyQueue),
      returnNewWorkflowTask: true,
    });
    expect(idle.workflowTask?.taskToken?.length ?? 0).toBe(0);

    // an update to the idle run: its task is speculative, polled from the sticky queue
    const updateId = uniqueId('update');
    const update = handle.executeUpdate('note', { args: ['u1'], updateId }).then(
      (result) => `completed: ${String(result)}`,
      (err: unknown) => `error: ${String(err)}`,
    );
    const speculative = await poll(stickyQueue, TaskQueueKind.TASK_QUEUE_KIND_STICKY);
    expect(speculative.messages ?? []).toHaveLength(1);
    const [request] = speculative.messages ?? [];

    // the handler's local activity outlives the task: the SDK heartbeats it before accepting anything
    const beat = await heartbeat(speculative.taskToken, stickyQueue);
    const next = beat.workflowTask;
    expect(next?.taskToken?.length ?? 0, 'a next task for the heartbeat').toBeGreaterThan(0);
    expect(Number(beat.resetHistoryEventId ?? 0)).toBe(0);
    // the update already delivered is not sent again on a heartbeat's task
    expect(next?.messages ?? []).toHaveLength(0);
    // since the speculative task (now kept in the history): its completion and the next task
    expect(next?.previousStartedEventId?.toString()).toBe(speculative.startedEventId?.toString());
    expect(eventTypes(next)).toEqual(['WORKFLOW_TASK_COMPLETED', 'WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED']);

    // then the handler accepts and completes the update in the next task
    const acceptance = temporal.api.update.v1.Acceptance.encode({
      acceptedRequestMessageId: request?.id,
      acceptedRequestSequencingEventId: request?.eventId,
      acceptedRequest: temporal.api.update.v1.Request.decode(request?.body?.value ?? new Uint8Array()),
    }).finish();
    const response = temporal.api.update.v1.Response.encode({
      meta: { updateId },
      outcome: { success: { payloads: [defaultPayloadConverter.toPayload('noted u1')] } },
    }).finish();
    await env.connection.workflowService.respondWorkflowTaskCompleted({
      namespace: namespaceOf(env),
      taskToken: next?.taskToken,
      identity,
      messages: [
        {
          id: `${updateId}/accept`,
          protocolInstanceId: updateId,
          body: { type_url: 'type.googleapis.com/temporal.api.update.v1.Acceptance', value: acceptance },
        },
        {
          id: `${updateId}/complete`,
          protocolInstanceId: updateId,
          body: { type_url: 'type.googleapis.com/temporal.api.update.v1.Response', value: response },
        },
      ],
      commands: [
        {
          commandType: CommandType.COMMAND_TYPE_PROTOCOL_MESSAGE,
          protocolMessageCommandAttributes: { messageId: `${updateId}/accept` },
        },
        {
          commandType: CommandType.COMMAND_TYPE_PROTOCOL_MESSAGE,
          protocolMessageCommandAttributes: { messageId: `${updateId}/complete` },
        },
      ],
      stickyAttributes: sticky(stickyQueue),
    });
    expect(await bounded(update, 10_000, 'the update outcome')).toBe('completed: noted u1');
    const types = typesOf(await historyEvents(handle));
    expect(types.slice(-8)).toEqual([
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
      'WORKFLOW_TASK_COMPLETED',
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
      'WORKFLOW_TASK_COMPLETED',
      'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
    ]);
    await env.client.workflow.getHandle(handle.workflowId).terminate('done');
  });

  it('without returnNewWorkflowTask the forced task goes to the sticky queue', { timeout: 60_000 }, async () => {
    const taskQueue = uniqueId('tq');
    const stickyQueue = uniqueId('sticky');
    const handle = await env.client.workflow.start('rawHeartbeats', {
      taskQueue,
      workflowId: uniqueId('raw-heartbeat-polled'),
      workflowTaskTimeout: '10s',
    });
    const first = await poll(taskQueue, TaskQueueKind.TASK_QUEUE_KIND_NORMAL);
    const answer = await heartbeat(first.taskToken, stickyQueue, false);
    expect(answer.workflowTask?.taskToken?.length ?? 0).toBe(0);
    const second = await poll(stickyQueue, TaskQueueKind.TASK_QUEUE_KIND_STICKY);
    expect(second.startedEventId?.toString()).toBe('6');
    expect(eventTypes(second)).toEqual(['WORKFLOW_TASK_COMPLETED', 'WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED']);
    await env.connection.workflowService.respondWorkflowTaskCompleted({
      namespace: namespaceOf(env),
      taskToken: second.taskToken,
      identity,
      commands: [
        {
          commandType: CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
          completeWorkflowExecutionCommandAttributes: { result: { payloads: [defaultPayloadConverter.toPayload('polled')] } },
        },
      ],
    });
    expect(await bounded(handle.result(), 10_000, 'the workflow result')).toBe('polled');
  });
});

// Signals (order, buffering before a worker polls, closed workflows) and queries (running, closed,
// replayed without a cache, unknown query type, reject condition).
import { Client, QueryNotRegisteredError, QueryRejectedError, WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import { createEnv, eventTypeName, eventually, historyEvents, namespaceOf, uniqueId, withWorker } from './env.js';
import { finishSignal, itemsQuery, pushSignal, signalCollector } from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;

let env: TestWorkflowEnvironment;
const activities = createActivities();

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

describe('signals', () => {
  it('buffers signals sent before any worker polls and delivers them in order', async () => {
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('buffered') });
    for (const item of ['a', 'b', 'c']) await handle.signal(pushSignal, item);
    await handle.signal(finishSignal);

    await withWorker(env, { activities, taskQueue }, async () => {
      expect(await handle.result()).toEqual(['a', 'b', 'c']);
    });
    const signalled = (await historyEvents(handle)).filter(
      (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    );
    expect(signalled.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)).toEqual([
      'push',
      'push',
      'push',
      'finish',
    ]);
  });

  it('delivers signals to a running workflow one after another', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('live') });
      for (let i = 0; i < 20; i++) await handle.signal(pushSignal, `item-${i}`);
      await handle.signal(finishSignal);
      expect(await handle.result()).toEqual(Array.from({ length: 20 }, (_, i) => `item-${i}`));
    });
  });

  it('refuses a signal to a closed workflow with WorkflowNotFoundError', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('closed') });
      await handle.signal(finishSignal);
      await handle.result();
      await expect(handle.signal(pushSignal, 'too late')).rejects.toBeInstanceOf(WorkflowNotFoundError);
    });
  });

  it('refuses a signal to an unknown workflow id with WorkflowNotFoundError', async () => {
    const handle = env.client.workflow.getHandle(uniqueId('never-started'));
    await expect(handle.signal(pushSignal, 'nobody')).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });
});

describe('queries', () => {
  it('answers a query on a running workflow without writing history', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('query') });
      await handle.signal(pushSignal, 'x');
      // Wait until the signal's workflow task completed, so nothing else is due to be written.
      const settled = await eventually(async () => {
        const events = await historyEvents(handle);
        const signalled = events.some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
        return signalled && events.at(-1)?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED ? events : undefined;
      }, 'the signal to be processed');
      expect(await handle.query(itemsQuery)).toEqual(['x']);
      expect(await handle.query(itemsQuery)).toEqual(['x']);
      expect((await historyEvents(handle)).map((e) => eventTypeName(e, EventType))).toEqual(
        settled.map((e) => eventTypeName(e, EventType)),
      );
      await handle.signal(finishSignal);
      await handle.result();
    });
  });

  it('answers queries by replaying full history when the worker caches nothing', async () => {
    await withWorker(env, { activities, maxCachedWorkflows: 0 }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('query-replay') });
      await handle.signal(pushSignal, 'one');
      await handle.signal(pushSignal, 'two');
      expect(await handle.query(itemsQuery)).toEqual(['one', 'two']);
      await handle.signal(finishSignal);
      expect(await handle.result()).toEqual(['one', 'two']);
    });
  });

  it('answers a query that arrived while another poller held the workflow task, seeing the earlier signal', async () => {
    const taskQueue = uniqueId('tq');
    const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('query-consistent') });
    // A raw worker holds the first task; meanwhile a signal and then a query arrive.
    const polled = await env.connection.withDeadline(Date.now() + 15_000, () =>
      env.connection.workflowService.pollWorkflowTaskQueue({
        namespace: namespaceOf(env),
        taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        identity: 'holding-worker',
      }),
    );
    await handle.signal(pushSignal, 'signalled before the query');
    const answer = handle.query(itemsQuery);
    await env.connection.workflowService.respondWorkflowTaskCompleted({
      namespace: namespaceOf(env),
      taskToken: polled.taskToken,
      identity: 'holding-worker',
      commands: [],
    });
    // The SDK worker takes over; the query must see the signal that was accepted before it.
    await withWorker(env, { activities, taskQueue }, async () => {
      expect(await answer).toEqual(['signalled before the query']);
      await handle.signal(finishSignal);
      expect(await handle.result()).toEqual(['signalled before the query']);
    });
  });

  it('answers a query on a closed workflow from its history', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('query-closed') });
      await handle.signal(pushSignal, 'kept');
      await handle.signal(finishSignal);
      await handle.result();
      expect((await handle.describe()).status.name).toBe('COMPLETED');
      expect(await handle.query(itemsQuery)).toEqual(['kept']);
    });
  });

  it('fails a query the workflow has no handler for with QueryNotRegisteredError', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('query-unknown') });
      const err = await handle.query('noSuchQuery').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(QueryNotRegisteredError);
      expect((err as Error).message).toContain('noSuchQuery');
      await handle.signal(finishSignal);
      await handle.result();
    });
  });

  it('rejects a query on a closed workflow when the reject condition is NOT_OPEN', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('query-reject') });
      const strictClient = new Client({
        connection: env.connection,
        namespace: namespaceOf(env),
        workflow: { queryRejectCondition: 'NOT_OPEN' },
      });
      const strictHandle = strictClient.workflow.getHandle(handle.workflowId);
      expect(await strictHandle.query(itemsQuery)).toEqual([]);
      await handle.signal(finishSignal);
      await handle.result();
      const err = await strictHandle.query(itemsQuery).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(QueryRejectedError);
      expect((err as QueryRejectedError).status).toBe(
        temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED,
      );
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(types.at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
    });
  });
});

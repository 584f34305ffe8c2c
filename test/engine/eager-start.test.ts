// Eager workflow start: a client sharing its NativeConnection with a worker of the task queue asks for the first
// workflow task in the start response (`requestEagerStart`), and the worker runs it without polling for it.
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnv, historyEvents, namespaceOf, uniqueId, withWorker } from './env.js';
import { returnValue } from './workflows.js';

const { EventType } = temporal.api.enums.v1;

describe('eager workflow start', () => {
  let env: TestWorkflowEnvironment;
  let client: Client;

  beforeAll(async () => {
    env = await createEnv('dev-server');
    client = new Client({ connection: env.nativeConnection, namespace: namespaceOf(env), identity: 'eager-starter' });
  });

  afterAll(async () => {
    await env?.teardown();
  });

  it('advertises eager workflow start for the namespace', async () => {
    const { namespaceInfo } = await env.connection.workflowService.describeNamespace({ namespace: namespaceOf(env) });
    expect(namespaceInfo?.capabilities?.eagerWorkflowStart).toBe(true);
  });

  it('hands the first workflow task to the local worker in the start response', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await client.workflow.start(returnValue, {
        taskQueue,
        workflowId: uniqueId('eager'),
        args: ['eagerly'],
        requestEagerStart: true,
        // Were the task left to a poll or a timeout, the workflow would not finish within the test.
        workflowTaskTimeout: '1 hour',
      });
      expect(handle.eagerlyStarted).toBe(true);
      expect(await handle.result()).toBe('eagerly');
      const events = await historyEvents(handle);
      expect(events.slice(0, 4).map((e) => e.eventType)).toEqual([
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      ]);
      // The task was started for the starter, not for a poller.
      expect(events[2]?.workflowTaskStartedEventAttributes?.identity).toBe('eager-starter');
    });
  });

  it('starts normally when no local worker can take the task', async () => {
    const handle = await client.workflow.start(returnValue, {
      taskQueue: uniqueId('no-worker'),
      workflowId: uniqueId('not-eager'),
      args: ['later'],
      requestEagerStart: true,
    });
    expect(handle.eagerlyStarted).toBe(false);
    const events = await historyEvents(handle);
    expect(events.map((e) => e.eventType)).toEqual([
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    ]);
    await handle.terminate();
  });

  it('does not start a delayed workflow eagerly', async () => {
    await withWorker(env, {}, async (taskQueue) => {
      const handle = await client.workflow.start(returnValue, {
        taskQueue,
        workflowId: uniqueId('delayed'),
        args: ['delayed'],
        requestEagerStart: true,
        startDelay: '1 second',
      });
      expect(handle.eagerlyStarted).toBe(false);
      expect(await handle.result()).toBe('delayed');
    });
  });
});

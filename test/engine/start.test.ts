// Starting workflows: request-id dedupe, id reuse and conflict policies, memo, search attributes,
// execution/run timeouts, signal-with-start.
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError } from '@temporalio/client';
import { defaultPayloadConverter, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import { createEnv, eventTypeName, historyEvents, KEYWORD_KEY, namespaceOf, uniqueId, withWorker } from './env.js';
import {
  failFirstAttempt,
  failWithType,
  finishSignal,
  itemsQuery,
  pushSignal,
  reportStartInfo,
  returnValue,
  signalCollector,
  sleeper,
} from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;
const HOUR_MS = 60 * 60 * 1000;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

const activities = createActivities();

describe('start request', () => {
  it('dedupes a retried StartWorkflowExecution by request id and rejects a different request id', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('dedupe');
      const request = {
        namespace: namespaceOf(env),
        workflowId,
        workflowType: { name: 'returnValue' },
        taskQueue: { name: taskQueue },
        input: { payloads: [defaultPayloadConverter.toPayload('deduped')] },
        identity: 'engine-conformance',
        requestId: randomUUID(),
      };
      const first = await env.connection.workflowService.startWorkflowExecution(request);
      const retried = await env.connection.workflowService.startWorkflowExecution(request);
      expect(first.runId).toBeTruthy();
      expect(retried.runId).toBe(first.runId);

      const handle = env.client.workflow.getHandle(workflowId);
      expect(await handle.result()).toBe('deduped');
      // Only one run exists: the retried request did not start another one.
      const started = (await historyEvents(handle)).filter(
        (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      );
      expect(started).toHaveLength(1);
    });
  });

  it('rejects a second start of a running workflow id with WorkflowExecutionAlreadyStartedError', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('conflict-fail');
      const running = await env.client.workflow.start(signalCollector, { taskQueue, workflowId });
      await expect(
        env.client.workflow.start(signalCollector, { taskQueue, workflowId, workflowIdConflictPolicy: 'FAIL' }),
      ).rejects.toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
      await running.signal(finishSignal);
      expect(await running.result()).toEqual([]);
    });
  });
});

describe('WorkflowIdConflictPolicy', () => {
  it('USE_EXISTING returns the running execution instead of starting another', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('conflict-use-existing');
      const first = await env.client.workflow.start(signalCollector, { taskQueue, workflowId });
      const second = await env.client.workflow.start(signalCollector, {
        taskQueue,
        workflowId,
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      expect(second.firstExecutionRunId).toBe(first.firstExecutionRunId);
      await second.signal(pushSignal, 'one');
      await first.signal(finishSignal);
      expect(await first.result()).toEqual(['one']);
    });
  });

  it('TERMINATE_EXISTING terminates the running execution and starts a new run', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('conflict-terminate');
      const first = await env.client.workflow.start(signalCollector, { taskQueue, workflowId });
      const second = await env.client.workflow.start(signalCollector, {
        taskQueue,
        workflowId,
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
      });
      expect(second.firstExecutionRunId).not.toBe(first.firstExecutionRunId);
      const old = env.client.workflow.getHandle(workflowId, first.firstExecutionRunId);
      expect((await old.describe()).status.name).toBe('TERMINATED');
      const oldEvents = (await historyEvents(old)).map((e) => eventTypeName(e, EventType));
      expect(oldEvents.at(-1)).toBe('WORKFLOW_EXECUTION_TERMINATED');
      await second.signal(finishSignal);
      expect(await second.result()).toEqual([]);
    });
  });
});

describe('WorkflowIdReusePolicy', () => {
  it('ALLOW_DUPLICATE (the default) starts a new run after a closed one', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('reuse-allow');
      const first = await env.client.workflow.start(returnValue<string>, { taskQueue, workflowId, args: ['a'] });
      expect(await first.result()).toBe('a');
      const second = await env.client.workflow.start(returnValue<string>, {
        taskQueue,
        workflowId,
        args: ['b'],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
      expect(second.firstExecutionRunId).not.toBe(first.firstExecutionRunId);
      expect(await second.result()).toBe('b');
    });
  });

  it('REJECT_DUPLICATE refuses any new run once a run closed', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('reuse-reject');
      await env.client.workflow.execute(returnValue<string>, { taskQueue, workflowId, args: ['a'] });
      await expect(
        env.client.workflow.start(returnValue<string>, {
          taskQueue,
          workflowId,
          args: ['b'],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        }),
      ).rejects.toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
    });
  });

  it('ALLOW_DUPLICATE_FAILED_ONLY refuses after success and allows after failure', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const succeededId = uniqueId('reuse-failed-only-ok');
      await env.client.workflow.execute(returnValue<string>, { taskQueue, workflowId: succeededId, args: ['a'] });
      await expect(
        env.client.workflow.start(returnValue<string>, {
          taskQueue,
          workflowId: succeededId,
          args: ['b'],
          workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
        }),
      ).rejects.toBeInstanceOf(WorkflowExecutionAlreadyStartedError);

      const failedId = uniqueId('reuse-failed-only-failed');
      await expect(
        env.client.workflow.execute(failWithType, { taskQueue, workflowId: failedId, args: ['Broken'] }),
      ).rejects.toBeInstanceOf(WorkflowFailedError);
      const again = await env.client.workflow.start(returnValue<string>, {
        taskQueue,
        workflowId: failedId,
        args: ['second chance'],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      });
      expect(await again.result()).toBe('second chance');
    });
  });
});

describe('memo and search attributes', () => {
  it('hands memo and typed search attributes to the workflow and to describe()', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(reportStartInfo, {
        taskQueue,
        workflowId: uniqueId('memo-sa'),
        memo: { owner: 'conformance', nested: { n: 1 } },
        typedSearchAttributes: [{ key: KEYWORD_KEY, value: 'kw-start' }],
      });
      const seen = await handle.result();
      expect(seen.memo).toEqual({ owner: 'conformance', nested: { n: 1 } });
      expect(seen.keyword).toBe('kw-start');
      expect(seen.attempt).toBe(1);

      const description = await handle.describe();
      expect(description.memo).toEqual({ owner: 'conformance', nested: { n: 1 } });
      expect(description.typedSearchAttributes.get(KEYWORD_KEY)).toBe('kw-start');
    });
  });
});

describe('execution and run timeouts', () => {
  it('times a workflow out at its execution timeout (status TIMED_OUT, WorkflowFailedError with TimeoutFailure)', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(sleeper, {
        taskQueue,
        workflowId: uniqueId('execution-timeout'),
        args: [HOUR_MS],
        workflowExecutionTimeout: '2s',
      });
      const failure = await handle.result().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect((failure as WorkflowFailedError).cause).toBeInstanceOf(TimeoutFailure);
      expect(((failure as WorkflowFailedError).cause as TimeoutFailure).timeoutType).toBe(TimeoutType.START_TO_CLOSE);
      expect((await handle.describe()).status.name).toBe('TIMED_OUT');
      const events = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(events.at(-1)).toBe('WORKFLOW_EXECUTION_TIMED_OUT');
    });
  });

  it('times a run out at its run timeout and tells the workflow both timeouts', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const info = await env.client.workflow.execute(reportStartInfo, {
        taskQueue,
        workflowId: uniqueId('timeouts-visible'),
        workflowRunTimeout: '1 hour',
        workflowExecutionTimeout: '2 hours',
      });
      expect(info.runTimeoutMs).toBe(HOUR_MS);
      expect(info.executionTimeoutMs).toBe(2 * HOUR_MS);

      const handle = await env.client.workflow.start(sleeper, {
        taskQueue,
        workflowId: uniqueId('run-timeout'),
        args: [HOUR_MS],
        workflowRunTimeout: '2s',
      });
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      expect((await handle.describe()).status.name).toBe('TIMED_OUT');
    });
  });
});

describe('start event', () => {
  it('records the start request and normalises timeouts the way the server does', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('started-event');
      const handle = await env.client.workflow.start(reportStartInfo, {
        taskQueue,
        workflowId,
        workflowExecutionTimeout: '1 hour',
      });
      const info = await handle.result();
      // Without a run timeout the run may last as long as the execution; the task timeout defaults to 10 s.
      expect(info.runTimeoutMs).toBe(HOUR_MS);
      expect(info.executionTimeoutMs).toBe(HOUR_MS);

      const started = (await historyEvents(handle))[0]?.workflowExecutionStartedEventAttributes;
      expect(started?.workflowType?.name).toBe('reportStartInfo');
      expect(started?.taskQueue?.name).toBe(taskQueue);
      expect(started?.attempt).toBe(1);
      expect(started?.firstExecutionRunId).toBe(handle.firstExecutionRunId);
      expect(started?.originalExecutionRunId).toBe(handle.firstExecutionRunId);
      expect(started?.identity).toBeTruthy();
      expect(tsToMs(started?.workflowExecutionTimeout)).toBe(HOUR_MS);
      expect(tsToMs(started?.workflowRunTimeout)).toBe(HOUR_MS);
      expect(tsToMs(started?.workflowTaskTimeout)).toBe(10_000);
    });
  });
});

describe('signal-with-start', () => {
  it('starts the workflow with the signal delivered first, then only signals the running execution', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('signal-with-start');
      const first = await env.client.workflow.signalWithStart(signalCollector, {
        taskQueue,
        workflowId,
        signal: pushSignal,
        signalArgs: ['first'],
      });
      const second = await env.client.workflow.signalWithStart(signalCollector, {
        taskQueue,
        workflowId,
        signal: pushSignal,
        signalArgs: ['second'],
      });
      expect(second.signaledRunId).toBe(first.signaledRunId);
      expect(await first.query(itemsQuery)).toEqual(['first', 'second']);
      await first.signal(finishSignal);
      expect(await first.result()).toEqual(['first', 'second']);

      const events = (await historyEvents(first)).map((e) => eventTypeName(e, EventType));
      expect(events.slice(0, 2)).toEqual(['WORKFLOW_EXECUTION_STARTED', 'WORKFLOW_EXECUTION_SIGNALED']);

      // Once the run closed, signal-with-start starts a new run.
      const third = await env.client.workflow.signalWithStart(signalCollector, {
        taskQueue,
        workflowId,
        signal: pushSignal,
        signalArgs: ['third'],
      });
      expect(third.signaledRunId).not.toBe(first.signaledRunId);
      await third.signal(finishSignal);
      expect(await third.result()).toEqual(['third']);
    });
  });
});

describe('workflow retry policy', () => {
  it('retries a failed workflow as a new run with the next attempt number', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('workflow-retry');
      const handle = await env.client.workflow.start(failFirstAttempt, {
        taskQueue,
        workflowId,
        retry: { initialInterval: '1s', maximumAttempts: 3 },
      });
      expect(await handle.result()).toBe('attempt 2');

      const firstRun = env.client.workflow.getHandle(workflowId, handle.firstExecutionRunId);
      expect((await firstRun.describe()).status.name).toBe('FAILED');
      const failed = (await historyEvents(firstRun)).at(-1);
      expect(failed?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED);
      const retryRunId = failed?.workflowExecutionFailedEventAttributes?.newExecutionRunId;
      expect(retryRunId).toBeTruthy();
      const retryStarted = (await historyEvents(env.client.workflow.getHandle(workflowId, retryRunId!)))[0];
      expect(retryStarted?.workflowExecutionStartedEventAttributes?.attempt).toBe(2);
      expect(retryStarted?.workflowExecutionStartedEventAttributes?.firstExecutionRunId).toBe(handle.firstExecutionRunId);
    });
  });
});

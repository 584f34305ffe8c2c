// What a run knows about itself and what the server keeps about it: history size (workflowInfo().historySize,
// describe's historySizeBytes, across a restart), the continue-as-new suggestion (Temporal's defaults and
// `--dynamic-config-value` limits), the root of a tree of children, priority and its inheritance, user metadata
// in describe, and build ids (WorkflowTaskCompleted.workerVersion, the BuildIds search attribute,
// workflowInfo().currentBuildId).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import type { Priority } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnv, DEVSERVER_PATH, eventually, historyEvents, namespaceOf, uniqueId, withWorker } from './env.js';
import {
  buildIdReporter,
  currentBuildIdQuery,
  growUntilContinueAsNewSuggested,
  historySizeBeforeAndAfterTimer,
  infoReleaseSignal,
  parentOfWaitingChild,
  parentWithDescribedChild,
  priorityReporter,
  rootChain,
  type InfoActivities,
} from './workflows.js';

const { EventType } = temporal.api.enums.v1;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

const activities: InfoActivities = {
  async activityPriority() {
    return Context.current().info.priority;
  },
};

/** Bytes of the history as Temporal stores it: the protobuf encoding of `History { events }`. */
function encodedHistorySize(events: temporal.api.history.v1.IHistoryEvent[]): number {
  return temporal.api.history.v1.History.encode({ events }).finish().length;
}

/** An environment of bin/temporal-devserver in dev-server mode with extra command-line arguments. */
function launchDevServer(extraArgs: string[], dbFilename?: string): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: DEVSERVER_PATH },
      namespace: 'default',
      ip: '127.0.0.1',
      dbFilename,
      extraArgs,
    },
  });
}

describe('history size', () => {
  it('workflowInfo().historySize is the size of the history so far and grows with it', async () => {
    const [before, after, started] = await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(historySizeBeforeAndAfterTimer, {
        taskQueue,
        workflowId: uniqueId('size-grows'),
      });
      const sizes = await handle.result();
      const events = await historyEvents(handle);
      const startedSizes = events
        .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
        .map((e) => Number(e.workflowTaskStartedEventAttributes?.historySizeBytes ?? 0));
      return [...sizes, startedSizes] as const;
    });
    expect(before).toBeGreaterThan(100);
    expect(after).toBeGreaterThan(before);
    // Each WorkflowTaskStarted event carries the size the worker saw.
    expect(started).toEqual([before, after]);
  });

  it("describe's historySizeBytes is the encoded size of the run's history", async () => {
    const { described, encoded } = await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(historySizeBeforeAndAfterTimer, {
        taskQueue,
        workflowId: uniqueId('size-describe'),
      });
      await handle.result();
      return {
        described: (await handle.describe()).historySize ?? 0,
        encoded: encodedHistorySize(await historyEvents(handle)),
      };
    });
    expect(described).toBeGreaterThan(0);
    // Field-level encoding choices (explicit defaults) may differ slightly between servers and this re-encoding.
    expect(described / encoded).toBeGreaterThan(0.9);
    expect(described / encoded).toBeLessThan(1.1);
  });

  it('is the same after the server restarts on its journal', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'engine-info-'));
    const dbFilename = join(dir, 'temporal.journal');
    const workflowId = uniqueId('size-restart');
    try {
      const first = await launchDevServer([], dbFilename);
      let sizeBefore: number | undefined;
      try {
        sizeBefore = await withWorker(first, {}, async (taskQueue) => {
          const handle = await first.client.workflow.start(historySizeBeforeAndAfterTimer, { taskQueue, workflowId });
          await handle.result();
          return (await handle.describe()).historySize;
        });
      } finally {
        await first.teardown();
      }
      const second = await launchDevServer([], dbFilename);
      try {
        const sizeAfter = (await second.client.workflow.getHandle(workflowId).describe()).historySize;
        expect(sizeBefore).toBeGreaterThan(0);
        expect(sizeAfter).toBe(sizeBefore);
      } finally {
        await second.teardown();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('continue-as-new suggestion', () => {
  it("is first made by the workflow task whose started event is the 4,096th (Temporal's default)", async () => {
    const seen = await withWorker(
      env,
      {},
      (taskQueue) =>
        env.client.workflow.execute(growUntilContinueAsNewSuggested, {
          taskQueue,
          workflowId: uniqueId('suggest-default'),
          args: [500, 8_000],
        }),
      120_000,
    );
    expect(seen.suggestedAtLength).toBeGreaterThanOrEqual(4096);
    expect(seen.previousLength).toBeLessThan(4096);
    expect(seen.reasons).toContain('TOO_MANY_HISTORY_EVENTS');
  }, 150_000);

  // These launch bin/temporal-devserver with the flags, so they run (against it) even when TEMPORAL_ADDRESS is set.
  it('honours the history count limit given by --dynamic-config-value', async () => {
    const local = await launchDevServer(['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=50']);
    try {
      const seen = await withWorker(local, {}, (taskQueue) =>
        local.client.workflow.execute(growUntilContinueAsNewSuggested, {
          taskQueue,
          workflowId: uniqueId('suggest-count'),
          args: [5, 1_000],
        }),
      );
      expect(seen.suggestedAtLength).toBeGreaterThanOrEqual(50);
      expect(seen.previousLength).toBeLessThan(50);
      expect(seen.reasons).toEqual(['TOO_MANY_HISTORY_EVENTS']);
    } finally {
      await local.teardown();
    }
  });

  it('honours the history size limit given by --dynamic-config-value', async () => {
    const local = await launchDevServer(['--dynamic-config-value', 'limit.historySize.suggestContinueAsNew=3000']);
    try {
      const seen = await withWorker(local, {}, (taskQueue) =>
        local.client.workflow.execute(growUntilContinueAsNewSuggested, {
          taskQueue,
          workflowId: uniqueId('suggest-size'),
          args: [5, 1_000],
        }),
      );
      expect(seen.suggestedAtLength).toBeGreaterThan(0);
      expect(seen.historySize).toBeGreaterThanOrEqual(3000);
      expect(seen.reasons).toEqual(['HISTORY_SIZE_TOO_LARGE']);
    } finally {
      await local.teardown();
    }
  });

  it('is not made for a short history', async () => {
    const info = await withWorker(env, {}, (taskQueue) =>
      env.client.workflow.execute(growUntilContinueAsNewSuggested, {
        taskQueue,
        workflowId: uniqueId('suggest-none'),
        args: [5, 30],
      }),
    );
    expect(info.suggestedAtLength).toBe(0);
  });
});

describe('root execution', () => {
  it('a run without a parent has no root; the children below it name it as theirs', async () => {
    const workflowId = uniqueId('root-chain');
    const { report, runId, startedRoot } = await withWorker(env, {}, async (taskQueue) => {
      const handle = await env.client.workflow.start(rootChain, { taskQueue, workflowId, args: [2] });
      const report = await handle.result();
      const started = (await historyEvents(handle))[0]?.workflowExecutionStartedEventAttributes;
      return { report, runId: handle.firstExecutionRunId, startedRoot: started?.rootWorkflowExecution ?? undefined };
    });
    expect(startedRoot).toBeUndefined();
    expect(report.root).toBeUndefined();
    expect(report.child?.root).toEqual({ workflowId, runId });
    expect(report.child?.child?.root).toEqual({ workflowId, runId });
  });

  it('describe names the root of each run: the run itself at the top, the top-level run for a child', async () => {
    const parentId = uniqueId('root-parent');
    const childId = uniqueId('root-child');
    await withWorker(env, {}, async (taskQueue) => {
      const parent = await env.client.workflow.start(parentOfWaitingChild, { taskQueue, workflowId: parentId, args: [childId] });
      const child = env.client.workflow.getHandle(childId);
      const childDesc = await eventually(() => child.describe(), 'the child to start');
      const parentDesc = await parent.describe();
      const top = { workflowId: parentId, runId: parent.firstExecutionRunId };
      expect(parentDesc.rootExecution).toEqual(top);
      expect(childDesc.rootExecution).toEqual(top);
      await child.signal(infoReleaseSignal);
      expect(await parent.result()).toEqual(top);
    });
  });
});

describe('priority', () => {
  it("keeps the start request's priority; children and activities inherit the fields they do not set", async () => {
    const main: Priority = { priorityKey: 1, fairnessKey: 'main', fairnessWeight: 3 };
    const { report, events, described } = await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(priorityReporter, {
        taskQueue,
        workflowId: uniqueId('priority'),
        priority: main,
        args: [{ priorityKey: 4 }, { fairnessKey: 'activity' }],
      });
      const report = await handle.result();
      return { report, events: await historyEvents(handle), described: await handle.describe() };
    });
    expect(report.own).toMatchObject(main);
    expect(report.child?.own).toMatchObject({ priorityKey: 4, fairnessKey: 'main', fairnessWeight: 3 });
    expect(report.activity).toMatchObject({ priorityKey: 1, fairnessKey: 'activity', fairnessWeight: 3 });
    expect(described.priority).toMatchObject(main);

    // History keeps what each request or command said; inheritance happens when the child or activity starts.
    const started = events[0]?.workflowExecutionStartedEventAttributes?.priority;
    expect(started).toMatchObject(main);
    const initiated = events.find((e) => e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED);
    expect(initiated?.startChildWorkflowExecutionInitiatedEventAttributes?.priority?.priorityKey).toBe(4);
    expect(initiated?.startChildWorkflowExecutionInitiatedEventAttributes?.priority?.fairnessKey || undefined).toBeUndefined();
    const scheduled = events.find((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(scheduled?.activityTaskScheduledEventAttributes?.priority?.fairnessKey).toBe('activity');
    expect(scheduled?.activityTaskScheduledEventAttributes?.priority?.priorityKey || undefined).toBeUndefined();
  });
});

describe('user metadata', () => {
  it('describe returns the static summary and details of a workflow and of a child', async () => {
    const childId = uniqueId('metadata-child');
    await withWorker(env, {}, async (taskQueue) => {
      const parent = await env.client.workflow.start(parentWithDescribedChild, {
        taskQueue,
        workflowId: uniqueId('metadata-parent'),
        args: [childId],
        staticSummary: 'wf static summary',
        staticDetails: 'wf static details',
      });
      const parentDesc = await parent.describe();
      expect(await parentDesc.staticSummary()).toBe('wf static summary');
      expect(await parentDesc.staticDetails()).toBe('wf static details');
      const child = env.client.workflow.getHandle(childId);
      const childDesc = await eventually(() => child.describe(), 'the child to start');
      expect(await childDesc.staticSummary()).toBe('child summary');
      expect(await childDesc.staticDetails()).toBe('child details');
      await child.signal(infoReleaseSignal);
      expect(await parent.result()).toBe(childId);
    });
  });
});

describe('build ids', () => {
  it('records the worker build id on WorkflowTaskCompleted and in the queryable BuildIds search attribute', async () => {
    const buildId = uniqueId('info-build');
    const workflowId = uniqueId('build-ids');
    const { events, described } = await withWorker(env, { buildId }, async (taskQueue) => {
      const handle = await env.client.workflow.start(historySizeBeforeAndAfterTimer, { taskQueue, workflowId });
      await handle.result();
      return { events: await historyEvents(handle), described: await handle.describe() };
    });
    const completed = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    expect(completed.length).toBeGreaterThan(0);
    for (const e of completed) expect(e.workflowTaskCompletedEventAttributes?.workerVersion?.buildId).toBe(buildId);
    expect(described.searchAttributes.BuildIds).toEqual(['unversioned', `unversioned:${buildId}`]);

    const matching = await eventually(async () => {
      const { count } = await env.client.workflow.count(`WorkflowId = '${workflowId}' AND BuildIds = 'unversioned:${buildId}'`);
      return count === 1 ? count : undefined;
    }, 'visibility to find the run by build id');
    expect(matching).toBe(1);
    const { count: other } = await env.client.workflow.count(`WorkflowId = '${workflowId}' AND BuildIds = 'unversioned:other'`);
    expect(other).toBe(0);
  });

  it('workflowInfo().currentBuildId is the build id of the worker that completed the task it is replaying', async () => {
    const taskQueue = uniqueId('build-id-tq');
    const workflowId = uniqueId('current-build-id');
    const first = uniqueId('bid-1.0');
    const second = uniqueId('bid-1.1');
    await withWorker(env, { taskQueue, buildId: first }, async () => {
      const handle = await env.client.workflow.start(buildIdReporter, { taskQueue, workflowId });
      expect(await handle.query(currentBuildIdQuery)).toBe(first);
    });
    await env.client.workflowService.resetStickyTaskQueue({ namespace: namespaceOf(env), execution: { workflowId } });
    const handle = env.client.workflow.getHandle(workflowId);
    try {
      await withWorker(env, { taskQueue, buildId: second }, async () => {
        // A new worker replays the history: the task it replays was completed by the first build.
        expect(await handle.query(currentBuildIdQuery)).toBe(first);
        await handle.signal(infoReleaseSignal);
        await eventually(
          async () => ((await handle.query(currentBuildIdQuery)) === second ? true : undefined),
          'the second build to complete a task',
        );
      });
      const described = await handle.describe();
      expect(described.searchAttributes.BuildIds).toEqual(['unversioned', `unversioned:${first}`, `unversioned:${second}`]);
    } finally {
      await handle.terminate('test done');
    }
  });

  it("records a worker deployment's name and build id when the worker does not use versioning", async () => {
    const deploymentName = uniqueId('info-deployment');
    const buildId = uniqueId('dep-build');
    const { events, described } = await withWorker(
      env,
      { workerDeploymentOptions: { version: { deploymentName, buildId }, useWorkerVersioning: false } },
      async (taskQueue) => {
        const handle = await env.client.workflow.start(historySizeBeforeAndAfterTimer, {
          taskQueue,
          workflowId: uniqueId('deployment'),
        });
        await handle.result();
        return { events: await historyEvents(handle), described: await handle.describe() };
      },
    );
    const completed = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    expect(completed?.workflowTaskCompletedEventAttributes?.workerDeploymentName).toBe(deploymentName);
    expect(completed?.workflowTaskCompletedEventAttributes?.workerVersion?.buildId).toBe(buildId);
    expect(completed?.workflowTaskCompletedEventAttributes?.versioningBehavior || undefined).toBeUndefined();
    expect(described.searchAttributes.BuildIds).toEqual(['unversioned', `unversioned:${buildId}`]);
  });
});

describe('execution config', () => {
  it('describe leaves the run and execution timeouts unset when the start set none, and reports them when it did', async () => {
    const taskQueue = uniqueId('unpolled');
    const plain = await env.client.workflow.start('noWorkerRunsThis', { taskQueue, workflowId: uniqueId('no-timeouts') });
    const timed = await env.client.workflow.start('noWorkerRunsThis', {
      taskQueue,
      workflowId: uniqueId('timeouts'),
      workflowRunTimeout: '2 hours',
      workflowExecutionTimeout: '3 hours',
    });
    try {
      const plainConfig = (await plain.describe()).raw.executionConfig;
      expect(plainConfig?.workflowRunTimeout ?? null).toBeNull();
      expect(plainConfig?.workflowExecutionTimeout ?? null).toBeNull();
      const timedConfig = (await timed.describe()).raw.executionConfig;
      expect(Number(timedConfig?.workflowRunTimeout?.seconds)).toBe(2 * 3600);
      expect(Number(timedConfig?.workflowExecutionTimeout?.seconds)).toBe(3 * 3600);
    } finally {
      await Promise.all([plain.terminate(), timed.terminate()]);
    }
  });
});

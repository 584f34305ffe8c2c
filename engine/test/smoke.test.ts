// Drives bin/temporal-devserver in time-skipping mode through the real SDK, as @temporalio/testing launches it.
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as activities from './fixtures/activities.js';

const devserver = fileURLToPath(new URL('../../bin/temporal-devserver', import.meta.url));

describe('time-skipping devserver', () => {
  let env: TestWorkflowEnvironment;
  let bundle: WorkflowBundleWithSourceMap;

  beforeAll(async () => {
    env = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: devserver } },
    });
    bundle = await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./fixtures/workflows.ts', import.meta.url)) });
  });

  afterAll(async () => {
    await env?.teardown();
  });

  async function withWorker<T>(fn: (taskQueue: string) => Promise<T>, maxCachedWorkflows?: number): Promise<T> {
    const taskQueue = `tq-${Math.random().toString(36).slice(2)}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: bundle,
      activities,
      ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}),
    });
    return await worker.runUntil(fn(taskQueue));
  }

  it('runs an activity and skips an hour-long timer', async () => {
    const before = await env.currentTimeMs();
    const result = await withWorker((taskQueue) =>
      env.client.workflow.execute('activityAndTimer', { taskQueue, workflowId: `wf-${Date.now()}`, args: ['ada'] }),
    );
    expect(result).toBe('hello ada');
    expect((await env.currentTimeMs()) - before).toBeGreaterThanOrEqual(3600_000);
  });

  for (const cache of [undefined, 0]) {
    it(`signals, queries and updates (maxCachedWorkflows=${cache ?? 'default'})`, async () => {
      const result = await withWorker(async (taskQueue) => {
        const h = await env.client.workflow.start('signalQueryUpdate', { taskQueue, workflowId: `sqU-${Date.now()}-${cache}` });
        expect(await h.query('status')).toBe('waiting-v2');
        expect(await h.executeUpdate('bump', { args: [2] })).toBe(2);
        await expect(h.executeUpdate('bump', { args: [-1] })).rejects.toMatchObject({ cause: { message: 'negative' } });
        expect(await h.executeUpdate('bump', { args: [3] })).toBe(5);
        await h.signal('approve', 'bob');
        const r = await h.result();
        expect(await h.query('status')).toBe('approved');
        // The history the engine wrote replays without nondeterminism (rejected update left no trace).
        await Worker.runReplayHistory({ workflowBundle: bundle }, await h.fetchHistory(), h.workflowId);
        return r;
      }, cache);
      expect(result).toBe('approved:bob:5');
    });
  }

  it('retries a failing activity', async () => {
    const r = await withWorker((taskQueue) =>
      env.client.workflow.execute('retrying', { taskQueue, workflowId: `retry-${Date.now()}` }),
    );
    expect(r).toBe(3);
  });

  it('retries a run that timed out under the workflow retry policy', async () => {
    const workflowId = `run-timeout-${Date.now()}`;
    const attempt = await withWorker((taskQueue) =>
      env.client.workflow.execute('slowFirstAttempt', {
        taskQueue,
        workflowId,
        workflowRunTimeout: '10 minutes',
        retry: { initialInterval: '1s', maximumAttempts: 3 },
      }),
    );
    expect(attempt).toBe(2);
    const runs = [];
    for await (const w of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(w.status.name);
    expect(runs.sort()).toEqual(['COMPLETED', 'TIMED_OUT']);
  });

  it('continues as new and runs child workflows', async () => {
    const [a, b] = await withWorker((taskQueue) =>
      Promise.all([
        env.client.workflow.execute('counterLoop', { taskQueue, workflowId: `can-${Date.now()}`, args: [0] }),
        env.client.workflow.execute('parent', { taskQueue, workflowId: `parent-${Date.now()}` }),
      ]),
    );
    expect(a).toBe(3);
    expect(b).toBe('parent(hello child)');
  });
});

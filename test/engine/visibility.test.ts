// List and count with the simple visibility query language: WorkflowId, WorkflowType, ExecutionStatus,
// StartTime ranges. Workflows of a unique type that no worker runs keep the counts exact even on a shared server.
import { randomUUID } from 'node:crypto';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import { createEnv, eventually, uniqueId, withWorker } from './env.js';
import { failWithType, returnValue, signalCollector } from './workflows.js';

let env: TestWorkflowEnvironment;
const activities = createActivities();
const probeType = `visibilityProbe_${randomUUID().replaceAll('-', '')}`;
const probeIds = [uniqueId('probe-a'), uniqueId('probe-b'), uniqueId('probe-c')] as const;
const startTimes: Date[] = [];

beforeAll(async () => {
  env = await createEnv();
  for (const workflowId of probeIds) {
    const handle = await env.client.workflow.start(probeType, { taskQueue: uniqueId('unpolled'), workflowId });
    startTimes.push((await handle.describe()).startTime);
    // Distinct start times, so the StartTime ranges below separate the three runs.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await env.client.workflow.getHandle(probeIds[2]).terminate('visibility fixture');
});
afterAll(async () => {
  await env?.teardown();
});

async function listIds(query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const info of env.client.workflow.list({ query })) ids.push(info.workflowId);
  return ids.sort();
}

/** Visibility may lag on a real server: poll (bounded) until the listing matches. */
async function expectListing(query: string, expectedIds: readonly string[]): Promise<void> {
  const expected = [...expectedIds].sort();
  let last: string[] | undefined;
  try {
    await eventually(async () => {
      last = await listIds(query);
      return JSON.stringify(last) === JSON.stringify(expected) ? true : undefined;
    }, `listing of ${query}`);
  } catch (err) {
    if (last === undefined) throw err;
    expect(last, query).toEqual(expected);
  }
}

async function expectCount(query: string, expected: number): Promise<void> {
  let last: number | undefined;
  try {
    await eventually(async () => {
      last = (await env.client.workflow.count(query)).count;
      return last === expected ? true : undefined;
    }, `count of ${query}`);
  } catch (err) {
    if (last === undefined) throw err;
    expect(last, query).toBe(expected);
  }
}

const iso = (date: Date | undefined): string => (date ?? new Date(0)).toISOString();

describe('list', () => {
  it('filters by WorkflowType', async () => {
    await expectListing(`WorkflowType = '${probeType}'`, probeIds);
  });

  it('filters by WorkflowId', async () => {
    await expectListing(`WorkflowId = '${probeIds[1]}'`, [probeIds[1]]);
  });

  it('filters by ExecutionStatus combined with AND', async () => {
    await expectListing(`WorkflowType = '${probeType}' AND ExecutionStatus = 'Running'`, [probeIds[0], probeIds[1]]);
    await expectListing(`WorkflowType = '${probeType}' AND ExecutionStatus = 'Terminated'`, [probeIds[2]]);
  });

  it('filters by StartTime ranges', async () => {
    await expectListing(`WorkflowType = '${probeType}' AND StartTime >= '${iso(startTimes[1])}'`, [probeIds[1], probeIds[2]]);
    await expectListing(`WorkflowType = '${probeType}' AND StartTime < '${iso(startTimes[1])}'`, [probeIds[0]]);
    const justAfterSecond = new Date((startTimes[1]?.getTime() ?? 0) + 1);
    await expectListing(
      `WorkflowType = '${probeType}' AND StartTime BETWEEN '${iso(startTimes[0])}' AND '${iso(justAfterSecond)}'`,
      [probeIds[0], probeIds[1]],
    );
  });

  it('returns execution info for every listed workflow', async () => {
    await expectListing(`WorkflowId = '${probeIds[2]}'`, [probeIds[2]]);
    const infos: WorkflowExecutionInfo[] = [];
    for await (const info of env.client.workflow.list({ query: `WorkflowId = '${probeIds[2]}'` })) infos.push(info);
    expect(infos).toHaveLength(1);
    expect(infos[0]?.type).toBe(probeType);
    expect(infos[0]?.status.name).toBe('TERMINATED');
    expect(infos[0]?.closeTime).toBeInstanceOf(Date);
    expect(infos[0]?.startTime.getTime()).toBe(startTimes[2]?.getTime());
  });

  it('lists a completed workflow under ExecutionStatus Completed', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const workflowId = uniqueId('completed');
      await env.client.workflow.execute(returnValue<string>, { taskQueue, workflowId, args: ['done'] });
      await expectListing(`WorkflowId = '${workflowId}' AND ExecutionStatus = 'Completed'`, [workflowId]);
      await expectListing(`WorkflowId = '${workflowId}' AND WorkflowType = 'returnValue'`, [workflowId]);
      await expectListing(`WorkflowId = '${workflowId}' AND ExecutionStatus = 'Running'`, []);
    });
  });

  it('lists failed and canceled workflows under their statuses', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const failedId = uniqueId('failed');
      await env.client.workflow
        .execute(failWithType, { taskQueue, workflowId: failedId, args: ['Broken'] })
        .catch(() => undefined);
      const canceled = await env.client.workflow.start(signalCollector, { taskQueue, workflowId: uniqueId('canceled') });
      await canceled.cancel();
      await canceled.result().catch(() => undefined);
      await expectListing(`WorkflowId = '${failedId}' AND ExecutionStatus = 'Failed'`, [failedId]);
      await expectListing(`WorkflowId = '${canceled.workflowId}' AND ExecutionStatus = 'Canceled'`, [canceled.workflowId]);
    });
  });
});

describe('count', () => {
  it('counts with the same query language', async () => {
    await expectCount(`WorkflowType = '${probeType}'`, 3);
    await expectCount(`WorkflowType = '${probeType}' AND ExecutionStatus = 'Running'`, 2);
    await expectCount(`WorkflowType = '${probeType}' AND StartTime >= '${iso(startTimes[1])}'`, 2);
    await expectCount(`WorkflowId = '${uniqueId('nobody')}'`, 0);
  });

  it('groups a count by ExecutionStatus, and only a count, and only by ExecutionStatus', async () => {
    const query = `WorkflowType = '${probeType}'`;
    await expectCount(query, 3);
    expect(await env.client.workflow.count(`${query} GROUP BY ExecutionStatus`)).toEqual({
      count: 3,
      groups: [
        { count: 2, groupValues: [['Running']] },
        { count: 1, groupValues: [['Terminated']] },
      ],
    });
    expect(await env.client.workflow.count(query)).toEqual({ count: 3, groups: [] });
    // the SDK wraps the server's INVALID_ARGUMENT; its message is in the cause
    const refusal = (call: Promise<unknown>) =>
      call.then(
        () => 'accepted',
        (err: Error & { cause?: { code?: number; details?: string } }) => `${err.cause?.code} ${err.cause?.details}`,
      );
    expect(await refusal(env.client.workflow.count(`${query} GROUP BY WorkflowType`))).toMatch(
      /^3 .*'GROUP BY' clause is only supported for ExecutionStatus/,
    );
    expect(await refusal(listIds(`${query} GROUP BY ExecutionStatus`))).toMatch(/^3 .*only supported in count query/);
  });
});

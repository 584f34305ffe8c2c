// Temporal's history limits on every change of a run, not only on workflow-task completions: past
// `limit.historyCount.warn` / `limit.historySize.warn` the server logs a warning, past `limit.historyCount.error` /
// `limit.historySize.error` it terminates the run (reason "Workflow history count|size exceeds limit.", identity
// history-service, as Temporal's enforceHistoryCountCheck / enforceHistorySizeCheck do) and the request that
// made it pass is INVALID_ARGUMENT with that reason. The limits are lowered with --dynamic-config-value so the
// test is fast; signals are sent with no worker at all, so no completion is there to trigger the check.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { type Client, isGrpcServiceError, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { TerminatedFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyEvents, uniqueId } from './env.js';
import { DevServerProcess, freePort } from './support/devserver-process.js';
import { manyTimers, pushSignal, signalCollector } from './workflows.js';

const { EventType } = temporal.api.enums.v1;
const COUNT_WARN = 40;
const COUNT_ERROR = 120;
const SIZE_WARN = 16 * 1024;
const SIZE_ERROR = 64 * 1024;

let server: DevServerProcess;
let client: Client;

beforeAll(async () => {
  server = new DevServerProcess({
    port: await freePort(),
    dynamicConfig: [
      `limit.historyCount.warn=${COUNT_WARN}`,
      `limit.historyCount.error=${COUNT_ERROR}`,
      `limit.historySize.warn=${SIZE_WARN}`,
      `limit.historySize.error=${SIZE_ERROR}`,
    ],
  });
  client = await server.client();
});

afterAll(async () => {
  await server?.kill9();
});

/** Signals until the server refuses one; returns how many it took and the refusal. */
async function signalUntilRefused(workflowId: string, payload: string, max: number) {
  const handle = client.workflow.getHandle(workflowId);
  for (let i = 1; i <= max; i++) {
    try {
      await handle.signal(pushSignal, payload);
    } catch (err) {
      const grpc = isGrpcServiceError(err) ? err : err instanceof Error && isGrpcServiceError(err.cause) ? err.cause : undefined;
      if (!grpc) throw err;
      return { signals: i, code: grpc.code, details: grpc.details };
    }
  }
  throw new Error(`${max} signals were all accepted`);
}

function warnings(pattern: RegExp, workflowId: string): number {
  return server
    .text()
    .split('\n')
    .filter((line) => pattern.test(line) && line.includes(workflowId)).length;
}

async function expectTerminatedBy(workflowId: string, reason: string): Promise<void> {
  const handle = client.workflow.getHandle(workflowId);
  const err = await handle.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(TerminatedFailure);
  expect(cause?.message).toBe(reason);
  expect((await handle.describe()).status.name).toBe('TERMINATED');
  const events = await historyEvents(handle);
  const last = events[events.length - 1];
  expect(last?.eventType).toBe(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
  expect(last?.workflowExecutionTerminatedEventAttributes?.reason).toBe(reason);
  expect(last?.workflowExecutionTerminatedEventAttributes?.identity).toBe('history-service');
}

describe('history limits (lowered)', () => {
  it('count: warns past the warn limit, terminates past the error limit on a signal, the signaller hears why', async () => {
    const workflowId = uniqueId('count-limit');
    // No worker: the history grows by signals alone (and one scheduled workflow task).
    await client.workflow.start(signalCollector, { taskQueue: uniqueId('nobody-polls'), workflowId });
    const refused = await signalUntilRefused(workflowId, 'x', COUNT_ERROR + 10);
    expect(refused.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(refused.details).toBe('Workflow history count exceeds limit.');
    // Started + workflow task scheduled + the signals: the one that made it COUNT_ERROR + 1 was refused.
    expect(refused.signals).toBe(COUNT_ERROR - 1);
    await expectTerminatedBy(workflowId, 'Workflow history count exceeds limit.');
    expect(warnings(/history count exceeds warn limit\./, workflowId)).toBe(1);
    expect(warnings(/history count exceeds error limit\./, workflowId)).toBe(1);
    // A closed run takes no more signals.
    await expect(client.workflow.getHandle(workflowId).signal(pushSignal, 'x')).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  it('size: warns past the warn limit, terminates past the error limit', async () => {
    const workflowId = uniqueId('size-limit');
    await client.workflow.start(signalCollector, { taskQueue: uniqueId('nobody-polls'), workflowId });
    const kilobytes = 'k'.repeat(4 * 1024);
    const refused = await signalUntilRefused(workflowId, kilobytes, 40);
    expect(refused.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(refused.details).toBe('Workflow history size exceeds limit.');
    // About SIZE_ERROR / 4 KiB signals.
    expect(refused.signals).toBeGreaterThanOrEqual(14);
    expect(refused.signals).toBeLessThanOrEqual(17);
    await expectTerminatedBy(workflowId, 'Workflow history size exceeds limit.');
    expect(warnings(/history size exceeds warn limit\./, workflowId)).toBe(1);
    expect(warnings(/history count exceeds warn limit\./, workflowId)).toBe(0);
  });

  it('a run that stays under the warn limits is not logged; timers past the error limit terminate it (worker path)', async () => {
    const small = uniqueId('small');
    await server.withWorker(async (taskQueue) => {
      expect(await client.workflow.execute(manyTimers, { taskQueue, workflowId: small, args: [3] })).toBe(3);
      const workflowId = uniqueId('timers');
      await client.workflow.start(manyTimers, { taskQueue, workflowId, args: [COUNT_ERROR] });
      await expectTerminatedBy(workflowId, 'Workflow history count exceeds limit.');
      const events = await historyEvents(client.workflow.getHandle(workflowId));
      expect(events.length).toBeGreaterThan(COUNT_ERROR);
      expect(events.length).toBeLessThan(COUNT_ERROR + 5);
    }, 120_000);
    expect(warnings(/exceeds/, small)).toBe(0);
  });
});

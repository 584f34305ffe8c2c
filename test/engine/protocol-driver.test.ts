// bench/protocol-driver.ts: the benchmark's protocol-level load driver (no SDK worker) runs the
// `activityAndTimer` workload to completion against the engine, in both modes, and leaves the same
// history the SDK workflow would — over the benchmark's own HTTP/2 transport (bench/h2-connection.ts) and
// over @temporalio/client's Connection.
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpcError, H2Connection } from '../../bench/h2-connection.js';
import { runProtocolDriver, type DriverConnection } from '../../bench/protocol-driver.js';
import { createEnv, eventTypeName, historyEvents, isSubsequence, namespaceOf, uniqueId } from './env.js';

const EVENT_TYPES = temporal.api.enums.v1.EventType as unknown as Record<number, string>;
const EXPECTED_ORDER = [
  'WORKFLOW_EXECUTION_STARTED',
  'ACTIVITY_TASK_SCHEDULED',
  'ACTIVITY_TASK_STARTED',
  'ACTIVITY_TASK_COMPLETED',
  'TIMER_STARTED',
  'TIMER_FIRED',
  'WORKFLOW_EXECUTION_COMPLETED',
];

async function driveAndCheck(
  env: TestWorkflowEnvironment,
  connection: DriverConnection,
  options: { workflows: number; timerMs: number; concurrency?: number },
): Promise<void> {
  const taskQueue = uniqueId('protocol-driver');
  const result = await runProtocolDriver({
    connection,
    namespace: namespaceOf(env),
    taskQueue,
    ...options,
    timeoutMs: 45_000,
  });
  expect(result.firstError).toBeUndefined();
  expect(result.failed).toBe(0);
  expect(result.latenciesMs).toHaveLength(options.workflows);
  expect(result.wallMs).toBeGreaterThan(0);

  const events = await historyEvents(env.client.workflow.getHandle(`${taskQueue}-${options.workflows - 1}`));
  const types = events.map((e) => eventTypeName(e, EVENT_TYPES));
  expect(isSubsequence(types, EXPECTED_ORDER), types.join(', ')).toBe(true);
  expect(types.at(-1)).toBe('WORKFLOW_EXECUTION_COMPLETED');
  const data = events.at(-1)?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]?.data;
  expect(data ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined).toBe('bench');
}

describe('protocol driver over the HTTP/2 transport, time-skipping', () => {
  let env: TestWorkflowEnvironment;
  let h2: H2Connection;
  beforeAll(async () => {
    env = await createEnv('time-skipping');
    h2 = await H2Connection.connect(env.address);
  });
  afterAll(async () => {
    await h2?.close();
    await env?.teardown();
  });

  it('runs 30 workflows (activity, then a 1 s timer) with 10 in flight', { timeout: 60_000 }, async () => {
    // As the benchmark does: one unlock for the batch, so timers are skipped whenever nothing is outstanding.
    await env.connection.testService?.unlockTimeSkipping({});
    await driveAndCheck(env, h2, { workflows: 30, timerMs: 1_000, concurrency: 10 });
  });

  it('surfaces a server error with its gRPC code', async () => {
    const call = h2.workflowService.describeWorkflowExecution({
      namespace: namespaceOf(env),
      execution: { workflowId: uniqueId('missing') },
    });
    await expect(call).rejects.toBeInstanceOf(GrpcError);
    await expect(call).rejects.toMatchObject({ code: 5 });
  });

  it('cancels a long poll when its signal aborts', { timeout: 10_000 }, async () => {
    const controller = new AbortController();
    const poll = h2.withAbortSignal(controller.signal, () =>
      h2.workflowService.pollWorkflowTaskQueue({ namespace: namespaceOf(env), taskQueue: { name: uniqueId('idle') } }),
    );
    setTimeout(() => controller.abort(), 100);
    await expect(poll).rejects.toMatchObject({ code: 1 });
  });
});

describe('protocol driver over @temporalio/client, dev server', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createEnv('dev-server');
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('runs 10 workflows (activity, then a 200 ms timer) all at once', { timeout: 60_000 }, async () => {
    await driveAndCheck(env, env.connection, { workflows: 10, timerMs: 200 });
  });
});

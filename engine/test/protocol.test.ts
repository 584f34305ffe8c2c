// Raw WorkflowService calls (no worker): what the server does with malformed completions and unknown RPCs.
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../src/index.js';

const { EventType, CommandType, WorkflowTaskFailedCause } = proto.temporal.api.enums.v1;

describe('raw protocol', () => {
  let server: DevServer;
  let connection: Connection;

  beforeAll(async () => {
    server = await startDevServer({ timeSkipping: false, port: 0 });
    connection = await Connection.connect({ address: server.address });
  });

  afterAll(async () => {
    await connection?.close();
    await server?.close();
  });

  async function startAndPoll(taskQueue: string) {
    const svc = connection.workflowService;
    const workflowId = `raw-${randomUUID()}`;
    const { runId } = await svc.startWorkflowExecution({
      namespace: 'default',
      workflowId,
      workflowType: { name: 'raw' },
      taskQueue: { name: taskQueue },
      requestId: randomUUID(),
    });
    const task = await svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity: 'test' });
    return { workflowId, runId: runId!, task };
  }

  it('fails a workflow task whose command lacks required attributes, applying none of it', async () => {
    const svc = connection.workflowService;
    const { workflowId, runId, task } = await startAndPoll(`raw-${randomUUID()}`);
    await expect(
      svc.respondWorkflowTaskCompleted({
        namespace: 'default',
        taskToken: task.taskToken,
        identity: 'test',
        commands: [
          {
            commandType: CommandType.COMMAND_TYPE_START_TIMER,
            startTimerCommandAttributes: { timerId: 't1', startToFireTimeout: msToTs('60s') },
          },
          {
            commandType: CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
            scheduleActivityTaskCommandAttributes: { activityId: '1' },
          },
        ],
      }),
    ).rejects.toMatchObject({ code: 3 });
    const { history } = await svc.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId, runId } });
    const types = (history?.events ?? []).map((e) => e.eventType);
    expect(types).toEqual([
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    ]);
    expect(history?.events?.[3]?.workflowTaskFailedEventAttributes?.cause).toBe(
      WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES,
    );
  });

  it('refuses a second timer with the id of a running one', async () => {
    const svc = connection.workflowService;
    const taskQueue = `raw-${randomUUID()}`;
    const { workflowId, runId, task } = await startAndPoll(taskQueue);
    const timer = {
      commandType: CommandType.COMMAND_TYPE_START_TIMER,
      startTimerCommandAttributes: { timerId: 'same', startToFireTimeout: msToTs('1h') },
    };
    await svc.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: task.taskToken, commands: [timer] });
    await svc.signalWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId, runId }, signalName: 'wake' });
    const second = await svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue } });
    await expect(
      svc.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: second.taskToken, commands: [timer] }),
    ).rejects.toMatchObject({ code: 3 });
    const { history } = await svc.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId, runId } });
    const failed = history?.events?.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
    expect(failed?.workflowTaskFailedEventAttributes?.cause).toBe(
      WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_START_TIMER_DUPLICATE_ID,
    );
  });

  it('rejects a stale task token', async () => {
    const svc = connection.workflowService;
    const { task } = await startAndPoll(`raw-${randomUUID()}`);
    await svc.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: task.taskToken, commands: [] });
    await expect(
      svc.respondWorkflowTaskCompleted({ namespace: 'default', taskToken: task.taskToken, commands: [] }),
    ).rejects.toMatchObject({
      code: 5,
    });
  });

  it('forgets closed executions past the retention period, keeping open ones', async () => {
    const svc = connection.workflowService;
    const { workflowId, runId } = await startAndPoll(`raw-${randomUUID()}`);
    const open = await startAndPoll(`raw-${randomUUID()}`);
    await svc.terminateWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId, runId }, reason: 'done' });
    const swept = await startDevServer({ timeSkipping: false, port: 0, retentionMs: 0 });
    try {
      const c = await Connection.connect({ address: swept.address });
      try {
        const w = c.workflowService;
        const a = await w.startWorkflowExecution({
          namespace: 'default',
          workflowId: 'closed',
          workflowType: { name: 'raw' },
          taskQueue: { name: 'q' },
          requestId: randomUUID(),
        });
        await w.startWorkflowExecution({
          namespace: 'default',
          workflowId: 'open',
          workflowType: { name: 'raw' },
          taskQueue: { name: 'q' },
          requestId: randomUUID(),
        });
        await w.terminateWorkflowExecution({ namespace: 'default', workflowExecution: { workflowId: 'closed', runId: a.runId } });
        swept.engine.sweepClosed();
        await expect(
          w.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: 'closed' } }),
        ).rejects.toMatchObject({ code: 5 });
        const still = await w.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: 'open' } });
        expect(still.workflowExecutionInfo?.execution?.workflowId).toBe('open');
      } finally {
        await c.close();
      }
    } finally {
      await swept.close();
    }
    // The default 24 h retention keeps what just closed.
    server.engine.sweepClosed();
    const kept = await svc.describeWorkflowExecution({ namespace: 'default', execution: { workflowId, runId } });
    expect(kept.workflowExecutionInfo?.execution?.runId).toBe(runId);
    expect(open.runId).toBeTruthy();
  });

  it('keeps the closed executions of a registered namespace for its own retention period', async () => {
    const svc = connection.workflowService;
    const namespace = `brief-${randomUUID()}`;
    await svc.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('5ms') });
    const described = await svc.describeNamespace({ namespace });
    expect(Number(described.config?.workflowExecutionRetentionTtl?.nanos)).toBe(5_000_000);
    const closeOne = async (ns: string) => {
      const workflowId = `retained-${randomUUID()}`;
      const { runId } = await svc.startWorkflowExecution({
        namespace: ns,
        workflowId,
        workflowType: { name: 'raw' },
        taskQueue: { name: 'q' },
        requestId: randomUUID(),
      });
      await svc.terminateWorkflowExecution({ namespace: ns, workflowExecution: { workflowId, runId } });
      return { workflowId, runId };
    };
    const brief = await closeOne(namespace);
    const standard = await closeOne('default');
    await new Promise((resolve) => setTimeout(resolve, 20));
    server.engine.sweepClosed();
    await expect(svc.describeWorkflowExecution({ namespace, execution: brief })).rejects.toMatchObject({ code: 5 });
    const kept = await svc.describeWorkflowExecution({ namespace: 'default', execution: standard });
    expect(kept.workflowExecutionInfo?.execution?.runId).toBe(standard.runId);
  });

  it('answers UNIMPLEMENTED for RPCs it does not serve and advertises only what it implements', async () => {
    await expect(connection.workflowService.listSchedules({ namespace: 'default' })).rejects.toMatchObject({ code: 12 });
    const info = await connection.workflowService.getSystemInfo({});
    expect(info.capabilities?.sdkMetadata).toBe(true);
    expect(info.capabilities?.buildIdBasedVersioning).toBeFalsy();
    expect(info.capabilities?.eagerWorkflowStart).toBeFalsy();
  });
});

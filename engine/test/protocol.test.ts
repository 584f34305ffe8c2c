// Raw WorkflowService calls (no worker): what the server does with malformed completions and unknown RPCs, and with
// the workflow task a completion asks to get back (returnNewWorkflowTask).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer, type DevServerOptions } from '../src/index.js';

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

  it('hands the first workflow task back in the start response when eager execution is asked for', async () => {
    const svc = connection.workflowService;
    const taskQueue = `raw-${randomUUID()}`;
    const workflowId = `eager-${randomUUID()}`;
    const requestId = randomUUID();
    const start = {
      namespace: 'default',
      workflowId,
      workflowType: { name: 'raw' },
      taskQueue: { name: taskQueue },
      requestId,
      identity: 'starter',
      requestEagerExecution: true,
    };
    const { runId, eagerWorkflowTask: task } = await svc.startWorkflowExecution(start);
    expect(task?.workflowExecution).toMatchObject({ workflowId, runId });
    expect(Number(task?.startedEventId)).toBe(3);
    expect(Number(task?.previousStartedEventId)).toBe(0);
    expect(task?.attempt).toBe(1);
    expect(task?.history?.events?.map((e) => e.eventType)).toEqual([
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    ]);
    expect(task?.history?.events?.[2]?.workflowTaskStartedEventAttributes?.identity).toBe('starter');
    // A retried start (same request id) answers with the run, not a second copy of its task.
    const retried = await svc.startWorkflowExecution(start);
    expect(retried.runId).toBe(runId);
    expect(retried.eagerWorkflowTask).toBeFalsy();
    await svc.respondWorkflowTaskCompleted({
      namespace: 'default',
      taskToken: task!.taskToken,
      commands: [
        { commandType: CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, completeWorkflowExecutionCommandAttributes: {} },
      ],
    });
    const described = await svc.describeWorkflowExecution({ namespace: 'default', execution: { workflowId, runId } });
    expect(described.workflowExecutionInfo?.status).toBe(
      proto.temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED,
    );
    // No eager task for a delayed start: there is no task yet.
    const delayed = await svc.startWorkflowExecution({
      ...start,
      workflowId: `eager-delayed-${randomUUID()}`,
      requestId: randomUUID(),
      workflowStartDelay: msToTs('1h'),
    });
    expect(delayed.eagerWorkflowTask).toBeFalsy();
  });

  it('puts NamespaceNotFoundFailure in the status details of an unknown namespace', async () => {
    type GrpcError = { code: number; details: string; metadata: { get(k: string): unknown[] } };
    const err = (await connection.workflowService
      .describeWorkflowExecution({ namespace: 'nowhere', execution: { workflowId: 'x' } })
      .then(
        () => undefined,
        (e: unknown) => e,
      )) as GrpcError;
    expect(err).toMatchObject({ code: 5, details: 'Namespace nowhere is not found.' });
    const bin = err.metadata.get('grpc-status-details-bin')[0] as Buffer;
    const status = proto.google.rpc.Status.decode(bin);
    expect(status.code).toBe(5);
    expect(status.details[0]?.type_url).toBe('type.googleapis.com/temporal.api.errordetails.v1.NamespaceNotFoundFailure');
    const detail = proto.temporal.api.errordetails.v1.NamespaceNotFoundFailure.decode(status.details[0]!.value!);
    expect(detail.namespace).toBe('nowhere');
  });

  it('answers UNIMPLEMENTED naming the feature for RPCs it does not serve, and advertises only what it implements', async () => {
    const svc = connection.workflowService;
    await expect(svc.listSchedules({ namespace: 'default' })).rejects.toMatchObject({
      code: 12,
      details: 'Schedules are not implemented by temporal-devserver (ListSchedules)',
    });
    await expect(svc.startActivityExecution({ namespace: 'default' })).rejects.toMatchObject({
      code: 12,
      details: expect.stringMatching(/^Standalone activities are not implemented by temporal-devserver/),
    });
    await expect(svc.pollNexusTaskQueue({ namespace: 'default' })).rejects.toMatchObject({
      code: 12,
      details: expect.stringMatching(/^Nexus operations and endpoints are not implemented/),
    });
    await expect(svc.resetWorkflowExecution({ namespace: 'default' })).rejects.toMatchObject({
      code: 12,
      details: expect.stringMatching(/^Workflow reset is not implemented/),
    });
    await expect(svc.listWorkerDeployments({ namespace: 'default' })).rejects.toMatchObject({
      code: 12,
      details: expect.stringMatching(/^Worker deployments are not implemented/),
    });
    await expect(connection.operatorService.listNexusEndpoints({})).rejects.toMatchObject({
      code: 12,
      details: expect.stringMatching(/^Nexus operations and endpoints are not implemented/),
    });
    // As on Temporal, the namespace is checked before anything else.
    await expect(svc.listSchedules({ namespace: 'no-such-namespace' })).rejects.toMatchObject({
      code: 5,
      details: 'Namespace no-such-namespace is not found.',
    });
    const info = await svc.getSystemInfo({});
    expect(info.capabilities?.sdkMetadata).toBe(true);
    expect(info.capabilities?.eagerWorkflowStart).toBe(true);
    expect(info.capabilities?.supportsSchedules).toBeFalsy();
    expect(info.capabilities?.nexus).toBeFalsy();
  });
});

describe('the workflow task a completion returns (returnNewWorkflowTask)', () => {
  const identity = 'heartbeating-worker';
  let dir: string;
  const servers: DevServer[] = [];
  const connections: Connection[] = [];

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-return-new-task-'));
  });
  afterAll(async () => {
    for (const c of connections) await c.close();
    for (const s of servers) await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function open(opts: Partial<DevServerOptions> = {}): Promise<{ server: DevServer; svc: Connection['workflowService'] }> {
    const server = await startDevServer({ timeSkipping: false, port: 0, ...opts });
    servers.push(server);
    const connection = await Connection.connect({ address: server.address });
    connections.push(connection);
    return { server, svc: connection.workflowService };
  }

  /** A run whose first task was polled and then heartbeated as the SDK does; returns the task the heartbeat got. */
  async function heartbeatedRun(svc: Connection['workflowService']) {
    const taskQueue = `raw-${randomUUID()}`;
    const workflowId = `heartbeat-${randomUUID()}`;
    const { runId } = await svc.startWorkflowExecution({
      namespace: 'default',
      workflowId,
      workflowType: { name: 'raw' },
      taskQueue: { name: taskQueue },
      requestId: randomUUID(),
    });
    const first = await svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity });
    const { workflowTask } = await svc.respondWorkflowTaskCompleted({
      namespace: 'default',
      taskToken: first.taskToken,
      identity,
      commands: [],
      stickyAttributes: { workerTaskQueue: { name: `${taskQueue}-sticky` }, scheduleToStartTimeout: msToTs('10s') },
      forceCreateNewWorkflowTask: true,
      returnNewWorkflowTask: true,
    });
    expect(Number(workflowTask?.startedEventId)).toBe(6);
    return { workflowId, runId: runId!, task: workflowTask! };
  }

  function complete(svc: Connection['workflowService'], taskToken: Uint8Array | null | undefined) {
    return svc.respondWorkflowTaskCompleted({
      namespace: 'default',
      taskToken,
      identity,
      commands: [
        { commandType: CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, completeWorkflowExecutionCommandAttributes: {} },
      ],
      returnNewWorkflowTask: true,
    });
  }

  it('counts the returned task as outstanding for the clock: an advance settles only once it completes', async () => {
    const { server, svc } = await open({ clockControl: true });
    const { runId, task } = await heartbeatedRun(svc);
    const clock = server.engine.clock;
    expect(clock.describe().outstanding).toContain(`wft:default/${runId}`);
    let settled = false;
    const advance = clock.advanceTo(clock.now() + 3_600_000).then(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    const answer = await complete(svc, task.taskToken);
    expect(answer.workflowTask).toBeFalsy();
    await Promise.race([
      advance,
      new Promise((_, reject) => setTimeout(() => reject(new Error('the advance did not settle')), 5_000)),
    ]);
    expect(clock.describe().outstanding).not.toContain(`wft:default/${runId}`);
  });

  it('journals the returned task before answering: after a restart it is still started, and its worker completes it', async () => {
    const dbFilename = path.join(dir, 'journal.jsonl');
    const first = await open({ dbFilename });
    const { workflowId, runId, task } = await heartbeatedRun(first.svc);
    await first.server.close();
    const again = await open({ dbFilename });
    const execution = { workflowId, runId };
    const { history } = await again.svc.getWorkflowExecutionHistory({ namespace: 'default', execution });
    // the task the worker holds survives, as on Temporal: no timeout and no second task for the run meanwhile
    // (the SDK cannot take a new task for a run whose task it is still working on)
    expect(history?.events?.map((e) => e.eventType)).toEqual([
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    ]);
    expect(history?.events?.[5]?.workflowTaskStartedEventAttributes?.identity).toBe(identity);
    const described = await again.svc.describeWorkflowExecution({ namespace: 'default', execution });
    expect(described.pendingWorkflowTask?.state).toBe(
      proto.temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED,
    );
    // its worker's completion, with the token it got before the restart, is taken
    await complete(again.svc, task.taskToken);
    const after = await again.svc.getWorkflowExecutionHistory({ namespace: 'default', execution });
    expect(after.history?.events?.slice(6).map((e) => e.eventType)).toEqual([
      EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    ]);
  });

  it('a started task whose worker never completes it times out at its deadline after a restart, and is scheduled again', async () => {
    const dbFilename = path.join(dir, 'journal-timeout.jsonl');
    const first = await open({ dbFilename });
    const taskQueue = `raw-${randomUUID()}`;
    const workflowId = `restart-timeout-${randomUUID()}`;
    const { runId } = await first.svc.startWorkflowExecution({
      namespace: 'default',
      workflowId,
      workflowType: { name: 'raw' },
      taskQueue: { name: taskQueue },
      workflowTaskTimeout: msToTs('1s'),
      requestId: randomUUID(),
    });
    await first.svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity });
    await first.server.close();
    const again = await open({ dbFilename });
    const execution = { workflowId, runId };
    const types = async () =>
      ((await again.svc.getWorkflowExecutionHistory({ namespace: 'default', execution })).history?.events ?? []).map(
        (e) => e.eventType,
      );
    const deadline = Date.now() + 10_000;
    while ((await types()).length < 5 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await types()).toEqual([
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    ]);
    // the task is offered again: a poll gets it
    const retried = await again.svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity });
    expect(Number(retried.attempt)).toBe(2);
  });

  it('returns nothing when the completion leads to no new task', async () => {
    const { svc } = await open();
    const taskQueue = `raw-${randomUUID()}`;
    await svc.startWorkflowExecution({
      namespace: 'default',
      workflowId: `no-new-task-${randomUUID()}`,
      workflowType: { name: 'raw' },
      taskQueue: { name: taskQueue },
      requestId: randomUUID(),
    });
    const task = await svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity });
    const answer = await svc.respondWorkflowTaskCompleted({
      namespace: 'default',
      taskToken: task.taskToken,
      identity,
      commands: [
        {
          commandType: CommandType.COMMAND_TYPE_START_TIMER,
          startTimerCommandAttributes: { timerId: 't', startToFireTimeout: msToTs('1h') },
        },
      ],
      returnNewWorkflowTask: true,
    });
    expect(answer.workflowTask).toBeFalsy();
  });
});

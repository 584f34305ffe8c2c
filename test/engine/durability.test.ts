// kill -9 durability of `bin/temporal-devserver server start-dev --db-filename F`: workflows caught mid-flight
// (timer pending, activity scheduled, activity running on a worker that dies too, waiting for a signal,
// already completed) all carry on after the server restarts on the same file.
import { freePort } from '../../tools/child-processes.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import { bounded, DEVSERVER_PATH, eventually, uniqueId, withWorker, workflowBundle } from './env.js';
import {
  activityAcrossRestart,
  durableSteps,
  finishSignal,
  incrementUpdate,
  itemsQuery,
  pushSignal,
  releaseSignal,
  returnValue,
  signalCollector,
  updatable,
} from './workflows.js';

const WORKER_SCRIPT = fileURLToPath(new URL('./support/durability-worker.ts', import.meta.url));

/** A child process whose output we keep for diagnostics, killed with SIGKILL (the worker traps SIGTERM). */
class Child {
  readonly output: string[] = [];
  private readonly exited: Promise<void>;

  constructor(
    readonly name: string,
    readonly process: ChildProcess,
  ) {
    process.stdout?.on('data', (chunk: Buffer) => this.output.push(chunk.toString()));
    process.stderr?.on('data', (chunk: Buffer) => this.output.push(chunk.toString()));
    this.exited = new Promise((resolve) => {
      if (process.exitCode !== null || process.signalCode !== null) resolve();
      else process.once('exit', () => resolve());
    });
  }

  text(): string {
    return this.output.join('');
  }

  async kill9(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    await bounded(this.exited, 10_000, `${this.name} to exit after SIGKILL`);
  }

  async waitForOutput(pattern: RegExp, what: string, timeoutMs = 30_000): Promise<void> {
    await eventually(
      async () => (pattern.test(this.text()) ? true : undefined),
      `${what}; output so far:\n${this.text()}`,
      timeoutMs,
    );
  }
}

let workDir: string;
let dbFile: string;
let bundleFile: string;
let port: number;
const children: Child[] = [];
const connections: Connection[] = [];

function startServer(file = dbFile, serverPort = port): Child {
  const child = new Child(
    'temporal-devserver',
    spawn(
      DEVSERVER_PATH,
      [
        'server',
        'start-dev',
        '--port',
        String(serverPort),
        '--namespace',
        'default',
        '--ip',
        '127.0.0.1',
        '--db-filename',
        file,
        '--headless',
        '--log-level',
        'warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  children.push(child);
  return child;
}

function startWorker(workflowQueue: string, activityQueues: string[]): Child {
  const child = new Child(
    'durability worker',
    spawn(
      process.execPath,
      ['--import', 'tsx', WORKER_SCRIPT, `127.0.0.1:${port}`, bundleFile, workflowQueue, ...activityQueues],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    ),
  );
  children.push(child);
  return child;
}

/** Connects once the server answers GetSystemInfo; retried while it starts up (bounded). */
async function connectClient(server: Child, serverPort = port, namespace = 'default'): Promise<Client> {
  const connection = await eventually(
    async () => {
      const candidate = await Connection.connect({ address: `127.0.0.1:${serverPort}`, connectTimeout: 1_000 });
      try {
        await candidate.withDeadline(Date.now() + 2_000, () => candidate.workflowService.getSystemInfo({}));
        return candidate;
      } catch (err) {
        await candidate.close();
        throw err;
      }
    },
    `the server on port ${serverPort} to answer; server output:\n${server.text()}`,
    30_000,
    250,
  );
  connections.push(connection);
  return new Client({ connection, namespace });
}

// Runs even when TEMPORAL_ADDRESS is set: it launches and kills bin/temporal-devserver itself.
beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'engine-durability-'));
  dbFile = join(workDir, 'temporal.db');
  bundleFile = join(workDir, 'workflows.js');
  await writeFile(bundleFile, (await workflowBundle()).code);
  port = await freePort();
});

afterAll(async () => {
  for (const connection of connections) await connection.close().catch(() => undefined);
  for (const child of children) await child.kill9().catch(() => undefined);
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

describe('kill -9 and restart on the same --db-filename', () => {
  it('keeps every workflow: pending timers and activities fire, signals after the restart arrive', async () => {
    const workflowQueue = uniqueId('durable-wf');
    const earlyActivityQueue = uniqueId('durable-act-early'); // polled before the kill
    const lateActivityQueue = uniqueId('durable-act-late'); // only polled after the restart

    const server1 = startServer();
    let client = await connectClient(server1);
    const worker1 = startWorker(workflowQueue, [earlyActivityQueue]);
    await worker1.waitForOutput(/^ready$/m, 'the first worker to poll');

    const done = await client.workflow.start(returnValue<string>, {
      taskQueue: workflowQueue,
      workflowId: uniqueId('durable-done'),
      args: ['done before the kill'],
    });
    expect(await bounded(done.result(), 20_000, 'the completed workflow')).toBe('done before the kill');

    const pendingTimer = await client.workflow.start(durableSteps, {
      taskQueue: workflowQueue,
      workflowId: uniqueId('durable-timer'),
      // Long enough to still be pending at the kill even on a loaded machine.
      args: [15_000, lateActivityQueue],
    });
    const pendingActivity = await client.workflow.start(durableSteps, {
      taskQueue: workflowQueue,
      workflowId: uniqueId('durable-activity'),
      args: [10, lateActivityQueue],
    });
    const runningActivity = await client.workflow.start(activityAcrossRestart, {
      taskQueue: workflowQueue,
      workflowId: uniqueId('durable-running-activity'),
      args: [earlyActivityQueue],
    });
    const waitingForSignal = await client.workflow.start(signalCollector, {
      taskQueue: workflowQueue,
      workflowId: uniqueId('durable-signal'),
    });
    await waitingForSignal.signal(pushSignal, 'before the kill');
    const updated = await client.workflow.start(updatable, { taskQueue: workflowQueue, workflowId: uniqueId('durable-update') });
    expect(await bounded(updated.executeUpdate(incrementUpdate, { args: [2], updateId: 'before-kill' }), 20_000, 'update')).toBe(
      2,
    );

    // Everything is mid-flight: the timer is pending, an activity is scheduled on an unpolled queue,
    // attempt 1 of another runs on worker1, and the signal was processed.
    await worker1.waitForOutput(new RegExp(`^activity-started ${runningActivity.workflowId} 1$`, 'm'), 'attempt 1 to start');
    expect(await bounded(waitingForSignal.query(itemsQuery), 20_000, 'query before the kill')).toEqual(['before the kill']);
    await eventually(async () => {
      const history = await pendingActivity.fetchHistory();
      return history.events?.some((e) => e.activityTaskScheduledEventAttributes) ? true : undefined;
    }, 'the activity on the unpolled queue to be scheduled');

    const timerHistory = await pendingTimer.fetchHistory();
    expect(timerHistory.events?.some((e) => e.timerStartedEventAttributes)).toBe(true);
    expect(timerHistory.events?.some((e) => e.timerFiredEventAttributes)).toBe(false);

    await server1.kill9();
    await worker1.kill9();
    expect(server1.process.signalCode).toBe('SIGKILL');

    const server2 = startServer();
    client = await connectClient(server2);
    startWorker(workflowQueue, [earlyActivityQueue, lateActivityQueue]);

    // Signals sent after the restart arrive.
    await client.workflow.getHandle(waitingForSignal.workflowId).signal(pushSignal, 'after the restart');
    await client.workflow.getHandle(waitingForSignal.workflowId).signal(finishSignal);
    for (const handle of [pendingTimer, pendingActivity]) {
      await client.workflow.getHandle(handle.workflowId).signal(releaseSignal);
    }

    const afterRestart = (id: string) => client.workflow.getHandle(id);

    // Update outcomes survive: a repeated update id gets its first outcome, a new update sees the old state.
    const updatedAfter = client.workflow.getHandle<typeof updatable>(updated.workflowId);
    expect(
      await bounded(
        updatedAfter.executeUpdate(incrementUpdate, { args: [100], updateId: 'before-kill' }),
        30_000,
        'repeated update',
      ),
    ).toBe(2);
    expect(await bounded(updatedAfter.executeUpdate(incrementUpdate, { args: [3] }), 30_000, 'new update')).toBe(5);
    await updatedAfter.signal(finishSignal);
    expect(await bounded(updatedAfter.result(), 30_000, 'the updated workflow')).toBe(5);

    // Visibility survives too.
    expect((await client.workflow.count(`WorkflowId = '${done.workflowId}' AND ExecutionStatus = 'Completed'`)).count).toBe(1);

    expect(await afterRestart(done.workflowId).result()).toBe('done before the kill');
    expect(await bounded(afterRestart(waitingForSignal.workflowId).result(), 30_000, 'the signalled workflow')).toEqual([
      'before the kill',
      'after the restart',
    ]);
    // The activity scheduled before the kill runs on the new worker.
    expect(await bounded(afterRestart(pendingActivity.workflowId).result(), 30_000, 'the pending activity')).toEqual([
      'timer fired',
      'activity ran at attempt 1',
      'signal arrived',
    ]);
    // The timer started before the kill fires after the restart.
    expect(await bounded(afterRestart(pendingTimer.workflowId).result(), 45_000, 'the pending timer')).toEqual([
      'timer fired',
      'activity ran at attempt 1',
      'signal arrived',
    ]);
    // Attempt 1 died with its worker: its start-to-close timeout survived the restart and attempt 2 ran.
    expect(await bounded(afterRestart(runningActivity.workflowId).result(), 30_000, 'the retried activity')).toBe(2);

    // Histories written before the kill are intact after it.
    const history = await afterRestart(pendingTimer.workflowId).fetchHistory();
    const ids = (history.events ?? []).map((e) => Number(e.eventId));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
  }, 120_000);
});

describe('kill -9 and restart: what the server itself was told', () => {
  it('remembers namespaces registered (with their retention) and search attributes added at run time', async () => {
    const file = join(workDir, 'namespaces.db');
    const serverPort = await freePort();
    const namespace = uniqueId('ns');
    const workflowId = uniqueId('in-ns');

    const server1 = startServer(file, serverPort);
    const before = await connectClient(server1, serverPort);
    await before.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('3 days'),
    });
    await before.connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: { PaygateOrderNo: proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD },
    });
    await new Client({ connection: before.connection, namespace }).workflow.start(signalCollector, {
      taskQueue: uniqueId('in-ns'),
      workflowId,
    });
    await server1.kill9();

    const server2 = startServer(file, serverPort);
    const after = await connectClient(server2, serverPort, namespace);
    const described = await after.connection.workflowService.describeNamespace({ namespace });
    expect(described.namespaceInfo?.name).toBe(namespace);
    expect(Number(described.config?.workflowExecutionRetentionTtl?.seconds)).toBe(3 * 86_400);
    const attributes = await after.connection.operatorService.listSearchAttributes({ namespace });
    expect(attributes.customAttributes?.PaygateOrderNo).toBe(
      proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    );
    expect((await after.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');
    await server2.kill9();
  }, 60_000);
});

describe('TestWorkflowEnvironment.createLocal({ dbFilename })', () => {
  it('reopens the file of a torn-down environment with its running workflow and buffered signal', async () => {
    const file = join(workDir, 'sdk-launched.db');
    const launch = () =>
      TestWorkflowEnvironment.createLocal({
        server: { executable: { type: 'existing-path', path: DEVSERVER_PATH }, dbFilename: file, ip: '127.0.0.1' },
      });
    const taskQueue = uniqueId('reopened');
    const workflowId = uniqueId('reopened');

    const first = await launch();
    try {
      const handle = await first.client.workflow.start(signalCollector, { taskQueue, workflowId });
      await handle.signal(pushSignal, 'before teardown');
    } finally {
      await first.teardown();
    }

    const second = await launch();
    try {
      const handle = second.client.workflow.getHandle(workflowId);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      await handle.signal(pushSignal, 'after reopening');
      await handle.signal(finishSignal);
      await withWorker(second, { activities: createActivities(), taskQueue }, async () => {
        expect(await handle.result()).toEqual(['before teardown', 'after reopening']);
      });
    } finally {
      await second.teardown();
    }
  });
});

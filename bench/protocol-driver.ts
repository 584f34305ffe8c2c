/**
 * Protocol-level load driver: runs the benchmark workload (bench/workflows.ts `activityAndTimer` — one
 * activity, then one timer) by speaking WorkflowService directly, without the SDK worker and its workflow
 * sandbox. The figures it produces are the server's own capacity; the driver's CPU is kept small (no
 * logging, no RPC beyond what the workload needs, commands and payloads built once).
 *
 * Client side: start each workflow, then long-poll its close event (GetWorkflowExecutionHistory with
 * waitNewEvent + CLOSE_EVENT filter, as `handle.result()` does). Worker side: workflow-task pollers decide
 * from the task's history (TimerFired → complete "bench"; ActivityTaskCompleted → start the timer; nothing
 * yet → schedule the activity with eager execution) and complete the activities the server hands back in
 * the completion response at once; a few activity pollers pick up any activity not dispatched eagerly.
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowService } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import type { google, temporal } from '@temporalio/proto';

const { temporal: T } = proto;
const EventType = T.api.enums.v1.EventType;
const CommandType = T.api.enums.v1.CommandType;
const NORMAL = T.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL;
const CLOSE_EVENT = T.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT;

type IPayload = temporal.api.common.v1.IPayload;
type ICommand = temporal.api.command.v1.ICommand;
type IHistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface DriverConnection {
  readonly workflowService: WorkflowService;
  withAbortSignal<R>(signal: AbortSignal, fn: () => Promise<R>): Promise<R>;
}

export interface ProtocolDriverOptions {
  /**
   * The caller connects (and closes); the driver uses `connection.workflowService`. Either a client
   * `Connection` (grpc-js) or a worker `NativeConnection` (the Core SDK's Rust client, lighter per call).
   */
  connection: DriverConnection;
  namespace: string;
  taskQueue: string;
  /** N: workflows `${taskQueue}-0` … `${taskQueue}-${N - 1}`. */
  workflows: number;
  /** The timer each workflow starts after its activity. */
  timerMs: number;
  /** Max workflows in flight (default N: all started at once). */
  concurrency?: number;
  /** Default 8. */
  workflowTaskPollers?: number;
  /** Default 2 (activities normally arrive eagerly in the completion response). */
  activityPollers?: number;
  /** Overall guard: the run rejects after this long (default 10 minutes). */
  timeoutMs?: number;
}

export interface ProtocolDriverResult {
  /** Start-to-close latency of each workflow that completed with "bench". */
  latenciesMs: number[];
  failed: number;
  /** From the first start to the last close event. */
  wallMs: number;
  firstError?: string;
}

const WORKFLOW_TYPE = 'activityAndTimer';
const ACTIVITY_TYPE = 'echo';
const POLLER_ERROR_PAUSE_MS = 100;
const DEFAULT_TIMEOUT_MS = 10 * 60_000;

function jsonPayload(value: unknown): IPayload {
  return { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(value)) };
}

/** A google.protobuf.Duration `{ seconds, nanos }` (seconds as the Long the generated types want). */
function duration(ms: number): google.protobuf.IDuration {
  return msToTs(ms);
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runProtocolDriver(o: ProtocolDriverOptions): Promise<ProtocolDriverResult> {
  const { connection, namespace, taskQueue: queueName, workflows: count, timerMs } = o;
  const concurrency = Math.max(1, Math.min(o.concurrency ?? count, count));
  const wftPollers = o.workflowTaskPollers ?? 8;
  const activityPollers = o.activityPollers ?? 2;
  const svc = connection.workflowService;
  const identity = `protocol-driver@${process.pid}`;
  const taskQueue = { name: queueName, kind: NORMAL };

  // Built once: every request reuses them (encoding does not mutate its input).
  const benchPayload = jsonPayload('bench');
  const startInput = { payloads: [jsonPayload(timerMs)] };
  const workflowTaskTimeout = duration(10_000);
  const scheduleActivity: ICommand[] = [
    {
      commandType: CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
      scheduleActivityTaskCommandAttributes: {
        activityId: '1',
        activityType: { name: ACTIVITY_TYPE },
        taskQueue,
        startToCloseTimeout: duration(20_000),
        scheduleToCloseTimeout: duration(20_000),
        input: { payloads: [benchPayload] },
        requestEagerExecution: true,
      },
    },
  ];
  const startTimer: ICommand[] = [
    {
      commandType: CommandType.COMMAND_TYPE_START_TIMER,
      startTimerCommandAttributes: { timerId: '1', startToFireTimeout: duration(timerMs) },
    },
  ];
  const complete: ICommand[] = [
    {
      commandType: CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
      completeWorkflowExecutionCommandAttributes: { result: { payloads: [benchPayload] } },
    },
  ];
  const noCommands: ICommand[] = [];

  let stopped = false;
  let firstError: string | undefined;
  const record = (err: unknown): void => {
    firstError ??= errorText(err);
  };

  // Every long poll gets its own AbortController (the connection adds an abort listener per call and never
  // removes it, so one shared signal would collect a listener per poll); stopping aborts those in flight.
  const inFlight = new Set<AbortController>();
  const abortable = async <R>(call: () => Promise<R>): Promise<R> => {
    const ctrl = new AbortController();
    inFlight.add(ctrl);
    try {
      return await connection.withAbortSignal(ctrl.signal, call);
    } finally {
      inFlight.delete(ctrl);
    }
  };
  const stop = (): void => {
    stopped = true;
    for (const ctrl of inFlight) ctrl.abort();
    inFlight.clear();
  };

  // ------------------------------------------------------------------ worker side

  const completeActivity = (task: temporal.api.workflowservice.v1.IPollActivityTaskQueueResponse): Promise<unknown> =>
    svc.respondActivityTaskCompleted({ namespace, taskToken: task.taskToken, result: task.input, identity });

  interface Seen {
    activityScheduled: boolean;
    activityCompleted: boolean;
    timerStarted: boolean;
    timerFired: boolean;
  }
  const scan = (events: IHistoryEvent[], seen: Seen): void => {
    for (const e of events) {
      switch (e.eventType) {
        case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
          seen.activityScheduled = true;
          break;
        case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
          seen.activityCompleted = true;
          break;
        case EventType.EVENT_TYPE_TIMER_STARTED:
          seen.timerStarted = true;
          break;
        case EventType.EVENT_TYPE_TIMER_FIRED:
          seen.timerFired = true;
          break;
      }
    }
  };
  /**
   * What `activityAndTimer` does next. A pending activity or timer means a retried task (e.g. after a
   * workflow-task timeout): like the SDK, answer without commands rather than issue it twice.
   */
  const decide = (seen: Seen): ICommand[] => {
    if (seen.timerFired) return complete;
    if (seen.timerStarted) return noCommands;
    if (seen.activityCompleted) return startTimer;
    if (seen.activityScheduled) return noCommands;
    return scheduleActivity;
  };

  const workflowTaskPoller = async (): Promise<void> => {
    while (!stopped) {
      try {
        const task = await abortable(() => svc.pollWorkflowTaskQueue({ namespace, taskQueue, identity }));
        if (stopped) return;
        if (!task.taskToken || task.taskToken.length === 0) continue;
        const seen: Seen = { activityScheduled: false, activityCompleted: false, timerStarted: false, timerFired: false };
        scan(task.history?.events ?? [], seen);
        let pageToken = task.nextPageToken;
        while (pageToken && pageToken.length > 0) {
          const page = await svc.getWorkflowExecutionHistory({
            namespace,
            execution: task.workflowExecution,
            nextPageToken: pageToken,
          });
          scan(page.history?.events ?? [], seen);
          pageToken = page.nextPageToken;
        }
        const commands = decide(seen);
        const done = await svc.respondWorkflowTaskCompleted({ namespace, taskToken: task.taskToken, commands, identity });
        for (const activity of done.activityTasks ?? []) {
          // Not awaited: like the SDK, the eager activity runs beside the next workflow task.
          completeActivity(activity).catch((err: unknown) => {
            if (!stopped) record(err);
          });
        }
      } catch (err) {
        if (stopped) return;
        record(err);
        await sleep(POLLER_ERROR_PAUSE_MS);
      }
    }
  };

  const activityPoller = async (): Promise<void> => {
    while (!stopped) {
      try {
        const task = await abortable(() => svc.pollActivityTaskQueue({ namespace, taskQueue, identity }));
        if (stopped) return;
        if (!task.taskToken || task.taskToken.length === 0) continue;
        await completeActivity(task);
      } catch (err) {
        if (stopped) return;
        record(err);
        await sleep(POLLER_ERROR_PAUSE_MS);
      }
    }
  };

  // ------------------------------------------------------------------ client side

  const latenciesMs: number[] = [];
  let failed = 0;

  const runWorkflow = async (i: number): Promise<void> => {
    const workflowId = `${queueName}-${i}`;
    const startedAt = performance.now();
    try {
      const { runId } = await svc.startWorkflowExecution({
        namespace,
        workflowId,
        workflowType: { name: WORKFLOW_TYPE },
        taskQueue,
        input: startInput,
        workflowTaskTimeout,
        identity,
        requestId: randomUUID(),
      });
      const execution = { workflowId, runId };
      let close: IHistoryEvent | undefined;
      while (close === undefined) {
        if (stopped) throw new Error('driver stopped');
        const res = await abortable(() =>
          svc.getWorkflowExecutionHistory({
            namespace,
            execution,
            waitNewEvent: true,
            historyEventFilterType: CLOSE_EVENT,
          }),
        );
        close = res.history?.events?.[0] ?? undefined;
      }
      if (close.eventType !== EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED) {
        throw new Error(`${workflowId} closed with ${EventType[close.eventType ?? 0] ?? close.eventType}`);
      }
      const data = close.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]?.data;
      const result = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as unknown) : undefined;
      if (result !== 'bench') throw new Error(`${workflowId} completed with ${JSON.stringify(result)}`);
      latenciesMs.push(performance.now() - startedAt);
    } catch (err) {
      failed += 1;
      record(err);
    }
  };

  const pollers = [
    ...Array.from({ length: wftPollers }, workflowTaskPoller),
    ...Array.from({ length: activityPollers }, activityPoller),
  ];

  const firstStart = performance.now();
  let next = 0;
  const clients = Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) await runWorkflow(i);
    }),
  );

  const timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let guard: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    guard = setTimeout(() => {
      stop();
      reject(
        new Error(
          `protocol driver: ${count} workflows did not finish within ${timeoutMs} ms (${latenciesMs.length} completed, ${failed} failed${firstError ? `; first error: ${firstError}` : ''})`,
        ),
      );
    }, timeoutMs);
  });
  try {
    await Promise.race([clients, timedOut]);
  } finally {
    clearTimeout(guard);
  }
  const wallMs = performance.now() - firstStart;
  stop();
  await Promise.all(pollers);
  return firstError === undefined ? { latenciesMs, failed, wallMs } : { latenciesMs, failed, wallMs, firstError };
}

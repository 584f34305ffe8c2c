// The workflow execution state machine: runs, history, workflow/activity tasks, timers, signals, queries,
// updates, children and visibility. Every RPC handler mutates executions synchronously and then awaits
// `commit()`, which journals the changed runs (when durable) before the caller gets its answer.
import { randomUUID } from 'node:crypto';
import type { Clock } from './clock.js';
import {
  CALL_WAIT_MS,
  EngineCore,
  SERVER_RECORD_KEY,
  type EngineOptions,
  type ServerRecord,
  type OnCancel,
} from './core.js';
import { Code, RpcError, invalid, notFound } from './errors.js';
import { log } from './log.js';
import {
  CommandType,
  EventType,
  RetryState,
  Status,
  TimeoutType,
  decodePlain,
  durationMs,
  enums,
  msDuration,
  msTs,
  num,
  pb,
  type temporal,
  type Command,
  type Failure,
  type HistoryEvent,
  type Message,
  type Payloads,
  type Plain,
  type Req,
  type RetryPolicy,
  type SearchAttributes,
} from './proto.js';
import {
  execKey,
  type ActivityState,
  type Execution,
  type ExecutionState,
  type UpdateState,
} from './state.js';
import { nextRetry, retrySpec } from './retry.js';
import { decodeToken } from './tokens.js';
import {
  activityTimedOut,
  closeActivity,
  dispatchActivity,
  pollActivityTaskQueue,
  recordActivityTaskHeartbeat,
  recordActivityTaskHeartbeatById,
  respondActivityTaskCanceled,
  respondActivityTaskCanceledById,
  respondActivityTaskCompleted,
  respondActivityTaskCompletedById,
  respondActivityTaskFailed,
  respondActivityTaskFailedById,
  retryActivity,
  scheduleActivity,
  startActivity,
} from './activity-tasks.js';
import { getWorkflowExecutionHistory, getWorkflowExecutionHistoryReverse } from './history.js';
import { answerAttachedQueries, dispatchPendingQueries, queryWorkflow, respondQueryTaskCompleted } from './queries.js';
import {
  addExternal,
  applySticky,
  dispatchWorkflowTask,
  pollWorkflowTaskQueue,
  resetStickyTaskQueue,
  respondWorkflowTaskFailed,
  retryWorkflowTask,
  scheduleIfPendingUpdates,
  scheduleWorkflowTask,
  shutdownWorker,
  startedWorkflowTask,
  workflowTaskDone,
  workflowTaskTimedOut,
} from './workflow-tasks.js';


const DEFAULT_WFT_TIMEOUT_MS = 10_000;

export type { EngineOptions } from './core.js';

export class Engine {
  readonly clock: Clock;
  private readonly core: EngineCore;

  constructor(opts: EngineOptions) {
    this.core = new EngineCore(opts, (core, ex, name) => this.onDeadline(ex, name));
    this.clock = this.core.clock;
  }

  /** The namespace of a request (default when empty); NOT_FOUND for unknown ones. */
  ns(namespace: string | null | undefined): string {
    return this.core.ns(namespace);
  }

  /** Journals every changed run; resolves once durable. */
  commit(): Promise<void> {
    return this.core.commit();
  }

  // ---------------------------------------------------------------- persistence

  /**
   * Rebuilds runs from the journal and re-arms every deadline and task (time that passed while down fires now).
   * Returns how many executions it restored.
   */
  restore(restored: Map<string, { state: unknown; events: unknown[] }>): number {
    const server = restored.get(SERVER_RECORD_KEY)?.state as ServerRecord | undefined;
    for (const n of server?.namespaces ?? []) this.core.namespaces.add(n);
    for (const [n, ms] of Object.entries(server?.retentionMs ?? {})) this.core.namespaceRetentionMs.set(n, ms);
    // Types given on this start's command line win over remembered ones.
    for (const [k, v] of Object.entries(server?.searchAttributes ?? {})) if (!this.core.saTypes.has(k)) this.core.saTypes.set(k, v);
    for (const [key, r] of restored) {
      if (key === SERVER_RECORD_KEY) continue;
      const s = r.state as ExecutionState;
      const ex: Execution = { s, history: r.events as HistoryEvent[], persistedLength: r.events.length };
      // Event task ids keep increasing across restarts.
      for (const e of ex.history) this.core.taskId = Math.max(this.core.taskId, num(e.taskId) + 1);
      this.core.runs.set(key, ex);
      this.core.indexRun(ex);
    }
    for (const ex of this.core.runs.values()) {
      const s = ex.s;
      if (s.status !== Status.WORKFLOW_EXECUTION_STATUS_RUNNING) continue;
      // Sticky workers did not survive the restart with us; their tasks go to the normal queue.
      s.sticky = null;
      if (s.wft.phase === 'started') {
        workflowTaskTimedOut(this.core, ex, TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE);
      } else if (s.wft.phase === 'scheduled') {
        s.wft.queue = s.taskQueue;
        s.wft.sticky = false;
        dispatchWorkflowTask(this.core, ex);
      }
      for (const a of Object.values(s.activities)) {
        if (a.phase === 'scheduled') dispatchActivity(this.core, ex, a);
        if (a.phase !== 'backoff') this.core.clock.setOutstanding(this.core.actKey(ex, a), true);
      }
      for (const [name, at] of Object.entries(s.deadlines)) this.core.armDeadline(ex, name, at);
      this.core.markDirty(ex);
    }
    this.core.markServerDirty();
    return this.core.runs.size;
  }

  /** Forgets executions closed longer ago than their namespace's retention period, as the server's retention does. */
  sweepClosed(): void {
    const now = this.core.clock.now();
    for (const [key, ex] of this.core.runs) {
      if (this.core.isOpen(ex) || ex.s.closeTime > now - this.core.retentionOf(ex.s.namespace)) continue;
      this.core.runs.delete(key);
      this.core.dirty.delete(ex);
      this.core.waiters.delete(key);
      const idKey = `${ex.s.namespace}/${ex.s.workflowId}`;
      const remaining = (this.core.byWorkflowId.get(idKey) ?? []).filter((k) => k !== key);
      if (remaining.length > 0) this.core.byWorkflowId.set(idKey, remaining);
      else this.core.byWorkflowId.delete(idKey);
      this.core.journal?.append({ key, base: 0, events: [], state: null, deleted: true });
    }
    void this.core.commit();
  }

  close(): void {
    this.core.clock.stop();
    for (const t of this.core.stickyTimers.values()) clearTimeout(t);
    this.core.queues.release(() => true);
    if (this.core.journal) {
      this.core.stageDirty(this.core.journal);
      this.core.journal.close();
    }
  }

  // ---------------------------------------------------------------- lookup helpers

  // ---------------------------------------------------------------- waiting callers

  // ---------------------------------------------------------------- deadlines

  private onDeadline(ex: Execution, name: string): void {
    if (!this.core.isOpen(ex)) return;
    const [kind, id, sub] = name.split(':');
    switch (kind) {
      case 'timer': {
        const t = ex.s.timers[id!];
        if (!t) return;
        delete ex.s.timers[id!];
        addExternal(this.core, ex, [
          this.core.event(ex, EventType.EVENT_TYPE_TIMER_FIRED, 'timerFiredEventAttributes', {
            timerId: id,
            startedEventId: t.startedEventId,
          }),
        ]);
        break;
      }
      case 'wft':
        if (ex.s.wft.phase === 'started') workflowTaskTimedOut(this.core, ex, TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE);
        break;
      case 'wftretry':
        scheduleWorkflowTask(this.core, ex);
        break;
      case 'act': {
        const a = ex.s.activities[id!];
        if (!a) return;
        if (sub === 'retry') retryActivity(this.core, ex, a);
        else activityTimedOut(this.core, ex, a, sub!);
        break;
      }
      case 'run':
      case 'execution':
        this.timeOutWorkflow(ex, kind === 'run');
        break;
      case 'backoff':
        scheduleWorkflowTask(this.core, ex);
        break;
      default:
        log.warn('unknown deadline', { name });
    }
    this.core.markDirty(ex);
  }

  // ---------------------------------------------------------------- history

  // ---------------------------------------------------------------- start

  private newRun(
    namespace: string,
    p: {
      workflowId: string;
      workflowType: string;
      taskQueue: string;
      input: Payloads | null | undefined;
      header: Plain<temporal.api.common.v1.IHeader> | null | undefined;
      executionTimeoutMs: number;
      runTimeoutMs: number;
      workflowTaskTimeoutMs: number;
      identity: string;
      requestId: string;
      memo: Plain<temporal.api.common.v1.IMemo> | null | undefined;
      searchAttributes: SearchAttributes | null | undefined;
      retryPolicy: RetryPolicy | null | undefined;
      parent: ExecutionState['parent'];
      firstRunId?: string;
      continuedRunId?: string;
      initiator?: number;
      lastCompletionResult?: Payloads | null;
      continuedFailure?: Failure | null;
      attempt?: number;
      startDelayMs?: number;
      executionExpirationTime?: number;
      userMetadata?: Plain<temporal.api.sdk.v1.IUserMetadata> | null;
      rootExecution?: Plain<temporal.api.common.v1.IWorkflowExecution> | null;
    },
    signal?: { name: string; input: Payloads | null | undefined; header: Plain<temporal.api.common.v1.IHeader> | null | undefined; identity: string },
  ): Execution {
    const now = this.core.clock.now();
    const runId = randomUUID();
    const runTimeoutMs = p.runTimeoutMs || p.executionTimeoutMs;
    const expiration = p.executionExpirationTime ?? (p.executionTimeoutMs ? now + p.executionTimeoutMs : 0);
    const wftTimeout = Math.min(p.workflowTaskTimeoutMs || DEFAULT_WFT_TIMEOUT_MS, 120_000);
    const s: ExecutionState = {
      namespace,
      workflowId: p.workflowId,
      runId,
      firstRunId: p.firstRunId ?? runId,
      workflowType: p.workflowType,
      taskQueue: p.taskQueue,
      status: Status.WORKFLOW_EXECUTION_STATUS_RUNNING,
      startTime: now,
      executionTime: now + (p.startDelayMs ?? 0),
      closeTime: 0,
      workflowTaskTimeoutMs: wftTimeout,
      runTimeoutMs,
      executionTimeoutMs: p.executionTimeoutMs,
      executionExpirationTime: expiration,
      memo: p.memo ?? null,
      searchAttributes: this.core.typedSearchAttributes(p.searchAttributes),
      parent: p.parent,
      retryPolicy: p.retryPolicy ?? null,
      attempt: p.attempt ?? 1,
      requestIds: p.requestId ? [p.requestId] : [],
      signalRequestIds: [],
      wft: {
        phase: 'none',
        scheduledEventId: 0,
        startedEventId: 0,
        attempt: 1,
        queue: p.taskQueue,
        sticky: false,
        scheduledTime: 0,
        startedTime: 0,
        speculativeFrom: null,
      },
      lastCompletedStartedEventId: 0,
      lastWftCompletedEventId: 0,
      sticky: null,
      buffered: [],
      activities: {},
      timers: {},
      children: {},
      updates: {},
      deadlines: {},
      cancelRequested: false,
      continuedAsNewRunId: '',
      stateTransitions: 0,
    };
    const ex: Execution = { s, history: [], persistedLength: 0 };
    const started = this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 'workflowExecutionStartedEventAttributes', {
      workflowType: { name: p.workflowType },
      taskQueue: { name: p.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      input: p.input,
      header: p.header,
      workflowExecutionTimeout: p.executionTimeoutMs ? msDuration(p.executionTimeoutMs) : undefined,
      workflowRunTimeout: runTimeoutMs ? msDuration(runTimeoutMs) : undefined,
      workflowTaskTimeout: msDuration(wftTimeout),
      identity: p.identity,
      originalExecutionRunId: runId,
      firstExecutionRunId: s.firstRunId,
      continuedExecutionRunId: p.continuedRunId,
      initiator: p.initiator,
      lastCompletionResult: p.lastCompletionResult,
      continuedFailure: p.continuedFailure,
      attempt: s.attempt,
      retryPolicy: p.retryPolicy,
      workflowExecutionExpirationTime: expiration ? msTs(expiration) : undefined,
      firstWorkflowTaskBackoff: p.startDelayMs ? msDuration(p.startDelayMs) : undefined,
      memo: p.memo,
      searchAttributes: s.searchAttributes,
      workflowId: p.workflowId,
      parentWorkflowNamespace: p.parent?.namespace,
      parentWorkflowExecution: p.parent ? { workflowId: p.parent.workflowId, runId: p.parent.runId } : undefined,
      parentInitiatedEventId: p.parent?.initiatedEventId,
      rootWorkflowExecution: p.rootExecution ?? { workflowId: p.workflowId, runId },
    });
    if (p.userMetadata) started.userMetadata = p.userMetadata;
    this.core.appendNow(ex, started);
    if (signal) {
      this.core.appendNow(
        ex,
        this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'workflowExecutionSignaledEventAttributes', {
          signalName: signal.name,
          input: signal.input,
          identity: signal.identity,
          header: signal.header,
        }),
      );
    }
    const key = execKey(namespace, runId);
    this.core.runs.set(key, ex);
    this.core.indexRun(ex);
    if (runTimeoutMs) this.core.setDeadline(ex, 'run', now + runTimeoutMs);
    if (expiration) this.core.setDeadline(ex, 'execution', expiration);
    if (p.startDelayMs) this.core.setDeadline(ex, 'backoff', now + p.startDelayMs);
    else scheduleWorkflowTask(this.core, ex);
    this.core.markDirty(ex);
    return ex;
  }

  private startRequestParams(namespace: string, r: Req<'StartWorkflowExecutionRequest'>) {
    if (!r.workflowId) throw invalid('WorkflowId is not set on request.');
    if (!r.workflowType?.name) throw invalid('WorkflowType is not set on request.');
    if (!r.taskQueue?.name) throw invalid('TaskQueue is not set on request.');
    return {
      workflowId: r.workflowId,
      workflowType: r.workflowType.name,
      taskQueue: r.taskQueue.name,
      input: r.input,
      header: r.header,
      executionTimeoutMs: durationMs(r.workflowExecutionTimeout),
      runTimeoutMs: durationMs(r.workflowRunTimeout),
      workflowTaskTimeoutMs: durationMs(r.workflowTaskTimeout),
      identity: r.identity ?? '',
      requestId: r.requestId ?? '',
      memo: r.memo,
      searchAttributes: r.searchAttributes,
      retryPolicy: r.retryPolicy,
      parent: null,
      startDelayMs: durationMs(r.workflowStartDelay),
      userMetadata: r.userMetadata,
      lastCompletionResult: r.lastCompletionResult,
      continuedFailure: r.continuedFailure,
    };
  }

  /** Applies request-id dedupe and the id reuse/conflict policies; returns an existing run to answer with, if any. */
  private admitStart(
    namespace: string,
    workflowId: string,
    requestId: string,
    reuse: number,
    conflict: number,
    identity: string,
  ): { existing?: Execution; deduped?: boolean } {
    const prev = this.core.latestRun(namespace, workflowId);
    if (!prev) return {};
    if (requestId && prev.s.requestIds.includes(requestId)) return { existing: prev, deduped: true };
    if (this.core.isOpen(prev)) {
      const P = enums.WorkflowIdConflictPolicy;
      if (conflict === P.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING) return { existing: prev };
      if (
        conflict === P.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING ||
        reuse === enums.WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_TERMINATE_IF_RUNNING
      ) {
        this.terminate(prev, 'terminated by a new start with the same workflow id', null, identity);
        return {};
      }
      throw new RpcError(Code.ALREADY_EXISTS, `Workflow execution is already running. WorkflowId: ${workflowId}, RunId: ${prev.s.runId}.`);
    }
    const R = enums.WorkflowIdReusePolicy;
    if (reuse === R.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE) {
      throw new RpcError(Code.ALREADY_EXISTS, `Workflow execution already finished and the reuse policy rejects duplicates. WorkflowId: ${workflowId}.`);
    }
    if (reuse === R.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY) {
      const s = prev.s.status;
      if (s === Status.WORKFLOW_EXECUTION_STATUS_COMPLETED || s === Status.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW) {
        throw new RpcError(Code.ALREADY_EXISTS, `Workflow execution already completed successfully. WorkflowId: ${workflowId}.`);
      }
    }
    return {};
  }

  async StartWorkflowExecution(r: Req<'StartWorkflowExecutionRequest'>): Promise<Req<'StartWorkflowExecutionResponse'>> {
    const namespace = this.core.ns(r.namespace);
    const params = this.startRequestParams(namespace, r);
    const { existing, deduped } = this.admitStart(
      namespace,
      params.workflowId,
      params.requestId,
      r.workflowIdReusePolicy ?? 0,
      r.workflowIdConflictPolicy ?? 0,
      params.identity,
    );
    if (existing) {
      if (!deduped && r.onConflictOptions?.attachRequestId && params.requestId) existing.s.requestIds.push(params.requestId);
      await this.core.commit();
      return { runId: existing.s.runId, started: !!deduped, status: existing.s.status };
    }
    const ex = this.newRun(namespace, params);
    await this.core.commit();
    return { runId: ex.s.runId, started: true, status: ex.s.status };
  }

  async SignalWithStartWorkflowExecution(
    r: Req<'SignalWithStartWorkflowExecutionRequest'>,
  ): Promise<Req<'SignalWithStartWorkflowExecutionResponse'>> {
    const namespace = this.core.ns(r.namespace);
    if (!r.signalName) throw invalid('SignalName is not set on request.');
    const params = this.startRequestParams(namespace, r);
    const prev = this.core.latestRun(namespace, params.workflowId);
    const conflict = r.workflowIdConflictPolicy || enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING;
    if (prev && this.core.isOpen(prev) && conflict === enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING) {
      this.signal(prev, r.signalName, r.signalInput, r.header, r.identity ?? '', null);
      await this.core.commit();
      return { runId: prev.s.runId, started: false };
    }
    this.admitStart(namespace, params.workflowId, '', r.workflowIdReusePolicy ?? 0, conflict, params.identity);
    const ex = this.newRun(namespace, params, {
      name: r.signalName,
      input: r.signalInput,
      header: r.header,
      identity: r.identity ?? '',
    });
    await this.core.commit();
    return { runId: ex.s.runId, started: true };
  }

  // ---------------------------------------------------------------- workflow tasks

  async RespondWorkflowTaskCompleted(
    r: Req<'RespondWorkflowTaskCompletedRequest'>,
  ): Promise<Req<'RespondWorkflowTaskCompletedResponse'>> {
    const ex = startedWorkflowTask(this.core, decodeToken(r.taskToken));
    const s = ex.s;
    answerAttachedQueries(this.core, ex, r.queryResults ?? {});
    const commands = r.commands ?? [];
    if (log.debugEnabled) log.debug('workflow task completed', {
      commands: commands.map((c) => c.commandType),
      messages: (r.messages ?? []).map((m) => m.body?.type_url),
      sticky: r.stickyAttributes?.workerTaskQueue?.name,
    });
    const messages = new Map((r.messages ?? []).map((m) => [m.id ?? '', m]));
    const bad = this.invalidCommand(ex, commands);
    if (bad) {
      // As the server does: the task fails with the cause, nothing of it is applied, and the caller hears why.
      this.core.appendNow(
        ex,
        this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
          scheduledEventId: s.wft.scheduledEventId,
          startedEventId: s.wft.startedEventId,
          cause: bad.cause,
          failure: { message: bad.message, source: 'Server' },
          identity: r.identity,
        }),
      );
      retryWorkflowTask(this.core, ex);
      await this.core.commit();
      throw invalid(bad.message);
    }
    const closing = commands.find((c) => this.isClosingCommand(c.commandType ?? 0));
    // A run cannot close over events it has not seen yet: make the workflow look at them first.
    const hasNewWork =
      s.buffered.length > 0 || Object.values(s.updates).some((u) => u.phase === 'admitted');
    if (closing && hasNewWork) {
      this.core.appendNow(
        ex,
        this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
          scheduledEventId: s.wft.scheduledEventId,
          startedEventId: s.wft.startedEventId,
          cause: enums.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
          identity: r.identity,
        }),
      );
      workflowTaskDone(this.core, ex);
      s.wft.speculativeFrom = null;
      s.sticky = null;
      this.core.flushBuffered(ex);
      scheduleWorkflowTask(this.core, ex);
      await this.core.commit();
      return {};
    }

    const onlyRejections =
      commands.length === 0 &&
      [...messages.values()].every((m) => (m.body?.type_url ?? '').endsWith('update.v1.Rejection'));
    if (s.wft.speculativeFrom !== null && onlyRejections && s.buffered.length === 0) {
      // A task that only delivered updates the workflow rejected leaves no trace in history.
      for (const m of messages.values()) this.processMessage(ex, m, 0);
      ex.history.length = s.wft.speculativeFrom;
      workflowTaskDone(this.core, ex);
      s.wft.speculativeFrom = null;
      applySticky(ex, r);
      scheduleIfPendingUpdates(this.core, ex);
      dispatchPendingQueries(this.core, ex);
      this.core.notify(ex);
      this.core.markDirty(ex);
      await this.core.commit();
      // Tells the worker to forget the discarded task's events (it resets its last started event id).
      return { resetHistoryEventId: s.lastCompletedStartedEventId };
    }

    const completed = this.core.appendNow(
      ex,
      this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 'workflowTaskCompletedEventAttributes', {
        scheduledEventId: s.wft.scheduledEventId,
        startedEventId: s.wft.startedEventId,
        identity: r.identity,
        binaryChecksum: r.binaryChecksum,
        sdkMetadata: r.sdkMetadata,
        meteringMetadata: r.meteringMetadata,
        workerVersion: r.workerVersionStamp,
      }),
    );
    const completedId = num(completed.eventId);
    s.lastCompletedStartedEventId = s.wft.startedEventId;
    s.lastWftCompletedEventId = completedId;
    s.wft.attempt = 1;
    s.wft.speculativeFrom = null;
    workflowTaskDone(this.core, ex);
    applySticky(ex, r);

    const after: Array<() => void> = [];
    const eager: ActivityState[] = [];
    let wake = false;
    for (const c of commands) {
      if (!this.core.isOpen(ex)) break;
      if (c.commandType === CommandType.COMMAND_TYPE_PROTOCOL_MESSAGE) {
        const id = c.protocolMessageCommandAttributes?.messageId ?? '';
        const m = messages.get(id);
        if (m) {
          messages.delete(id);
          this.processMessage(ex, m, completedId);
        }
        continue;
      }
      wake = this.applyCommand(ex, c, completedId, after, eager) || wake;
    }
    for (const m of messages.values()) this.processMessage(ex, m, completedId);
    if (this.core.isOpen(ex)) {
      if (this.core.flushBuffered(ex)) wake = true;
      for (const f of after) f();
      if (wake || r.forceCreateNewWorkflowTask) scheduleWorkflowTask(this.core, ex);
      scheduleIfPendingUpdates(this.core, ex);
    }
    const activityTasks = [];
    for (const a of eager) {
      if (this.core.isOpen(ex) && s.activities[a.scheduledEventId] === a && a.phase === 'scheduled') {
        activityTasks.push(startActivity(this.core, ex, a, r.identity ?? ''));
      }
    }
    dispatchPendingQueries(this.core, ex);
    this.core.notify(ex);
    this.core.markDirty(ex);
    await this.core.commit();
    return { activityTasks };
  }

  /** Checks the attributes the server validates before applying any command of a completion. */
  private invalidCommand(ex: Execution, commands: Command[]): { cause: number; message: string } | null {
    const C = enums.WorkflowTaskFailedCause;
    const timers = new Set(Object.keys(ex.s.timers));
    const activityIds = new Set(Object.values(ex.s.activities).map((a) => a.activityId));
    for (const c of commands) {
      switch (c.commandType) {
        case CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK: {
          const a = c.scheduleActivityTaskCommandAttributes;
          const bad = (message: string) => ({ cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES, message });
          if (!a?.activityId) return bad('ActivityId is not set on command.');
          if (!a.activityType?.name) return bad('ActivityType is not set on command.');
          if (!durationMs(a.startToCloseTimeout) && !durationMs(a.scheduleToCloseTimeout) && !ex.s.runTimeoutMs) {
            return bad('A valid StartToClose or ScheduleToCloseTimeout is not set on command.');
          }
          if (activityIds.has(a.activityId)) {
            return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_SCHEDULE_ACTIVITY_DUPLICATE_ID, message: `Activity ID ${a.activityId} is already in use.` };
          }
          activityIds.add(a.activityId);
          break;
        }
        case CommandType.COMMAND_TYPE_START_TIMER: {
          const id = c.startTimerCommandAttributes?.timerId;
          if (!id) return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_TIMER_ATTRIBUTES, message: 'TimerId is not set on command.' };
          if (timers.has(id)) return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_START_TIMER_DUPLICATE_ID, message: `Timer ID ${id} is already in use.` };
          timers.add(id);
          break;
        }
        case CommandType.COMMAND_TYPE_CANCEL_TIMER: {
          const id = c.cancelTimerCommandAttributes?.timerId ?? '';
          timers.delete(id);
          break;
        }
        case CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: {
          const a = c.startChildWorkflowExecutionCommandAttributes;
          if (!a?.workflowId || !a.workflowType?.name) {
            return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_CHILD_EXECUTION_ATTRIBUTES, message: 'WorkflowId and WorkflowType are required.' };
          }
          break;
        }
        case CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION: {
          const a = c.signalExternalWorkflowExecutionCommandAttributes;
          if (!a?.execution?.workflowId || !a.signalName) {
            return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SIGNAL_WORKFLOW_EXECUTION_ATTRIBUTES, message: 'Execution and SignalName are required.' };
          }
          break;
        }
        default:
          break;
      }
    }
    return null;
  }

  private isClosingCommand(t: number): boolean {
    return (
      t === CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION ||
      t === CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION ||
      t === CommandType.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION ||
      t === CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION
    );
  }

  /** Writes the command's event(s); returns true when the workflow needs another task right away. */
  private applyCommand(
    ex: Execution,
    c: Command,
    completedId: number,
    after: Array<() => void>,
    eager: ActivityState[],
  ): boolean {
    const s = ex.s;
    const add = (type: number, field: string, attrs: object) => {
      const e = this.core.event(ex, type, field, attrs);
      if (c.userMetadata) e.userMetadata = c.userMetadata;
      return this.core.appendNow(ex, e);
    };
    switch (c.commandType) {
      case CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
        {
          const act = scheduleActivity(this.core, ex, c, completedId);
          // The worker reserved a slot for it: hand the task back with this response instead of a poll.
          if (c.scheduleActivityTaskCommandAttributes?.requestEagerExecution && act.taskQueue === ex.s.taskQueue) eager.push(act);
        }
        return false;
      case CommandType.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK: {
        const sid = num(c.requestCancelActivityTaskCommandAttributes?.scheduledEventId);
        const a = s.activities[sid];
        const e = add(EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, 'activityTaskCancelRequestedEventAttributes', {
          scheduledEventId: sid,
          workflowTaskCompletedEventId: completedId,
        });
        if (!a) return false;
        if (a.phase === 'started') {
          a.cancelRequested = true;
          a.cancelRequestedEventId = num(e.eventId);
          return false;
        }
        const cancelRequestedId = num(e.eventId);
        closeActivity(this.core, ex, a);
        after.push(() =>
          addExternal(this.core, ex, [
            this.core.event(ex, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED, 'activityTaskCanceledEventAttributes', {
              scheduledEventId: sid,
              startedEventId: 0,
              latestCancelRequestedEventId: cancelRequestedId,
            }),
          ]),
        );
        return false;
      }
      case CommandType.COMMAND_TYPE_START_TIMER: {
        const a = c.startTimerCommandAttributes!;
        const timerId = a.timerId ?? '';
        const e = add(EventType.EVENT_TYPE_TIMER_STARTED, 'timerStartedEventAttributes', {
          timerId,
          startToFireTimeout: a.startToFireTimeout,
          workflowTaskCompletedEventId: completedId,
        });
        const fireAt = this.core.clock.now() + durationMs(a.startToFireTimeout);
        s.timers[timerId] = { startedEventId: num(e.eventId), fireAt };
        this.core.setDeadline(ex, `timer:${timerId}`, fireAt);
        return false;
      }
      case CommandType.COMMAND_TYPE_CANCEL_TIMER: {
        const timerId = c.cancelTimerCommandAttributes?.timerId ?? '';
        const t = s.timers[timerId];
        add(EventType.EVENT_TYPE_TIMER_CANCELED, 'timerCanceledEventAttributes', {
          timerId,
          startedEventId: t?.startedEventId ?? 0,
          workflowTaskCompletedEventId: completedId,
        });
        delete s.timers[timerId];
        this.core.clearDeadline(ex, `timer:${timerId}`);
        return false;
      }
      case CommandType.COMMAND_TYPE_RECORD_MARKER: {
        const a = c.recordMarkerCommandAttributes!;
        add(EventType.EVENT_TYPE_MARKER_RECORDED, 'markerRecordedEventAttributes', {
          markerName: a.markerName,
          details: a.details,
          header: a.header,
          failure: a.failure,
          workflowTaskCompletedEventId: completedId,
        });
        return false;
      }
      case CommandType.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
        const sa = this.core.typedSearchAttributes(c.upsertWorkflowSearchAttributesCommandAttributes?.searchAttributes);
        add(EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, 'upsertWorkflowSearchAttributesEventAttributes', {
          searchAttributes: sa,
          workflowTaskCompletedEventId: completedId,
        });
        const fields = { ...(s.searchAttributes?.indexedFields ?? {}) };
        for (const [k, v] of Object.entries(sa?.indexedFields ?? {})) {
          // An empty value unsets the attribute.
          if (!v.data || v.data.length === 0 || Buffer.from(v.data).toString() === 'null') delete fields[k];
          else fields[k] = v;
        }
        s.searchAttributes = { indexedFields: fields };
        return false;
      }
      case CommandType.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES: {
        const memo = c.modifyWorkflowPropertiesCommandAttributes?.upsertedMemo;
        add(EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED, 'workflowPropertiesModifiedEventAttributes', {
          upsertedMemo: memo,
          workflowTaskCompletedEventId: completedId,
        });
        const fields = { ...(s.memo?.fields ?? {}) };
        for (const [k, v] of Object.entries(memo?.fields ?? {})) {
          if (!v.data || v.data.length === 0) delete fields[k];
          else fields[k] = v;
        }
        s.memo = { fields };
        return false;
      }
      case CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
        add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, 'workflowExecutionCompletedEventAttributes', {
          result: c.completeWorkflowExecutionCommandAttributes?.result,
          workflowTaskCompletedEventId: completedId,
        });
        this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_COMPLETED);
        return false;
      case CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION: {
        const failure = c.failWorkflowExecutionCommandAttributes?.failure ?? null;
        if (s.retryPolicy) {
          const spec = retrySpec(s.retryPolicy);
          const next = nextRetry(spec, s.attempt, failure, this.core.clock.now(), s.executionExpirationTime);
          if ('delay' in next) {
            // As the server does: the run fails (status FAILED) and names the run that retries it.
            const retry = this.startNextRun(ex, null, {
              initiator: enums.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_RETRY,
              failure,
              backoffMs: next.delay,
              attempt: s.attempt + 1,
            });
            add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, 'workflowExecutionFailedEventAttributes', {
              failure,
              retryState: RetryState.RETRY_STATE_IN_PROGRESS,
              workflowTaskCompletedEventId: completedId,
              newExecutionRunId: retry.s.runId,
            });
            this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_FAILED, true);
            return false;
          }
          add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, 'workflowExecutionFailedEventAttributes', {
            failure,
            retryState: next.retryState,
            workflowTaskCompletedEventId: completedId,
          });
        } else {
          add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, 'workflowExecutionFailedEventAttributes', {
            failure,
            retryState: RetryState.RETRY_STATE_RETRY_POLICY_NOT_SET,
            workflowTaskCompletedEventId: completedId,
          });
        }
        this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_FAILED);
        return false;
      }
      case CommandType.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION:
        add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, 'workflowExecutionCanceledEventAttributes', {
          details: c.cancelWorkflowExecutionCommandAttributes?.details,
          workflowTaskCompletedEventId: completedId,
        });
        this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_CANCELED);
        return false;
      case CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION:
        this.continueAsNew(ex, completedId, c.continueAsNewWorkflowExecutionCommandAttributes ?? null);
        return false;
      case CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
        this.startChild(ex, c.startChildWorkflowExecutionCommandAttributes!, completedId, add, after);
        return false;
      case CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION: {
        const a = c.signalExternalWorkflowExecutionCommandAttributes!;
        const ns = a.namespace || s.namespace;
        const e = add(EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, 'signalExternalWorkflowExecutionInitiatedEventAttributes', {
          namespace: ns,
          workflowExecution: a.execution,
          signalName: a.signalName,
          input: a.input,
          control: a.control,
          childWorkflowOnly: a.childWorkflowOnly,
          header: a.header,
          workflowTaskCompletedEventId: completedId,
        });
        const initiatedEventId = num(e.eventId);
        after.push(() => {
          let target: Execution | undefined;
          try {
            target = this.core.findOpenRun(ns, a.execution);
          } catch {
            target = undefined;
          }
          if (target) {
            this.signal(target, a.signalName ?? '', a.input, a.header, '', { workflowId: s.workflowId, runId: s.runId });
            addExternal(this.core, ex, [
              this.core.event(ex, EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, 'externalWorkflowExecutionSignaledEventAttributes', {
                initiatedEventId,
                namespace: ns,
                workflowExecution: { workflowId: target.s.workflowId, runId: a.execution?.runId ?? '' },
                control: a.control,
              }),
            ]);
          } else {
            addExternal(this.core, ex, [
              this.core.event(ex, EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, 'signalExternalWorkflowExecutionFailedEventAttributes', {
                cause: enums.SignalExternalWorkflowExecutionFailedCause.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND,
                initiatedEventId,
                namespace: ns,
                workflowExecution: a.execution,
                control: a.control,
                workflowTaskCompletedEventId: completedId,
              }),
            ]);
          }
        });
        return false;
      }
      case CommandType.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION: {
        const a = c.requestCancelExternalWorkflowExecutionCommandAttributes!;
        const ns = a.namespace || s.namespace;
        const execution = { workflowId: a.workflowId, runId: a.runId };
        const e = add(
          EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
          'requestCancelExternalWorkflowExecutionInitiatedEventAttributes',
          {
            namespace: ns,
            workflowExecution: execution,
            control: a.control,
            childWorkflowOnly: a.childWorkflowOnly,
            reason: a.reason,
            workflowTaskCompletedEventId: completedId,
          },
        );
        const initiatedEventId = num(e.eventId);
        after.push(() => {
          let target: Execution | undefined;
          try {
            target = this.core.findOpenRun(ns, execution);
          } catch {
            target = undefined;
          }
          if (target) {
            this.requestCancel(target, a.reason ?? '', '', { workflowId: s.workflowId, runId: s.runId }, initiatedEventId);
            addExternal(this.core, ex, [
              this.core.event(ex, EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED, 'externalWorkflowExecutionCancelRequestedEventAttributes', {
                initiatedEventId,
                namespace: ns,
                workflowExecution: execution,
              }),
            ]);
          } else {
            addExternal(this.core, ex, [
              this.core.event(ex, EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, 'requestCancelExternalWorkflowExecutionFailedEventAttributes', {
                cause: enums.CancelExternalWorkflowExecutionFailedCause.CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND,
                initiatedEventId,
                namespace: ns,
                workflowExecution: execution,
                control: a.control,
                workflowTaskCompletedEventId: completedId,
              }),
            ]);
          }
        });
        return false;
      }
      default:
        log.warn('unsupported command ignored', { commandType: c.commandType });
        return false;
    }
  }

  /** Starts the run that continues this one (continue-as-new or a retry): same id, parent and first run. */
  private startNextRun(
    ex: Execution,
    a: Plain<temporal.api.command.v1.IContinueAsNewWorkflowExecutionCommandAttributes> | null,
    how: { initiator: number; failure: Failure | null; backoffMs: number; attempt: number },
  ): Execution {
    const s = ex.s;
    const first = ex.history[0]?.workflowExecutionStartedEventAttributes;
    const next = this.newRun(s.namespace, {
      workflowId: s.workflowId,
      workflowType: a?.workflowType?.name || s.workflowType,
      taskQueue: a?.taskQueue?.name || s.taskQueue,
      input: a ? a.input : first?.input,
      header: a ? a.header : first?.header,
      executionTimeoutMs: s.executionTimeoutMs,
      runTimeoutMs: (a && durationMs(a.workflowRunTimeout)) || s.runTimeoutMs,
      workflowTaskTimeoutMs: (a && durationMs(a.workflowTaskTimeout)) || s.workflowTaskTimeoutMs,
      identity: '',
      requestId: '',
      memo: a?.memo ?? s.memo,
      searchAttributes: a?.searchAttributes ?? s.searchAttributes,
      retryPolicy: a?.retryPolicy ?? s.retryPolicy,
      parent: s.parent,
      firstRunId: s.firstRunId,
      continuedRunId: s.runId,
      initiator: how.initiator,
      lastCompletionResult: a?.lastCompletionResult,
      continuedFailure: how.failure ?? a?.failure,
      attempt: how.attempt,
      startDelayMs: how.backoffMs,
      executionExpirationTime: s.executionExpirationTime,
      rootExecution: first?.rootWorkflowExecution,
    });
    s.continuedAsNewRunId = next.s.runId;
    // The parent keeps waiting: its child record now points at the new run.
    if (s.parent) {
      const parent = this.core.runs.get(execKey(s.parent.namespace, s.parent.runId));
      const child = parent && Object.values(parent.s.children).find((c) => c.runId === s.runId);
      if (child) child.runId = next.s.runId;
    }
    return next;
  }

  private continueAsNew(
    ex: Execution,
    completedId: number,
    a: Plain<temporal.api.command.v1.IContinueAsNewWorkflowExecutionCommandAttributes> | null,
  ): void {
    const backoffMs = durationMs(a?.backoffStartInterval);
    const next = this.startNextRun(ex, a, {
      initiator: enums.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW,
      failure: null,
      backoffMs,
      attempt: 1,
    });
    const n = next.s;
    this.core.appendNow(
      ex,
      this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, 'workflowExecutionContinuedAsNewEventAttributes', {
        newExecutionRunId: n.runId,
        workflowType: { name: n.workflowType },
        taskQueue: { name: n.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        input: next.history[0]?.workflowExecutionStartedEventAttributes?.input,
        workflowRunTimeout: n.runTimeoutMs ? msDuration(n.runTimeoutMs) : undefined,
        workflowTaskTimeout: msDuration(n.workflowTaskTimeoutMs),
        workflowTaskCompletedEventId: completedId,
        backoffStartInterval: backoffMs ? msDuration(backoffMs) : undefined,
        initiator: enums.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW,
        lastCompletionResult: a?.lastCompletionResult,
        header: a?.header,
        memo: a?.memo,
        searchAttributes: a?.searchAttributes,
      }),
    );
    this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, true);
  }

  // ---------------------------------------------------------------- closing

  /** `continued`: a next run carries on (continue-as-new, retry), so the parent keeps waiting. */
  private closeRun(ex: Execution, status: number, continued = false): void {
    const s = ex.s;
    s.status = status;
    s.closeTime = this.core.clock.now();
    for (const name of Object.keys(s.deadlines)) this.core.clearDeadline(ex, name);
    for (const a of Object.values(s.activities)) this.core.clock.setOutstanding(this.core.actKey(ex, a), false);
    s.activities = {};
    s.timers = {};
    workflowTaskDone(this.core, ex);
    s.buffered = [];
    for (const u of Object.values(s.updates)) {
      if (u.phase === 'admitted' || u.phase === 'delivered') {
        u.phase = 'rejected';
        u.outcome = { failure: { message: 'workflow execution already completed' } };
      }
    }
    this.core.markDirty(ex);
    this.core.notify(ex);
    if (!continued) this.notifyParent(ex, status);
    // Children do not follow a parent into its next run: the policy applies whenever a run closes.
    this.applyParentClosePolicy(ex);
  }

  private notifyParent(ex: Execution, status: number): void {
    const s = ex.s;
    if (!s.parent) return;
    const parent = this.core.runs.get(execKey(s.parent.namespace, s.parent.runId));
    if (!parent || !this.core.isOpen(parent)) return;
    const child = parent.s.children[s.parent.initiatedEventId];
    if (!child) return;
    delete parent.s.children[s.parent.initiatedEventId];
    const last = ex.history[ex.history.length - 1];
    const base = {
      namespace: s.namespace,
      workflowExecution: { workflowId: s.workflowId, runId: s.runId },
      workflowType: { name: s.workflowType },
      initiatedEventId: child.initiatedEventId,
      startedEventId: child.startedEventId,
    };
    let e: HistoryEvent;
    switch (status) {
      case Status.WORKFLOW_EXECUTION_STATUS_COMPLETED:
        e = this.core.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, 'childWorkflowExecutionCompletedEventAttributes', {
          ...base,
          result: last?.workflowExecutionCompletedEventAttributes?.result,
        });
        break;
      case Status.WORKFLOW_EXECUTION_STATUS_FAILED:
        e = this.core.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED, 'childWorkflowExecutionFailedEventAttributes', {
          ...base,
          failure: last?.workflowExecutionFailedEventAttributes?.failure,
          retryState: last?.workflowExecutionFailedEventAttributes?.retryState,
        });
        break;
      case Status.WORKFLOW_EXECUTION_STATUS_CANCELED:
        e = this.core.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED, 'childWorkflowExecutionCanceledEventAttributes', {
          ...base,
          details: last?.workflowExecutionCanceledEventAttributes?.details,
        });
        break;
      case Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
        e = this.core.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT, 'childWorkflowExecutionTimedOutEventAttributes', {
          ...base,
          retryState: RetryState.RETRY_STATE_TIMEOUT,
        });
        break;
      default:
        e = this.core.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED, 'childWorkflowExecutionTerminatedEventAttributes', base);
    }
    addExternal(this.core, parent, [e]);
  }

  private applyParentClosePolicy(ex: Execution): void {
    const P = enums.ParentClosePolicy;
    for (const c of Object.values(ex.s.children)) {
      const child = this.core.runs.get(execKey(c.namespace, c.runId));
      if (!child || !this.core.isOpen(child)) continue;
      if (c.parentClosePolicy === P.PARENT_CLOSE_POLICY_ABANDON) continue;
      if (c.parentClosePolicy === P.PARENT_CLOSE_POLICY_REQUEST_CANCEL) {
        this.requestCancel(child, 'by parent close policy', '', null, 0);
      } else {
        this.terminate(child, 'by parent close policy', null, '');
      }
    }
    ex.s.children = {};
  }

  /** A run timeout is retried under the workflow's retry policy (until the execution expires); an execution timeout is final. */
  private timeOutWorkflow(ex: Execution, runTimeout: boolean): void {
    const s = ex.s;
    this.core.flushBuffered(ex);
    let retryState: number = RetryState.RETRY_STATE_TIMEOUT;
    let newExecutionRunId: string | undefined;
    if (runTimeout && s.retryPolicy) {
      const failure: Failure = { message: 'workflow run timed out', timeoutFailureInfo: { timeoutType: TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE } };
      const next = nextRetry(retrySpec(s.retryPolicy), s.attempt, failure, this.core.clock.now(), s.executionExpirationTime);
      if ('delay' in next) {
        newExecutionRunId = this.startNextRun(ex, null, {
          initiator: enums.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_RETRY,
          failure,
          backoffMs: next.delay,
          attempt: s.attempt + 1,
        }).s.runId;
        retryState = RetryState.RETRY_STATE_IN_PROGRESS;
      } else {
        retryState = next.retryState;
      }
    }
    this.core.appendNow(
      ex,
      this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, 'workflowExecutionTimedOutEventAttributes', {
        retryState,
        newExecutionRunId,
      }),
    );
    this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, newExecutionRunId !== undefined);
  }

  private terminate(ex: Execution, reason: string, details: Payloads | null | undefined, identity: string): void {
    this.core.flushBuffered(ex);
    this.core.appendNow(
      ex,
      this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, 'workflowExecutionTerminatedEventAttributes', {
        reason,
        details,
        identity,
      }),
    );
    this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_TERMINATED);
  }

  // ---------------------------------------------------------------- children

  private startChild(
    ex: Execution,
    a: Plain<temporal.api.command.v1.IStartChildWorkflowExecutionCommandAttributes>,
    completedId: number,
    add: (type: number, field: string, attrs: object) => HistoryEvent,
    after: Array<() => void>,
  ): void {
    const s = ex.s;
    const ns = a.namespace || s.namespace;
    const e = add(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, 'startChildWorkflowExecutionInitiatedEventAttributes', {
      namespace: ns,
      workflowId: a.workflowId,
      workflowType: a.workflowType,
      taskQueue: a.taskQueue,
      input: a.input,
      workflowExecutionTimeout: a.workflowExecutionTimeout,
      workflowRunTimeout: a.workflowRunTimeout,
      workflowTaskTimeout: a.workflowTaskTimeout,
      parentClosePolicy: a.parentClosePolicy,
      control: a.control,
      workflowTaskCompletedEventId: completedId,
      workflowIdReusePolicy: a.workflowIdReusePolicy,
      retryPolicy: a.retryPolicy,
      cronSchedule: a.cronSchedule,
      header: a.header,
      memo: a.memo,
      searchAttributes: a.searchAttributes,
    });
    const initiatedEventId = num(e.eventId);
    after.push(() => {
      const workflowId = a.workflowId ?? '';
      const workflowType = a.workflowType?.name ?? '';
      let child: Execution | undefined;
      try {
        const admitted = this.admitStart(
          ns,
          workflowId,
          '',
          a.workflowIdReusePolicy ?? 0,
          enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
          '',
        );
        if (admitted.existing) throw new RpcError(Code.ALREADY_EXISTS, 'exists');
        const root = ex.history[0]?.workflowExecutionStartedEventAttributes?.rootWorkflowExecution;
        child = this.newRun(ns, {
          workflowId,
          workflowType,
          taskQueue: a.taskQueue?.name || s.taskQueue,
          input: a.input,
          header: a.header,
          executionTimeoutMs: durationMs(a.workflowExecutionTimeout),
          runTimeoutMs: durationMs(a.workflowRunTimeout),
          workflowTaskTimeoutMs: durationMs(a.workflowTaskTimeout),
          identity: '',
          requestId: '',
          memo: a.memo,
          searchAttributes: a.searchAttributes,
          retryPolicy: a.retryPolicy,
          parent: { namespace: s.namespace, workflowId: s.workflowId, runId: s.runId, initiatedEventId },
          rootExecution: root ?? { workflowId: s.workflowId, runId: s.runId },
        });
      } catch (err) {
        if (!(err instanceof RpcError)) throw err;
        addExternal(this.core, ex, [
          this.core.event(ex, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED, 'startChildWorkflowExecutionFailedEventAttributes', {
            namespace: ns,
            workflowId,
            workflowType: { name: workflowType },
            cause: enums.StartChildWorkflowExecutionFailedCause.START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_WORKFLOW_ALREADY_EXISTS,
            control: a.control,
            initiatedEventId,
            workflowTaskCompletedEventId: completedId,
          }),
        ]);
        return;
      }
      const startedEvent = this.core.event(ex, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, 'childWorkflowExecutionStartedEventAttributes', {
        namespace: ns,
        initiatedEventId,
        workflowExecution: { workflowId, runId: child.s.runId },
        workflowType: { name: workflowType },
        header: a.header,
      });
      s.children[initiatedEventId] = {
        initiatedEventId,
        startedEventId: 0,
        namespace: ns,
        workflowId,
        runId: child.s.runId,
        workflowType,
        parentClosePolicy: a.parentClosePolicy ?? 0,
      };
      addExternal(this.core, ex, [startedEvent]);
      const rec = s.children[initiatedEventId];
      // The started event's id is known once it leaves the buffer; resolve it lazily for the close event.
      if (rec) rec.startedEventId = num(startedEvent.eventId);
    });
  }

  // ---------------------------------------------------------------- activities

  // ---------------------------------------------------------------- signals, cancel, terminate

  private signal(
    ex: Execution,
    signalName: string,
    input: Payloads | null | undefined,
    header: Plain<temporal.api.common.v1.IHeader> | null | undefined,
    identity: string,
    external: { workflowId: string; runId: string } | null,
  ): void {
    addExternal(this.core, ex, [
      this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'workflowExecutionSignaledEventAttributes', {
        signalName,
        input,
        identity,
        header,
        externalWorkflowExecution: external ?? undefined,
      }),
    ]);
  }

  async SignalWorkflowExecution(r: Req<'SignalWorkflowExecutionRequest'>): Promise<object> {
    const ex = this.core.findOpenRun(this.core.ns(r.namespace), r.workflowExecution);
    if (!r.signalName) throw invalid('SignalName is not set on request.');
    if (r.requestId && ex.s.signalRequestIds.includes(r.requestId)) return {};
    if (r.requestId) {
      ex.s.signalRequestIds.push(r.requestId);
      if (ex.s.signalRequestIds.length > 100) ex.s.signalRequestIds.shift();
    }
    this.signal(ex, r.signalName, r.input, r.header, r.identity ?? '', null);
    await this.core.commit();
    return {};
  }

  private requestCancel(
    ex: Execution,
    cause: string,
    identity: string,
    external: { workflowId: string; runId: string } | null,
    externalInitiatedEventId: number,
  ): void {
    if (ex.s.cancelRequested) return;
    ex.s.cancelRequested = true;
    addExternal(this.core, ex, [
      this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, 'workflowExecutionCancelRequestedEventAttributes', {
        cause,
        identity,
        externalInitiatedEventId: externalInitiatedEventId || undefined,
        externalWorkflowExecution: external ?? undefined,
      }),
    ]);
  }

  async RequestCancelWorkflowExecution(r: Req<'RequestCancelWorkflowExecutionRequest'>): Promise<object> {
    const ex = this.core.findOpenRun(this.core.ns(r.namespace), r.workflowExecution);
    this.requestCancel(ex, r.reason ?? '', r.identity ?? '', null, 0);
    await this.core.commit();
    return {};
  }

  async TerminateWorkflowExecution(r: Req<'TerminateWorkflowExecutionRequest'>): Promise<object> {
    const ex = this.core.findOpenRun(this.core.ns(r.namespace), r.workflowExecution);
    this.terminate(ex, r.reason ?? '', r.details, r.identity ?? '');
    await this.core.commit();
    return {};
  }

  // ---------------------------------------------------------------- queries

  // ---------------------------------------------------------------- updates

  private processMessage(ex: Execution, m: Message, completedId: number): void {
    const s = ex.s;
    const typeUrl = m.body?.type_url ?? '';
    const value = m.body?.value ?? new Uint8Array();
    const u = s.updates[m.protocolInstanceId ?? ''];
    const U = pb.temporal.api.update.v1;
    if (typeUrl.endsWith('update.v1.Acceptance')) {
      const acc = decodePlain(U.Acceptance, value);
      const e = this.core.appendNow(
        ex,
        this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 'workflowExecutionUpdateAcceptedEventAttributes', {
          protocolInstanceId: m.protocolInstanceId,
          acceptedRequestMessageId: acc.acceptedRequestMessageId,
          acceptedRequestSequencingEventId: acc.acceptedRequestSequencingEventId,
          acceptedRequest: acc.acceptedRequest ?? u?.request,
        }),
      );
      if (u) {
        u.phase = 'accepted';
        u.acceptedEventId = num(e.eventId);
      }
    } else if (typeUrl.endsWith('update.v1.Rejection')) {
      const rej = decodePlain(U.Rejection, value);
      if (u) {
        u.phase = 'rejected';
        u.outcome = { failure: rej.failure };
      }
    } else if (typeUrl.endsWith('update.v1.Response')) {
      const res = decodePlain(U.Response, value);
      const updateId = res.meta?.updateId || m.protocolInstanceId || '';
      const target = s.updates[updateId];
      this.core.appendNow(
        ex,
        this.core.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, 'workflowExecutionUpdateCompletedEventAttributes', {
          meta: res.meta,
          acceptedEventId: target?.acceptedEventId ?? 0,
          outcome: res.outcome,
        }),
      );
      if (target) {
        target.phase = 'completed';
        target.outcome = res.outcome ?? null;
      }
    } else {
      log.warn('unknown protocol message', { typeUrl, completedId });
    }
    this.core.markDirty(ex);
  }

  private updateResponse(ex: Execution, u: UpdateState): Req<'UpdateWorkflowExecutionResponse'> {
    const L = enums.UpdateWorkflowExecutionLifecycleStage;
    const done = u.phase === 'completed' || u.phase === 'rejected';
    return {
      updateRef: { workflowExecution: { workflowId: ex.s.workflowId, runId: ex.s.runId }, updateId: u.updateId },
      outcome: done ? u.outcome : undefined,
      stage: done
        ? L.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED
        : u.phase === 'accepted'
          ? L.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED
          : L.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED,
    };
  }

  private async awaitUpdate(
    ex: Execution,
    u: UpdateState,
    stage: number,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'UpdateWorkflowExecutionResponse'>> {
    const L = enums.UpdateWorkflowExecutionLifecycleStage;
    const reached = () => {
      const cur = ex.s.updates[u.updateId] ?? u;
      if (cur.phase === 'completed' || cur.phase === 'rejected') return true;
      return stage <= L.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED && cur.phase === 'accepted';
    };
    await this.core.waitFor(execKey(ex.s.namespace, ex.s.runId), CALL_WAIT_MS, () => (reached() ? true : undefined), onCancel);
    return this.updateResponse(ex, ex.s.updates[u.updateId] ?? u);
  }

  async UpdateWorkflowExecution(
    r: Req<'UpdateWorkflowExecutionRequest'>,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'UpdateWorkflowExecutionResponse'>> {
    const namespace = this.core.ns(r.namespace);
    const ex = this.core.findRun(namespace, r.workflowExecution);
    const updateId = r.request?.meta?.updateId || randomUUID();
    let u = ex.s.updates[updateId];
    if (!u) {
      if (!this.core.isOpen(ex)) throw notFound('workflow execution already completed');
      u = {
        updateId,
        phase: 'admitted',
        request: { ...r.request, meta: { ...r.request?.meta, updateId } },
        acceptedEventId: 0,
        outcome: null,
      };
      ex.s.updates[updateId] = u;
      scheduleWorkflowTask(this.core, ex, true);
      this.core.markDirty(ex);
      await this.core.commit();
    }
    const stage = r.waitPolicy?.lifecycleStage || enums.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED;
    return this.awaitUpdate(ex, u, stage, onCancel);
  }

  async PollWorkflowExecutionUpdate(
    r: Req<'PollWorkflowExecutionUpdateRequest'>,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'PollWorkflowExecutionUpdateResponse'>> {
    const ex = this.core.findRun(this.core.ns(r.namespace), r.updateRef?.workflowExecution);
    const u = ex.s.updates[r.updateRef?.updateId ?? ''];
    if (!u) throw notFound(`update ${r.updateRef?.updateId ?? ''} not found`);
    const stage = r.waitPolicy?.lifecycleStage || enums.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;
    const resp = await this.awaitUpdate(ex, u, stage, onCancel);
    return { outcome: resp.outcome, stage: resp.stage, updateRef: resp.updateRef };
  }

  // ---------------------------------------------------------------- history & describe

  /** The visibility/describe view of a run. */
  executionInfo(ex: Execution): Plain<temporal.api.workflow.v1.IWorkflowExecutionInfo> {
    const s = ex.s;
    const root = ex.history[0]?.workflowExecutionStartedEventAttributes?.rootWorkflowExecution;
    return {
      execution: { workflowId: s.workflowId, runId: s.runId },
      type: { name: s.workflowType },
      startTime: msTs(s.startTime),
      closeTime: s.closeTime ? msTs(s.closeTime) : undefined,
      status: s.status,
      historyLength: ex.history.length,
      executionTime: msTs(s.executionTime),
      memo: s.memo ?? { fields: {} },
      searchAttributes: s.searchAttributes ?? { indexedFields: {} },
      taskQueue: s.taskQueue,
      parentNamespaceId: s.parent?.namespace,
      parentExecution: s.parent ? { workflowId: s.parent.workflowId, runId: s.parent.runId } : undefined,
      rootExecution: root,
      firstRunId: s.firstRunId,
      stateTransitionCount: s.stateTransitions,
      executionDuration: s.closeTime ? msDuration(s.closeTime - s.executionTime) : undefined,
    };
  }

  async DescribeWorkflowExecution(r: Req<'DescribeWorkflowExecutionRequest'>): Promise<Req<'DescribeWorkflowExecutionResponse'>> {
    const ex = this.core.findRun(this.core.ns(r.namespace), r.execution);
    const s = ex.s;
    const A = enums.PendingActivityState;
    return {
      executionConfig: {
        taskQueue: { name: s.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        workflowExecutionTimeout: msDuration(s.executionTimeoutMs),
        workflowRunTimeout: msDuration(s.runTimeoutMs),
        defaultWorkflowTaskTimeout: msDuration(s.workflowTaskTimeoutMs),
      },
      workflowExecutionInfo: this.executionInfo(ex),
      pendingActivities: Object.values(s.activities).map((a) => ({
        activityId: a.activityId,
        activityType: { name: a.activityType },
        state:
          a.cancelRequested
            ? A.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED
            : a.phase === 'started'
              ? A.PENDING_ACTIVITY_STATE_STARTED
              : A.PENDING_ACTIVITY_STATE_SCHEDULED,
        heartbeatDetails: a.heartbeatDetails,
        lastHeartbeatTime: a.lastHeartbeatTime ? msTs(a.lastHeartbeatTime) : undefined,
        lastStartedTime: a.startedTime ? msTs(a.startedTime) : undefined,
        attempt: a.attempt,
        maximumAttempts: a.retry.maximumAttempts,
        scheduledTime: msTs(a.attemptScheduledTime),
        expirationTime: a.scheduleToCloseMs ? msTs(a.scheduledTime + a.scheduleToCloseMs) : undefined,
        lastFailure: a.lastFailure,
        lastWorkerIdentity: a.startedIdentity,
      })),
      pendingChildren: Object.values(s.children).map((c) => ({
        workflowId: c.workflowId,
        runId: c.runId,
        workflowTypeName: c.workflowType,
        initiatedId: c.initiatedEventId,
        parentClosePolicy: c.parentClosePolicy,
      })),
      pendingWorkflowTask:
        s.wft.phase === 'none'
          ? undefined
          : {
              state:
                s.wft.phase === 'started'
                  ? enums.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED
                  : enums.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
              scheduledTime: msTs(s.wft.scheduledTime),
              startedTime: s.wft.startedTime ? msTs(s.wft.startedTime) : undefined,
              attempt: s.wft.attempt,
            },
    };
  }

  PollWorkflowTaskQueue(r: Req<'PollWorkflowTaskQueueRequest'>, onCancel: OnCancel): Promise<Req<'PollWorkflowTaskQueueResponse'>> {
    return pollWorkflowTaskQueue(this.core, r, onCancel);
  }

  RespondWorkflowTaskFailed(r: Req<'RespondWorkflowTaskFailedRequest'>): Promise<Req<'RespondWorkflowTaskFailedResponse'>> {
    return respondWorkflowTaskFailed(this.core, r);
  }

  ShutdownWorker(r: Req<'ShutdownWorkerRequest'>): Promise<object> {
    return shutdownWorker(this.core, r);
  }

  ResetStickyTaskQueue(r: Req<'ResetStickyTaskQueueRequest'>): Promise<object> {
    return resetStickyTaskQueue(this.core, r);
  }

  PollActivityTaskQueue(r: Req<'PollActivityTaskQueueRequest'>, onCancel: OnCancel): Promise<Req<'PollActivityTaskQueueResponse'>> {
    return pollActivityTaskQueue(this.core, r, onCancel);
  }

  RespondActivityTaskCompleted(r: Req<'RespondActivityTaskCompletedRequest'>): Promise<object> {
    return respondActivityTaskCompleted(this.core, r);
  }

  RespondActivityTaskCompletedById(r: Req<'RespondActivityTaskCompletedByIdRequest'>): Promise<object> {
    return respondActivityTaskCompletedById(this.core, r);
  }

  RespondActivityTaskFailed(r: Req<'RespondActivityTaskFailedRequest'>): Promise<object> {
    return respondActivityTaskFailed(this.core, r);
  }

  RespondActivityTaskFailedById(r: Req<'RespondActivityTaskFailedByIdRequest'>): Promise<object> {
    return respondActivityTaskFailedById(this.core, r);
  }

  RespondActivityTaskCanceled(r: Req<'RespondActivityTaskCanceledRequest'>): Promise<object> {
    return respondActivityTaskCanceled(this.core, r);
  }

  RespondActivityTaskCanceledById(r: Req<'RespondActivityTaskCanceledByIdRequest'>): Promise<object> {
    return respondActivityTaskCanceledById(this.core, r);
  }

  RecordActivityTaskHeartbeat(r: Req<'RecordActivityTaskHeartbeatRequest'>): Promise<Req<'RecordActivityTaskHeartbeatResponse'>> {
    return recordActivityTaskHeartbeat(this.core, r);
  }

  RecordActivityTaskHeartbeatById(r: Req<'RecordActivityTaskHeartbeatByIdRequest'>): Promise<Req<'RecordActivityTaskHeartbeatByIdResponse'>> {
    return recordActivityTaskHeartbeatById(this.core, r);
  }

  QueryWorkflow(r: Req<'QueryWorkflowRequest'>, onCancel: OnCancel): Promise<Req<'QueryWorkflowResponse'>> {
    return queryWorkflow(this.core, r, onCancel);
  }

  RespondQueryTaskCompleted(r: Req<'RespondQueryTaskCompletedRequest'>): Promise<object> {
    return respondQueryTaskCompleted(this.core, r);
  }

  GetWorkflowExecutionHistory(r: Req<'GetWorkflowExecutionHistoryRequest'>, onCancel: OnCancel): Promise<Req<'GetWorkflowExecutionHistoryResponse'>> {
    return getWorkflowExecutionHistory(this.core, r, onCancel);
  }

  GetWorkflowExecutionHistoryReverse(r: Req<'GetWorkflowExecutionHistoryReverseRequest'>): Promise<Req<'GetWorkflowExecutionHistoryReverseResponse'>> {
    return getWorkflowExecutionHistoryReverse(this.core, r);
  }

  // ---------------------------------------------------------------- system & namespace

  async GetSystemInfo(): Promise<Req<'GetSystemInfoResponse'>> {
    return {
      serverVersion: '1.24.0-paygate-devserver',
      capabilities: {
        signalAndQueryHeader: true,
        internalErrorDifferentiation: true,
        activityFailureIncludeHeartbeat: true,
        encodedFailureAttributes: true,
        sdkMetadata: true,
        upsertMemo: true,
      },
    };
  }

  async DescribeNamespace(r: Req<'DescribeNamespaceRequest'>): Promise<Req<'DescribeNamespaceResponse'>> {
    const name = this.core.ns(r.namespace);
    return {
      namespaceInfo: {
        name,
        state: enums.NamespaceState.NAMESPACE_STATE_REGISTERED,
        id: Buffer.from(name).toString('hex'),
        capabilities: { eagerWorkflowStart: false, syncUpdate: true, asyncUpdate: true },
      },
      config: { workflowExecutionRetentionTtl: msDuration(this.core.retentionOf(name)) },
      isGlobalNamespace: false,
    };
  }

  async ListNamespaces(): Promise<Req<'ListNamespacesResponse'>> {
    const out = [];
    for (const n of this.core.namespaces) out.push(await this.DescribeNamespace({ namespace: n }));
    return { namespaces: out };
  }

  async RegisterNamespace(r: Req<'RegisterNamespaceRequest'>): Promise<object> {
    if (!r.namespace) throw invalid('namespace is required');
    if (this.core.namespaces.has(r.namespace)) throw new RpcError(Code.ALREADY_EXISTS, `namespace ${r.namespace} already exists`);
    this.core.namespaces.add(r.namespace);
    const retentionMs = durationMs(r.workflowExecutionRetentionPeriod);
    if (retentionMs > 0) this.core.namespaceRetentionMs.set(r.namespace, retentionMs);
    this.core.markServerDirty();
    await this.core.commit();
    return {};
  }

  async DescribeTaskQueue(r: Req<'DescribeTaskQueueRequest'>): Promise<Req<'DescribeTaskQueueResponse'>> {
    this.core.ns(r.namespace);
    return { pollers: [] };
  }

  /** Every run the engine holds (open and retained closed ones). */
  executions(): IterableIterator<Execution> {
    return this.core.runs.values();
  }

  /** Search attributes known to this server (OperatorService.ListSearchAttributes). */
  searchAttributeTypes(): Map<string, string> {
    return this.core.saTypes;
  }

  /** Registers search attribute types; durable (journaled) before it resolves. */
  async addSearchAttributes(attrs: Record<string, string>): Promise<void> {
    for (const [k, v] of Object.entries(attrs)) this.core.saTypes.set(k, v);
    this.core.markServerDirty();
    await this.core.commit();
  }
}


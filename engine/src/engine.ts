// The workflow execution state machine behind WorkflowService. The gRPC handlers delegate to the concern
// modules over one shared EngineCore (core.ts); restore, retention, describe and namespaces are still here.
// Every RPC handler mutates executions synchronously and then awaits `commit()`, which journals the changed
// runs (when durable) before the caller gets its answer.
import type { Clock } from './clock.js';
import { EngineCore, SERVER_RECORD_KEY, type EngineOptions, type OnCancel, type ServerRecord } from './core.js';
import { Code, RpcError, invalid } from './errors.js';
import { Status, TimeoutType, durationMs, enums, msDuration, msTs, num, type temporal, type HistoryEvent, type Plain, type Req } from './proto.js';
import type { Execution, ExecutionState } from './state.js';
import {
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
} from './activity-tasks.js';
import { onDeadline } from './deadlines.js';
import { getWorkflowExecutionHistory, getWorkflowExecutionHistoryReverse } from './history.js';
import { requestCancelWorkflowExecution, terminateWorkflowExecution } from './lifecycle.js';
import { queryWorkflow, respondQueryTaskCompleted } from './queries.js';
import { pollWorkflowExecutionUpdate, signalWorkflowExecution, updateWorkflowExecution } from './signals-updates.js';
import { signalWithStartWorkflowExecution, startWorkflowExecution } from './start.js';
import { respondWorkflowTaskCompleted } from './workflow-task-completion.js';
import {
  dispatchWorkflowTask,
  pollWorkflowTaskQueue,
  resetStickyTaskQueue,
  respondWorkflowTaskFailed,
  shutdownWorker,
  workflowTaskTimedOut,
} from './workflow-tasks.js';

export type { EngineOptions } from './core.js';

export class Engine {
  readonly clock: Clock;
  private readonly core: EngineCore;

  constructor(opts: EngineOptions) {
    this.core = new EngineCore(opts, onDeadline);
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

  // ---------------------------------------------------------------- start

  StartWorkflowExecution(r: Req<'StartWorkflowExecutionRequest'>): Promise<Req<'StartWorkflowExecutionResponse'>> {
    return startWorkflowExecution(this.core, r);
  }

  SignalWithStartWorkflowExecution(r: Req<'SignalWithStartWorkflowExecutionRequest'>): Promise<Req<'SignalWithStartWorkflowExecutionResponse'>> {
    return signalWithStartWorkflowExecution(this.core, r);
  }

  RespondWorkflowTaskCompleted(r: Req<'RespondWorkflowTaskCompletedRequest'>): Promise<Req<'RespondWorkflowTaskCompletedResponse'>> {
    return respondWorkflowTaskCompleted(this.core, r);
  }

  SignalWorkflowExecution(r: Req<'SignalWorkflowExecutionRequest'>): Promise<object> {
    return signalWorkflowExecution(this.core, r);
  }

  RequestCancelWorkflowExecution(r: Req<'RequestCancelWorkflowExecutionRequest'>): Promise<object> {
    return requestCancelWorkflowExecution(this.core, r);
  }

  TerminateWorkflowExecution(r: Req<'TerminateWorkflowExecutionRequest'>): Promise<object> {
    return terminateWorkflowExecution(this.core, r);
  }

  UpdateWorkflowExecution(r: Req<'UpdateWorkflowExecutionRequest'>, onCancel: OnCancel): Promise<Req<'UpdateWorkflowExecutionResponse'>> {
    return updateWorkflowExecution(this.core, r, onCancel);
  }

  PollWorkflowExecutionUpdate(
    r: Req<'PollWorkflowExecutionUpdateRequest'>,
    onCancel: OnCancel,
  ): Promise<Req<'PollWorkflowExecutionUpdateResponse'>> {
    return pollWorkflowExecutionUpdate(this.core, r, onCancel);
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


// The workflow execution state machine: runs, history, workflow/activity tasks, timers, signals, queries,
// updates, children and visibility. Every RPC handler mutates executions synchronously and then awaits
// `commit()`, which journals the changed runs (when durable) before the caller gets its answer.
import { randomUUID } from 'node:crypto';
import { Clock, type TimerHandle } from './clock.js';
import { Code, RpcError, invalid, notFound } from './errors.js';
import { Journal, type JournalRecord } from './journal.js';
import { log } from './log.js';
import { TaskQueues } from './matching.js';
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
  packAny,
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
  type BufferedGroup,
  type Execution,
  type ExecutionState,
  type UpdateState,
} from './state.js';
import { nextRetry, retryPolicyOf, retrySpec } from './retry.js';
import { decodeToken, encodeToken, type TaskToken } from './tokens.js';


const POLL_WAIT_MS = 20_000;
const CALL_WAIT_MS = 20_000;
const HISTORY_PAGE = 1000;
const DEFAULT_WFT_TIMEOUT_MS = 10_000;
const STICKY_DEFAULT_MS = 5_000;

/** Journal key of the server record (namespaces, search attributes); execution keys always contain '/'. */
const SERVER_RECORD_KEY = '#server';

interface ServerRecord {
  namespaces: string[];
  searchAttributes: Record<string, string>;
  /** Retention of namespaces registered with their own. */
  retentionMs?: Record<string, number>;
}

const DEFAULT_RETENTION_MS = 24 * 3600 * 1000;

/** Custom search attributes that Temporal's dev server and the Java test server define out of the box. */
const PREDEFINED_SEARCH_ATTRIBUTES: Record<string, string> = {
  CustomKeywordField: 'Keyword',
  CustomStringField: 'Text',
  CustomTextField: 'Text',
  CustomIntField: 'Int',
  CustomDoubleField: 'Double',
  CustomBoolField: 'Bool',
  CustomDatetimeField: 'Datetime',
};

type TaskRef =
  | { kind: 'wft'; runKey: string; scheduledEventId: number }
  | { kind: 'act'; runKey: string; scheduledEventId: number; attempt: number }
  | { kind: 'query'; queryId: string };

interface PendingQuery {
  id: string;
  runKey: string;
  query: Plain<temporal.api.query.v1.IWorkflowQuery>;
  resolve(res: Req<'QueryWorkflowResponse'>): void;
  reject(err: Error): void;
  dispatched: boolean;
  /** Scheduled event id of the workflow task carrying the query, 0 when it went out as a query task. */
  attachedTo: number;
}

interface Waiter {
  check(): boolean;
}

export interface EngineOptions {
  timeSkipping: boolean;
  /** How long closed executions are kept (namespace retention); 24 h by default. */
  retentionMs?: number;
  namespaces: string[];
  searchAttributes: Record<string, string>;
  journal?: Journal;
}


export class Engine {
  readonly clock: Clock;
  private readonly runs = new Map<string, Execution>();
  /** namespace/workflowId -> run keys, oldest first. */
  private readonly byWorkflowId = new Map<string, string[]>();
  private readonly queues = new TaskQueues<TaskRef>();
  private readonly timers = new Map<string, TimerHandle>();
  private readonly stickyTimers = new Map<string, NodeJS.Timeout>();
  private readonly queries = new Map<string, PendingQuery>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly dirty = new Set<Execution>();
  private readonly namespaces: Set<string>;
  private readonly namespaceRetentionMs = new Map<string, number>();
  private readonly saTypes: Map<string, string>;
  private readonly journal: Journal | undefined;
  /** Namespaces or search attributes changed since the server record was last journaled. */
  private serverDirty = false;
  private taskId = 1;

  constructor(private readonly opts: EngineOptions) {
    this.clock = new Clock(opts.timeSkipping);
    this.namespaces = new Set(['default', ...opts.namespaces]);
    this.saTypes = new Map([...Object.entries(PREDEFINED_SEARCH_ATTRIBUTES), ...Object.entries(opts.searchAttributes)]);
    this.journal = opts.journal;
  }

  // ---------------------------------------------------------------- persistence

  /**
   * Rebuilds runs from the journal and re-arms every deadline and task (time that passed while down fires now).
   * Returns how many executions it restored.
   */
  restore(restored: Map<string, { state: unknown; events: unknown[] }>): number {
    const server = restored.get(SERVER_RECORD_KEY)?.state as ServerRecord | undefined;
    for (const n of server?.namespaces ?? []) this.namespaces.add(n);
    for (const [n, ms] of Object.entries(server?.retentionMs ?? {})) this.namespaceRetentionMs.set(n, ms);
    // Types given on this start's command line win over remembered ones.
    for (const [k, v] of Object.entries(server?.searchAttributes ?? {})) if (!this.saTypes.has(k)) this.saTypes.set(k, v);
    for (const [key, r] of restored) {
      if (key === SERVER_RECORD_KEY) continue;
      const s = r.state as ExecutionState;
      const ex: Execution = { s, history: r.events as HistoryEvent[], persistedLength: r.events.length };
      // Event task ids keep increasing across restarts.
      for (const e of ex.history) this.taskId = Math.max(this.taskId, num(e.taskId) + 1);
      this.runs.set(key, ex);
      this.indexRun(ex);
    }
    for (const ex of this.runs.values()) {
      const s = ex.s;
      if (s.status !== Status.WORKFLOW_EXECUTION_STATUS_RUNNING) continue;
      // Sticky workers did not survive the restart with us; their tasks go to the normal queue.
      s.sticky = null;
      if (s.wft.phase === 'started') {
        this.workflowTaskTimedOut(ex, TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE);
      } else if (s.wft.phase === 'scheduled') {
        s.wft.queue = s.taskQueue;
        s.wft.sticky = false;
        this.dispatchWorkflowTask(ex);
      }
      for (const a of Object.values(s.activities)) {
        if (a.phase === 'scheduled') this.dispatchActivity(ex, a);
        if (a.phase !== 'backoff') this.clock.setOutstanding(this.actKey(ex, a), true);
      }
      for (const [name, at] of Object.entries(s.deadlines)) this.armDeadline(ex, name, at);
      this.markDirty(ex);
    }
    this.markServerDirty();
    return this.runs.size;
  }

  /** Namespaces and search attributes live in one journal record beside the executions. */
  private markServerDirty(): void {
    if (this.journal) this.serverDirty = true;
  }

  private serverRecord(): JournalRecord {
    const state: ServerRecord = {
      namespaces: [...this.namespaces],
      searchAttributes: Object.fromEntries(this.saTypes),
      retentionMs: Object.fromEntries(this.namespaceRetentionMs),
    };
    return { key: SERVER_RECORD_KEY, base: 0, events: [], state };
  }

  private markDirty(ex: Execution): void {
    ex.s.stateTransitions++;
    if (!this.journal) return;
    this.dirty.add(ex);
  }

  /** Journals every changed run; resolves once durable. */
  commit(): Promise<void> {
    const journal = this.journal;
    if (!journal) return Promise.resolve();
    this.stageDirty(journal);
    return journal.flush();
  }

  private stageDirty(journal: Journal): void {
    if (this.serverDirty) {
      journal.append(this.serverRecord());
      this.serverDirty = false;
    }
    if (this.dirty.size === 0) return;
    for (const ex of this.dirty) {
      const base = Math.min(ex.persistedLength, ex.history.length);
      journal.append({
        key: execKey(ex.s.namespace, ex.s.runId),
        base,
        events: ex.history.slice(base),
        state: ex.s,
      });
      ex.persistedLength = ex.history.length;
    }
    this.dirty.clear();
    if (journal.wantsCompaction) {
      journal.compact([
        this.serverRecord(),
        ...[...this.runs.values()].map((ex) => ({
          key: execKey(ex.s.namespace, ex.s.runId),
          base: 0,
          events: ex.history,
          state: ex.s,
        })),
      ]);
    }
  }

  /** How long closed executions of a namespace are kept: its own retention, else the server's. */
  private retentionOf(namespace: string): number {
    return this.namespaceRetentionMs.get(namespace) ?? this.opts.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  /** Forgets executions closed longer ago than their namespace's retention period, as the server's retention does. */
  sweepClosed(): void {
    const now = this.clock.now();
    for (const [key, ex] of this.runs) {
      if (this.isOpen(ex) || ex.s.closeTime > now - this.retentionOf(ex.s.namespace)) continue;
      this.runs.delete(key);
      this.dirty.delete(ex);
      this.waiters.delete(key);
      const idKey = `${ex.s.namespace}/${ex.s.workflowId}`;
      const remaining = (this.byWorkflowId.get(idKey) ?? []).filter((k) => k !== key);
      if (remaining.length > 0) this.byWorkflowId.set(idKey, remaining);
      else this.byWorkflowId.delete(idKey);
      this.journal?.append({ key, base: 0, events: [], state: null, deleted: true });
    }
    void this.commit();
  }

  close(): void {
    this.clock.stop();
    for (const t of this.stickyTimers.values()) clearTimeout(t);
    this.queues.release(() => true);
    if (this.journal) {
      this.stageDirty(this.journal);
      this.journal.close();
    }
  }

  // ---------------------------------------------------------------- lookup helpers

  private indexRun(ex: Execution): void {
    const k = `${ex.s.namespace}/${ex.s.workflowId}`;
    const list = this.byWorkflowId.get(k) ?? [];
    list.push(execKey(ex.s.namespace, ex.s.runId));
    list.sort((a, b) => (this.runs.get(a)?.s.startTime ?? 0) - (this.runs.get(b)?.s.startTime ?? 0));
    this.byWorkflowId.set(k, list);
  }

  private latestRun(namespace: string, workflowId: string): Execution | undefined {
    const list = this.byWorkflowId.get(`${namespace}/${workflowId}`);
    const last = list?.[list.length - 1];
    return last ? this.runs.get(last) : undefined;
  }

  private findRun(namespace: string, exec: Plain<temporal.api.common.v1.IWorkflowExecution> | null | undefined): Execution {
    const workflowId = exec?.workflowId ?? '';
    if (!workflowId) throw invalid('workflow id is required');
    const runId = exec?.runId ?? '';
    const ex = runId ? this.runs.get(execKey(namespace, runId)) : this.latestRun(namespace, workflowId);
    if (!ex || ex.s.workflowId !== workflowId) {
      throw notFound(`workflow execution not found for workflow ID "${workflowId}" and run ID "${runId}"`);
    }
    return ex;
  }

  private findOpenRun(namespace: string, exec: Plain<temporal.api.common.v1.IWorkflowExecution> | null | undefined): Execution {
    const ex = this.findRun(namespace, exec);
    if (!this.isOpen(ex)) throw notFound('workflow execution already completed');
    return ex;
  }

  private isOpen(ex: Execution): boolean {
    return ex.s.status === Status.WORKFLOW_EXECUTION_STATUS_RUNNING;
  }

  /** The namespace of a request (default when empty); NOT_FOUND for unknown ones. */
  ns(namespace: string | null | undefined): string {
    const n = namespace || 'default';
    if (!this.namespaces.has(n)) throw notFound(`namespace ${n} not found`);
    return n;
  }

  private actKey(ex: Execution, a: ActivityState): string {
    return `act:${ex.s.runId}:${a.scheduledEventId}`;
  }

  private queueKey(namespace: string, name: string, kind: 'wf' | 'act'): string {
    return `${namespace}\u0000${kind}\u0000${name}`;
  }

  // ---------------------------------------------------------------- waiting callers

  private waitFor<T>(runKey: string, timeoutMs: number, probe: () => T | undefined, onCancel?: (c: () => void) => void): Promise<T | undefined> {
    const first = probe();
    if (first !== undefined) return Promise.resolve(first);
    return new Promise((resolve) => {
      let set = this.waiters.get(runKey);
      if (!set) {
        set = new Set();
        this.waiters.set(runKey, set);
      }
      const waiters = set;
      const finish = (v: T | undefined) => {
        clearTimeout(timer);
        waiters.delete(w);
        resolve(v);
      };
      const w: Waiter = {
        check: () => {
          const v = probe();
          if (v === undefined) return false;
          finish(v);
          return true;
        },
      };
      const timer = setTimeout(() => finish(undefined), timeoutMs);
      waiters.add(w);
      onCancel?.(() => finish(undefined));
    });
  }

  private notify(ex: Execution): void {
    const set = this.waiters.get(execKey(ex.s.namespace, ex.s.runId));
    if (!set) return;
    for (const w of [...set]) w.check();
  }

  // ---------------------------------------------------------------- deadlines

  private setDeadline(ex: Execution, name: string, at: number): void {
    ex.s.deadlines[name] = at;
    this.armDeadline(ex, name, at);
  }

  private clearDeadline(ex: Execution, name: string): void {
    delete ex.s.deadlines[name];
    const k = `${ex.s.runId}|${name}`;
    this.timers.get(k)?.cancel();
    this.timers.delete(k);
  }

  private armDeadline(ex: Execution, name: string, at: number): void {
    const k = `${ex.s.runId}|${name}`;
    this.timers.get(k)?.cancel();
    this.timers.set(
      k,
      this.clock.schedule(at, () => {
        this.timers.delete(k);
        if (ex.s.deadlines[name] !== at) return;
        delete ex.s.deadlines[name];
        this.onDeadline(ex, name);
        void this.commit();
      }),
    );
  }

  private onDeadline(ex: Execution, name: string): void {
    if (!this.isOpen(ex)) return;
    const [kind, id, sub] = name.split(':');
    switch (kind) {
      case 'timer': {
        const t = ex.s.timers[id!];
        if (!t) return;
        delete ex.s.timers[id!];
        this.addExternal(ex, [
          this.event(ex, EventType.EVENT_TYPE_TIMER_FIRED, 'timerFiredEventAttributes', {
            timerId: id,
            startedEventId: t.startedEventId,
          }),
        ]);
        break;
      }
      case 'wft':
        if (ex.s.wft.phase === 'started') this.workflowTaskTimedOut(ex, TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE);
        break;
      case 'wftretry':
        this.scheduleWorkflowTask(ex);
        break;
      case 'act': {
        const a = ex.s.activities[id!];
        if (!a) return;
        if (sub === 'retry') this.retryActivity(ex, a);
        else this.activityTimedOut(ex, a, sub!);
        break;
      }
      case 'run':
      case 'execution':
        this.timeOutWorkflow(ex, kind === 'run');
        break;
      case 'backoff':
        this.scheduleWorkflowTask(ex);
        break;
      default:
        log.warn('unknown deadline', { name });
    }
    this.markDirty(ex);
  }

  // ---------------------------------------------------------------- history

  private event(ex: Execution, type: number, field: string, attrs: object): HistoryEvent {
    return {
      eventId: 0,
      eventTime: msTs(this.clock.now()),
      eventType: type,
      taskId: this.taskId++,
      [field]: attrs,
    } as HistoryEvent;
  }

  private appendNow(ex: Execution, e: HistoryEvent): HistoryEvent {
    e.eventId = ex.history.length + 1;
    ex.history.push(e);
    this.markDirty(ex);
    return e;
  }

  private appendGroup(ex: Execution, g: BufferedGroup): void {
    const first = g.events[0];
    for (const e of g.events) {
      e.eventTime = msTs(this.clock.now());
      this.appendNow(ex, e);
    }
    if (g.linkStarted && first && g.events.length > 1) {
      const last = g.events[g.events.length - 1]!;
      const attrs = Object.entries(last).find(([k]) => k.endsWith('EventAttributes'))?.[1] as { startedEventId?: number };
      if (attrs) attrs.startedEventId = num(first.eventId);
    }
  }

  /** An event not caused by the running workflow task: buffered while a task is in flight, and it wakes the workflow. */
  private addExternal(ex: Execution, events: HistoryEvent[], linkStarted = false): void {
    const g: BufferedGroup = { events, linkStarted };
    if (ex.s.wft.phase === 'started') {
      ex.s.buffered.push(g);
    } else {
      this.appendGroup(ex, g);
      ex.s.wft.speculativeFrom = null;
    }
    this.scheduleWorkflowTask(ex);
    this.notify(ex);
    this.markDirty(ex);
  }

  private flushBuffered(ex: Execution): boolean {
    if (ex.s.buffered.length === 0) return false;
    for (const g of ex.s.buffered.splice(0)) this.appendGroup(ex, g);
    return true;
  }

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
    const now = this.clock.now();
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
      searchAttributes: this.typedSearchAttributes(p.searchAttributes),
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
    const started = this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 'workflowExecutionStartedEventAttributes', {
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
    this.appendNow(ex, started);
    if (signal) {
      this.appendNow(
        ex,
        this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'workflowExecutionSignaledEventAttributes', {
          signalName: signal.name,
          input: signal.input,
          identity: signal.identity,
          header: signal.header,
        }),
      );
    }
    const key = execKey(namespace, runId);
    this.runs.set(key, ex);
    this.indexRun(ex);
    if (runTimeoutMs) this.setDeadline(ex, 'run', now + runTimeoutMs);
    if (expiration) this.setDeadline(ex, 'execution', expiration);
    if (p.startDelayMs) this.setDeadline(ex, 'backoff', now + p.startDelayMs);
    else this.scheduleWorkflowTask(ex);
    this.markDirty(ex);
    return ex;
  }

  /** Adds the `type` metadata the SDK needs to decode typed search attributes, from the registered types. */
  private typedSearchAttributes(sa: SearchAttributes | null | undefined): SearchAttributes | null {
    if (!sa?.indexedFields) return null;
    const out: Record<string, Plain<temporal.api.common.v1.IPayload>> = {};
    for (const [k, v] of Object.entries(sa.indexedFields)) {
      const meta = { ...(v.metadata ?? {}) };
      const registered = this.saTypes.get(k);
      if (!meta.type && registered) meta.type = Buffer.from(registered);
      if (meta.type && !this.saTypes.has(k)) {
        this.saTypes.set(k, Buffer.from(meta.type).toString('utf8'));
        this.markServerDirty();
      }
      out[k] = { ...v, metadata: meta };
    }
    return { indexedFields: out };
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
    const prev = this.latestRun(namespace, workflowId);
    if (!prev) return {};
    if (requestId && prev.s.requestIds.includes(requestId)) return { existing: prev, deduped: true };
    if (this.isOpen(prev)) {
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
    const namespace = this.ns(r.namespace);
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
      await this.commit();
      return { runId: existing.s.runId, started: !!deduped, status: existing.s.status };
    }
    const ex = this.newRun(namespace, params);
    await this.commit();
    return { runId: ex.s.runId, started: true, status: ex.s.status };
  }

  async SignalWithStartWorkflowExecution(
    r: Req<'SignalWithStartWorkflowExecutionRequest'>,
  ): Promise<Req<'SignalWithStartWorkflowExecutionResponse'>> {
    const namespace = this.ns(r.namespace);
    if (!r.signalName) throw invalid('SignalName is not set on request.');
    const params = this.startRequestParams(namespace, r);
    const prev = this.latestRun(namespace, params.workflowId);
    const conflict = r.workflowIdConflictPolicy || enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING;
    if (prev && this.isOpen(prev) && conflict === enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING) {
      this.signal(prev, r.signalName, r.signalInput, r.header, r.identity ?? '', null);
      await this.commit();
      return { runId: prev.s.runId, started: false };
    }
    this.admitStart(namespace, params.workflowId, '', r.workflowIdReusePolicy ?? 0, conflict, params.identity);
    const ex = this.newRun(namespace, params, {
      name: r.signalName,
      input: r.signalInput,
      header: r.header,
      identity: r.identity ?? '',
    });
    await this.commit();
    return { runId: ex.s.runId, started: true };
  }

  // ---------------------------------------------------------------- workflow tasks

  private scheduleWorkflowTask(ex: Execution, speculative = false): void {
    const s = ex.s;
    if (!this.isOpen(ex) || s.wft.phase !== 'none') return;
    if (s.deadlines['backoff'] !== undefined || s.deadlines['wftretry'] !== undefined) return;
    const now = this.clock.now();
    const sticky = s.sticky;
    const queue = sticky ? sticky.queue : s.taskQueue;
    const historyBefore = ex.history.length;
    const e = this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 'workflowTaskScheduledEventAttributes', {
        taskQueue: sticky
          ? { name: queue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_STICKY, normalName: s.taskQueue }
          : { name: queue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        startToCloseTimeout: msDuration(s.workflowTaskTimeoutMs),
        attempt: s.wft.attempt,
      }),
    );
    s.wft = {
      phase: 'scheduled',
      scheduledEventId: num(e.eventId),
      startedEventId: 0,
      attempt: s.wft.attempt,
      queue,
      sticky: !!sticky,
      scheduledTime: now,
      startedTime: 0,
      speculativeFrom: speculative ? historyBefore : null,
    };
    this.dispatchWorkflowTask(ex);
  }

  private dispatchWorkflowTask(ex: Execution): void {
    const s = ex.s;
    const runKey = execKey(s.namespace, s.runId);
    this.clock.setOutstanding(`wft:${runKey}`, true);
    const ref: TaskRef = { kind: 'wft', runKey, scheduledEventId: s.wft.scheduledEventId };
    this.queues.offer(this.queueKey(s.namespace, s.wft.queue, 'wf'), ref);
    if (s.wft.sticky && s.sticky) {
      // A sticky task nobody picks up goes back to the normal queue (with full history).
      const timeout = s.sticky.scheduleToStartMs || STICKY_DEFAULT_MS;
      const scheduledEventId = s.wft.scheduledEventId;
      const old = this.stickyTimers.get(runKey);
      if (old) clearTimeout(old);
      this.stickyTimers.set(
        runKey,
        setTimeout(() => {
          this.stickyTimers.delete(runKey);
          if (s.wft.phase === 'scheduled' && s.wft.scheduledEventId === scheduledEventId && s.wft.sticky) {
            this.moveToNormalQueue(ex);
          }
        }, timeout),
      );
    }
  }

  private moveToNormalQueue(ex: Execution): void {
    const s = ex.s;
    s.sticky = null;
    s.wft.sticky = false;
    s.wft.queue = s.taskQueue;
    this.queues.offer(this.queueKey(s.namespace, s.taskQueue, 'wf'), {
      kind: 'wft',
      runKey: execKey(s.namespace, s.runId),
      scheduledEventId: s.wft.scheduledEventId,
    });
    this.markDirty(ex);
  }

  private workflowTaskDone(ex: Execution): void {
    const runKey = execKey(ex.s.namespace, ex.s.runId);
    ex.s.wft.phase = 'none';
    this.clearDeadline(ex, 'wft');
    this.clock.setOutstanding(`wft:${runKey}`, false);
    const st = this.stickyTimers.get(runKey);
    if (st) {
      clearTimeout(st);
      this.stickyTimers.delete(runKey);
    }
  }

  private workflowTaskTimedOut(ex: Execution, timeoutType: number): void {
    const s = ex.s;
    this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, 'workflowTaskTimedOutEventAttributes', {
        scheduledEventId: s.wft.scheduledEventId,
        startedEventId: s.wft.startedEventId,
        timeoutType,
      }),
    );
    this.retryWorkflowTask(ex);
  }

  private retryWorkflowTask(ex: Execution): void {
    const s = ex.s;
    this.workflowTaskDone(ex);
    s.wft.attempt++;
    s.wft.speculativeFrom = null;
    s.sticky = null;
    for (const u of Object.values(s.updates)) if (u.phase === 'delivered') u.phase = 'admitted';
    this.answerAttachedQueries(ex, {});
    this.flushBuffered(ex);
    // The SDK fails a task on the first attempt only; later attempts are left to time out, so back off gently.
    if (s.wft.attempt > 2) {
      this.setDeadline(ex, 'wftretry', this.clock.now() + Math.min(1000 * (s.wft.attempt - 2), 10_000));
    } else {
      this.scheduleWorkflowTask(ex);
    }
    this.dispatchPendingQueries(ex);
    this.notify(ex);
    this.markDirty(ex);
  }

  async PollWorkflowTaskQueue(
    r: Req<'PollWorkflowTaskQueueRequest'>,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'PollWorkflowTaskQueueResponse'>> {
    const namespace = this.ns(r.namespace);
    const name = r.taskQueue?.name;
    if (!name) throw invalid('task queue is required');
    const sticky = r.taskQueue?.kind === enums.TaskQueueKind.TASK_QUEUE_KIND_STICKY;
    const key = this.queueKey(namespace, name, 'wf');
    const deadline = Date.now() + POLL_WAIT_MS;
    let cancelled = false;
    let cancelCurrent: (() => void) | null = null;
    onCancel(() => {
      cancelled = true;
      cancelCurrent?.();
    });
    while (!cancelled) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const ref = await this.queues.poll(key, left, (c) => (cancelCurrent = c));
      if (!ref) break;
      if (cancelled) {
        // The caller is gone: hand the task to the next poller.
        this.queues.offer(key, ref);
        break;
      }
      if (ref.kind === 'query') {
        const resp = this.startQueryTask(ref.queryId);
        if (resp) return resp;
        continue;
      }
      if (ref.kind !== 'wft') continue;
      const ex = this.runs.get(ref.runKey);
      if (!ex || !this.isOpen(ex)) continue;
      const s = ex.s;
      if (s.wft.phase !== 'scheduled' || s.wft.scheduledEventId !== ref.scheduledEventId || s.wft.queue !== name) continue;
      const resp = this.startWorkflowTask(ex, r.identity ?? '', sticky);
      await this.commit();
      return resp;
    }
    return {};
  }

  private startWorkflowTask(ex: Execution, identity: string, sticky: boolean): Req<'PollWorkflowTaskQueueResponse'> {
    const s = ex.s;
    const now = this.clock.now();
    const started = this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, 'workflowTaskStartedEventAttributes', {
        scheduledEventId: s.wft.scheduledEventId,
        identity,
        requestId: randomUUID(),
        historySizeBytes: 0,
      }),
    );
    s.wft.phase = 'started';
    s.wft.startedEventId = num(started.eventId);
    s.wft.startedTime = now;
    this.setDeadline(ex, 'wft', now + s.workflowTaskTimeoutMs);
    const runKey = execKey(s.namespace, s.runId);
    const st = this.stickyTimers.get(runKey);
    if (st) {
      clearTimeout(st);
      this.stickyTimers.delete(runKey);
    }
    const messages: Message[] = [];
    for (const u of Object.values(s.updates)) {
      if (u.phase !== 'admitted') continue;
      u.phase = 'delivered';
      messages.push({
        id: `${u.updateId}/request`,
        protocolInstanceId: u.updateId,
        eventId: s.wft.startedEventId - 1,
        body: packAny('temporal.api.update.v1.Request', pb.temporal.api.update.v1.Request, u.request),
      });
    }
    const queries: Record<string, Plain<temporal.api.query.v1.IWorkflowQuery>> = {};
    for (const q of this.queries.values()) {
      if (q.runKey !== runKey || q.dispatched) continue;
      q.dispatched = true;
      q.attachedTo = s.wft.scheduledEventId;
      queries[q.id] = q.query;
    }
    const from = sticky ? s.lastCompletedStartedEventId : 0;
    const events = ex.history.slice(from);
    if (log.debugEnabled) log.debug('workflow task started', {
      sticky,
      previousStartedEventId: s.lastCompletedStartedEventId,
      events: events.map((e) => `${e.eventId}:${e.eventType}`).join(' '),
      messages: messages.length,
    });
    const token = encodeToken({ k: 'wft', ns: s.namespace, r: s.runId, s: s.wft.scheduledEventId, a: s.wft.attempt });
    let nextPageToken: Uint8Array | undefined;
    let page = events;
    if (events.length > HISTORY_PAGE) {
      page = events.slice(0, HISTORY_PAGE);
      nextPageToken = this.pageToken(s.runId, from + HISTORY_PAGE, s.wft.startedEventId);
    }
    return {
      taskToken: token,
      workflowExecution: { workflowId: s.workflowId, runId: s.runId },
      workflowType: { name: s.workflowType },
      previousStartedEventId: s.lastCompletedStartedEventId,
      startedEventId: s.wft.startedEventId,
      attempt: s.wft.attempt,
      history: { events: page },
      nextPageToken,
      workflowExecutionTaskQueue: { name: s.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      scheduledTime: msTs(s.wft.scheduledTime),
      startedTime: msTs(now),
      messages,
      queries,
    };
  }

  private pageToken(runId: string, offset: number, upTo: number): Uint8Array {
    return Buffer.from(JSON.stringify({ runId, offset, upTo }));
  }

  private startedWorkflowTask(token: TaskToken): Execution {
    const ex = this.runs.get(execKey(token.ns, token.r));
    if (!ex || !this.isOpen(ex) || token.k !== 'wft') throw notFound('Workflow task not found.');
    const w = ex.s.wft;
    if (w.phase !== 'started' || w.scheduledEventId !== token.s || w.attempt !== token.a) {
      throw notFound('Workflow task not found.');
    }
    return ex;
  }

  async RespondWorkflowTaskFailed(r: Req<'RespondWorkflowTaskFailedRequest'>): Promise<Req<'RespondWorkflowTaskFailedResponse'>> {
    const ex = this.startedWorkflowTask(decodeToken(r.taskToken));
    const s = ex.s;
    this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
        scheduledEventId: s.wft.scheduledEventId,
        startedEventId: s.wft.startedEventId,
        cause: r.cause,
        failure: r.failure,
        identity: r.identity,
      }),
    );
    this.retryWorkflowTask(ex);
    await this.commit();
    return {};
  }

  async RespondWorkflowTaskCompleted(
    r: Req<'RespondWorkflowTaskCompletedRequest'>,
  ): Promise<Req<'RespondWorkflowTaskCompletedResponse'>> {
    const ex = this.startedWorkflowTask(decodeToken(r.taskToken));
    const s = ex.s;
    this.answerAttachedQueries(ex, r.queryResults ?? {});
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
      this.appendNow(
        ex,
        this.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
          scheduledEventId: s.wft.scheduledEventId,
          startedEventId: s.wft.startedEventId,
          cause: bad.cause,
          failure: { message: bad.message, source: 'Server' },
          identity: r.identity,
        }),
      );
      this.retryWorkflowTask(ex);
      await this.commit();
      throw invalid(bad.message);
    }
    const closing = commands.find((c) => this.isClosingCommand(c.commandType ?? 0));
    // A run cannot close over events it has not seen yet: make the workflow look at them first.
    const hasNewWork =
      s.buffered.length > 0 || Object.values(s.updates).some((u) => u.phase === 'admitted');
    if (closing && hasNewWork) {
      this.appendNow(
        ex,
        this.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
          scheduledEventId: s.wft.scheduledEventId,
          startedEventId: s.wft.startedEventId,
          cause: enums.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
          identity: r.identity,
        }),
      );
      this.workflowTaskDone(ex);
      s.wft.speculativeFrom = null;
      s.sticky = null;
      this.flushBuffered(ex);
      this.scheduleWorkflowTask(ex);
      await this.commit();
      return {};
    }

    const onlyRejections =
      commands.length === 0 &&
      [...messages.values()].every((m) => (m.body?.type_url ?? '').endsWith('update.v1.Rejection'));
    if (s.wft.speculativeFrom !== null && onlyRejections && s.buffered.length === 0) {
      // A task that only delivered updates the workflow rejected leaves no trace in history.
      for (const m of messages.values()) this.processMessage(ex, m, 0);
      ex.history.length = s.wft.speculativeFrom;
      this.workflowTaskDone(ex);
      s.wft.speculativeFrom = null;
      this.applySticky(ex, r);
      this.scheduleIfPendingUpdates(ex);
      this.dispatchPendingQueries(ex);
      this.notify(ex);
      this.markDirty(ex);
      await this.commit();
      // Tells the worker to forget the discarded task's events (it resets its last started event id).
      return { resetHistoryEventId: s.lastCompletedStartedEventId };
    }

    const completed = this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 'workflowTaskCompletedEventAttributes', {
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
    this.workflowTaskDone(ex);
    this.applySticky(ex, r);

    const after: Array<() => void> = [];
    const eager: ActivityState[] = [];
    let wake = false;
    for (const c of commands) {
      if (!this.isOpen(ex)) break;
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
    if (this.isOpen(ex)) {
      if (this.flushBuffered(ex)) wake = true;
      for (const f of after) f();
      if (wake || r.forceCreateNewWorkflowTask) this.scheduleWorkflowTask(ex);
      this.scheduleIfPendingUpdates(ex);
    }
    const activityTasks = [];
    for (const a of eager) {
      if (this.isOpen(ex) && s.activities[a.scheduledEventId] === a && a.phase === 'scheduled') {
        activityTasks.push(this.startActivity(ex, a, r.identity ?? ''));
      }
    }
    this.dispatchPendingQueries(ex);
    this.notify(ex);
    this.markDirty(ex);
    await this.commit();
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

  private applySticky(ex: Execution, r: Req<'RespondWorkflowTaskCompletedRequest'>): void {
    const q = r.stickyAttributes?.workerTaskQueue?.name;
    ex.s.sticky = q ? { queue: q, scheduleToStartMs: durationMs(r.stickyAttributes?.scheduleToStartTimeout) } : null;
  }

  private scheduleIfPendingUpdates(ex: Execution): void {
    if (Object.values(ex.s.updates).some((u) => u.phase === 'admitted')) this.scheduleWorkflowTask(ex, ex.s.wft.phase === 'none');
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
      const e = this.event(ex, type, field, attrs);
      if (c.userMetadata) e.userMetadata = c.userMetadata;
      return this.appendNow(ex, e);
    };
    switch (c.commandType) {
      case CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
        {
          const act = this.scheduleActivity(ex, c.scheduleActivityTaskCommandAttributes!, completedId, add);
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
        this.closeActivity(ex, a);
        after.push(() =>
          this.addExternal(ex, [
            this.event(ex, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED, 'activityTaskCanceledEventAttributes', {
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
        const fireAt = this.clock.now() + durationMs(a.startToFireTimeout);
        s.timers[timerId] = { startedEventId: num(e.eventId), fireAt };
        this.setDeadline(ex, `timer:${timerId}`, fireAt);
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
        this.clearDeadline(ex, `timer:${timerId}`);
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
        const sa = this.typedSearchAttributes(c.upsertWorkflowSearchAttributesCommandAttributes?.searchAttributes);
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
          const next = nextRetry(spec, s.attempt, failure, this.clock.now(), s.executionExpirationTime);
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
            target = this.findOpenRun(ns, a.execution);
          } catch {
            target = undefined;
          }
          if (target) {
            this.signal(target, a.signalName ?? '', a.input, a.header, '', { workflowId: s.workflowId, runId: s.runId });
            this.addExternal(ex, [
              this.event(ex, EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, 'externalWorkflowExecutionSignaledEventAttributes', {
                initiatedEventId,
                namespace: ns,
                workflowExecution: { workflowId: target.s.workflowId, runId: a.execution?.runId ?? '' },
                control: a.control,
              }),
            ]);
          } else {
            this.addExternal(ex, [
              this.event(ex, EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, 'signalExternalWorkflowExecutionFailedEventAttributes', {
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
            target = this.findOpenRun(ns, execution);
          } catch {
            target = undefined;
          }
          if (target) {
            this.requestCancel(target, a.reason ?? '', '', { workflowId: s.workflowId, runId: s.runId }, initiatedEventId);
            this.addExternal(ex, [
              this.event(ex, EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED, 'externalWorkflowExecutionCancelRequestedEventAttributes', {
                initiatedEventId,
                namespace: ns,
                workflowExecution: execution,
              }),
            ]);
          } else {
            this.addExternal(ex, [
              this.event(ex, EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, 'requestCancelExternalWorkflowExecutionFailedEventAttributes', {
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
      const parent = this.runs.get(execKey(s.parent.namespace, s.parent.runId));
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
    this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, 'workflowExecutionContinuedAsNewEventAttributes', {
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
    s.closeTime = this.clock.now();
    for (const name of Object.keys(s.deadlines)) this.clearDeadline(ex, name);
    for (const a of Object.values(s.activities)) this.clock.setOutstanding(this.actKey(ex, a), false);
    s.activities = {};
    s.timers = {};
    this.workflowTaskDone(ex);
    s.buffered = [];
    for (const u of Object.values(s.updates)) {
      if (u.phase === 'admitted' || u.phase === 'delivered') {
        u.phase = 'rejected';
        u.outcome = { failure: { message: 'workflow execution already completed' } };
      }
    }
    this.markDirty(ex);
    this.notify(ex);
    if (!continued) this.notifyParent(ex, status);
    // Children do not follow a parent into its next run: the policy applies whenever a run closes.
    this.applyParentClosePolicy(ex);
  }

  private notifyParent(ex: Execution, status: number): void {
    const s = ex.s;
    if (!s.parent) return;
    const parent = this.runs.get(execKey(s.parent.namespace, s.parent.runId));
    if (!parent || !this.isOpen(parent)) return;
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
        e = this.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, 'childWorkflowExecutionCompletedEventAttributes', {
          ...base,
          result: last?.workflowExecutionCompletedEventAttributes?.result,
        });
        break;
      case Status.WORKFLOW_EXECUTION_STATUS_FAILED:
        e = this.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED, 'childWorkflowExecutionFailedEventAttributes', {
          ...base,
          failure: last?.workflowExecutionFailedEventAttributes?.failure,
          retryState: last?.workflowExecutionFailedEventAttributes?.retryState,
        });
        break;
      case Status.WORKFLOW_EXECUTION_STATUS_CANCELED:
        e = this.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED, 'childWorkflowExecutionCanceledEventAttributes', {
          ...base,
          details: last?.workflowExecutionCanceledEventAttributes?.details,
        });
        break;
      case Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
        e = this.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT, 'childWorkflowExecutionTimedOutEventAttributes', {
          ...base,
          retryState: RetryState.RETRY_STATE_TIMEOUT,
        });
        break;
      default:
        e = this.event(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED, 'childWorkflowExecutionTerminatedEventAttributes', base);
    }
    this.addExternal(parent, [e]);
  }

  private applyParentClosePolicy(ex: Execution): void {
    const P = enums.ParentClosePolicy;
    for (const c of Object.values(ex.s.children)) {
      const child = this.runs.get(execKey(c.namespace, c.runId));
      if (!child || !this.isOpen(child)) continue;
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
    this.flushBuffered(ex);
    let retryState: number = RetryState.RETRY_STATE_TIMEOUT;
    let newExecutionRunId: string | undefined;
    if (runTimeout && s.retryPolicy) {
      const failure: Failure = { message: 'workflow run timed out', timeoutFailureInfo: { timeoutType: TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE } };
      const next = nextRetry(retrySpec(s.retryPolicy), s.attempt, failure, this.clock.now(), s.executionExpirationTime);
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
    this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, 'workflowExecutionTimedOutEventAttributes', {
        retryState,
        newExecutionRunId,
      }),
    );
    this.closeRun(ex, Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, newExecutionRunId !== undefined);
  }

  private terminate(ex: Execution, reason: string, details: Payloads | null | undefined, identity: string): void {
    this.flushBuffered(ex);
    this.appendNow(
      ex,
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, 'workflowExecutionTerminatedEventAttributes', {
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
        this.addExternal(ex, [
          this.event(ex, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED, 'startChildWorkflowExecutionFailedEventAttributes', {
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
      const startedEvent = this.event(ex, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, 'childWorkflowExecutionStartedEventAttributes', {
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
      this.addExternal(ex, [startedEvent]);
      const rec = s.children[initiatedEventId];
      // The started event's id is known once it leaves the buffer; resolve it lazily for the close event.
      if (rec) rec.startedEventId = num(startedEvent.eventId);
    });
  }

  // ---------------------------------------------------------------- activities

  private scheduleActivity(
    ex: Execution,
    a: Plain<temporal.api.command.v1.IScheduleActivityTaskCommandAttributes>,
    completedId: number,
    add: (type: number, field: string, attrs: object) => HistoryEvent,
  ): ActivityState {
    const s = ex.s;
    const runLeft = s.runTimeoutMs ? Math.max(0, s.startTime + s.runTimeoutMs - this.clock.now()) : 0;
    let s2c = durationMs(a.scheduleToCloseTimeout);
    let stc = durationMs(a.startToCloseTimeout);
    let s2s = durationMs(a.scheduleToStartTimeout);
    // Normalise as the server does: every attempt needs a start-to-close bound and nothing outlives the run.
    if (runLeft && (!s2c || s2c > runLeft)) s2c = runLeft;
    if (!stc) stc = s2c;
    if (s2c && stc > s2c) stc = s2c;
    if (s2s && s2c && s2s > s2c) s2s = s2c;
    const heartbeat = Math.min(durationMs(a.heartbeatTimeout), stc);
    const spec = retrySpec(a.retryPolicy);
    const policy = retryPolicyOf(spec);
    const taskQueue = a.taskQueue?.name || s.taskQueue;
    const e = add(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, 'activityTaskScheduledEventAttributes', {
      activityId: a.activityId,
      activityType: a.activityType,
      taskQueue: { name: taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      header: a.header,
      input: a.input,
      scheduleToCloseTimeout: s2c ? msDuration(s2c) : undefined,
      scheduleToStartTimeout: s2s ? msDuration(s2s) : undefined,
      startToCloseTimeout: msDuration(stc),
      heartbeatTimeout: heartbeat ? msDuration(heartbeat) : undefined,
      workflowTaskCompletedEventId: completedId,
      retryPolicy: policy,
      useWorkflowBuildId: a.useWorkflowBuildId,
      priority: a.priority,
    });
    const now = this.clock.now();
    const act: ActivityState = {
      scheduledEventId: num(e.eventId),
      activityId: a.activityId ?? '',
      activityType: a.activityType?.name ?? '',
      taskQueue,
      phase: 'scheduled',
      attempt: 1,
      scheduledTime: now,
      attemptScheduledTime: now,
      startedTime: 0,
      startedIdentity: '',
      heartbeatDetails: null,
      lastHeartbeatTime: 0,
      cancelRequested: false,
      cancelRequestedEventId: 0,
      lastFailure: null,
      scheduleToCloseMs: s2c,
      scheduleToStartMs: s2s,
      startToCloseMs: stc,
      heartbeatMs: heartbeat,
      retry: spec,
      retryPolicy: policy,
    };
    s.activities[act.scheduledEventId] = act;
    if (s2c) this.setDeadline(ex, `act:${act.scheduledEventId}:s2c`, now + s2c);
    this.offerActivity(ex, act);
    return act;
  }

  private offerActivity(ex: Execution, a: ActivityState): void {
    if (a.scheduleToStartMs) this.setDeadline(ex, `act:${a.scheduledEventId}:s2s`, this.clock.now() + a.scheduleToStartMs);
    this.clock.setOutstanding(this.actKey(ex, a), true);
    this.dispatchActivity(ex, a);
  }

  private dispatchActivity(ex: Execution, a: ActivityState): void {
    this.queues.offer(this.queueKey(ex.s.namespace, a.taskQueue, 'act'), {
      kind: 'act',
      runKey: execKey(ex.s.namespace, ex.s.runId),
      scheduledEventId: a.scheduledEventId,
      attempt: a.attempt,
    });
  }

  private closeActivity(ex: Execution, a: ActivityState): void {
    for (const sub of ['s2c', 's2s', 'stc', 'hb', 'retry']) this.clearDeadline(ex, `act:${a.scheduledEventId}:${sub}`);
    this.clock.setOutstanding(this.actKey(ex, a), false);
    delete ex.s.activities[a.scheduledEventId];
    this.markDirty(ex);
  }

  private retryActivity(ex: Execution, a: ActivityState): void {
    a.phase = 'scheduled';
    a.attemptScheduledTime = this.clock.now();
    this.offerActivity(ex, a);
  }

  private startedEvent(ex: Execution, a: ActivityState): HistoryEvent {
    return this.event(ex, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, 'activityTaskStartedEventAttributes', {
      scheduledEventId: a.scheduledEventId,
      identity: a.startedIdentity,
      requestId: randomUUID(),
      attempt: a.attempt,
      lastFailure: a.lastFailure,
    });
  }

  /** A failed attempt: retried per policy, or recorded as the activity's final outcome. */
  private failAttempt(ex: Execution, a: ActivityState, failure: Failure, timeoutType: number, details: Payloads | null): void {
    const now = this.clock.now();
    const expiration = a.scheduleToCloseMs ? a.scheduledTime + a.scheduleToCloseMs : 0;
    const retryable = timeoutType === 0 || timeoutType === TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE || timeoutType === TimeoutType.TIMEOUT_TYPE_HEARTBEAT;
    const next = retryable
      ? nextRetry(a.retry, a.attempt, failure, now, expiration)
      : { retryState: RetryState.RETRY_STATE_TIMEOUT };
    if ('delay' in next && !a.cancelRequested) {
      for (const sub of ['s2s', 'stc', 'hb']) this.clearDeadline(ex, `act:${a.scheduledEventId}:${sub}`);
      this.clock.setOutstanding(this.actKey(ex, a), false);
      a.phase = 'backoff';
      a.lastFailure = failure;
      if (details) a.heartbeatDetails = details;
      a.attempt++;
      this.setDeadline(ex, `act:${a.scheduledEventId}:retry`, now + next.delay);
      this.markDirty(ex);
      return;
    }
    const retryState = 'retryState' in next ? next.retryState : RetryState.RETRY_STATE_CANCEL_REQUESTED;
    const started = a.phase === 'started';
    const events: HistoryEvent[] = started ? [this.startedEvent(ex, a)] : [];
    if (timeoutType) {
      events.push(
        this.event(ex, EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, 'activityTaskTimedOutEventAttributes', {
          failure,
          scheduledEventId: a.scheduledEventId,
          startedEventId: 0,
          retryState,
        }),
      );
    } else {
      events.push(
        this.event(ex, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED, 'activityTaskFailedEventAttributes', {
          failure,
          scheduledEventId: a.scheduledEventId,
          startedEventId: 0,
          identity: a.startedIdentity,
          retryState,
        }),
      );
    }
    this.closeActivity(ex, a);
    this.addExternal(ex, events, started);
  }

  private activityTimedOut(ex: Execution, a: ActivityState, sub: string): void {
    const type =
      sub === 's2c'
        ? TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE
        : sub === 's2s'
          ? TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
          : sub === 'hb'
            ? TimeoutType.TIMEOUT_TYPE_HEARTBEAT
            : TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE;
    if ((sub === 'stc' || sub === 'hb') && a.phase !== 'started') return;
    if (sub === 's2s' && a.phase !== 'scheduled') return;
    const name = enums.TimeoutType[type]?.replace('TIMEOUT_TYPE_', '') ?? 'UNKNOWN';
    const failure: Failure = {
      message: `activity ${name} timeout`,
      source: 'Server',
      timeoutFailureInfo: { timeoutType: type, lastHeartbeatDetails: a.heartbeatDetails },
      cause: type === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE ? a.lastFailure : undefined,
    };
    this.failAttempt(ex, a, failure, type, null);
  }

  async PollActivityTaskQueue(
    r: Req<'PollActivityTaskQueueRequest'>,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'PollActivityTaskQueueResponse'>> {
    const namespace = this.ns(r.namespace);
    const name = r.taskQueue?.name;
    if (!name) throw invalid('task queue is required');
    const key = this.queueKey(namespace, name, 'act');
    const deadline = Date.now() + POLL_WAIT_MS;
    let cancelled = false;
    let cancelCurrent: (() => void) | null = null;
    onCancel(() => {
      cancelled = true;
      cancelCurrent?.();
    });
    while (!cancelled) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const ref = await this.queues.poll(key, left, (c) => (cancelCurrent = c));
      if (!ref) break;
      if (cancelled) {
        this.queues.offer(key, ref);
        break;
      }
      if (ref.kind !== 'act') continue;
      const ex = this.runs.get(ref.runKey);
      if (!ex || !this.isOpen(ex)) continue;
      const a = ex.s.activities[ref.scheduledEventId];
      if (!a || a.phase !== 'scheduled' || a.attempt !== ref.attempt) continue;
      const resp = this.startActivity(ex, a, r.identity ?? '');
      await this.commit();
      return resp;
    }
    return {};
  }

  private startActivity(ex: Execution, a: ActivityState, identity: string): Req<'PollActivityTaskQueueResponse'> {
    const s = ex.s;
    const now = this.clock.now();
    a.phase = 'started';
    a.startedTime = now;
    a.startedIdentity = identity;
    a.lastHeartbeatTime = now;
    this.clearDeadline(ex, `act:${a.scheduledEventId}:s2s`);
    this.setDeadline(ex, `act:${a.scheduledEventId}:stc`, now + a.startToCloseMs);
    if (a.heartbeatMs) this.setDeadline(ex, `act:${a.scheduledEventId}:hb`, now + a.heartbeatMs);
    this.markDirty(ex);
    const scheduled = ex.history[a.scheduledEventId - 1]?.activityTaskScheduledEventAttributes;
    return {
      taskToken: encodeToken({ k: 'act', ns: s.namespace, r: s.runId, s: a.scheduledEventId, a: a.attempt }),
      workflowNamespace: s.namespace,
      workflowType: { name: s.workflowType },
      workflowExecution: { workflowId: s.workflowId, runId: s.runId },
      activityType: { name: a.activityType },
      activityId: a.activityId,
      header: scheduled?.header,
      input: scheduled?.input,
      heartbeatDetails: a.heartbeatDetails,
      scheduledTime: msTs(a.scheduledTime),
      currentAttemptScheduledTime: msTs(a.attemptScheduledTime),
      startedTime: msTs(now),
      attempt: a.attempt,
      scheduleToCloseTimeout: msDuration(a.scheduleToCloseMs || 0),
      startToCloseTimeout: msDuration(a.startToCloseMs),
      heartbeatTimeout: msDuration(a.heartbeatMs),
      retryPolicy: a.retryPolicy,
      priority: scheduled?.priority,
    };
  }

  private activityByToken(raw: Uint8Array | null | undefined): { ex: Execution; a: ActivityState } {
    const t = decodeToken(raw);
    if (t.k !== 'act') throw invalid('not an activity task token');
    const ex = this.runs.get(execKey(t.ns, t.r));
    const a = ex && this.isOpen(ex) ? ex.s.activities[t.s] : undefined;
    if (!ex || !a || a.attempt !== t.a || a.phase !== 'started') throw notFound('activity task not found');
    return { ex, a };
  }

  private activityById(r: {
    namespace?: string | null;
    workflowId?: string | null;
    runId?: string | null;
    activityId?: string | null;
  }): { ex: Execution; a: ActivityState } {
    const ex = this.findOpenRun(this.ns(r.namespace), { workflowId: r.workflowId, runId: r.runId });
    const a = Object.values(ex.s.activities).find((x) => x.activityId === r.activityId);
    if (!a) throw notFound('activity task not found');
    if (a.phase !== 'started') {
      // Completing by id an activity nobody has started still counts as a start by this caller.
      a.phase = 'started';
      a.startedTime = this.clock.now();
    }
    return { ex, a };
  }

  private completeActivity(ex: Execution, a: ActivityState, result: Payloads | null | undefined, identity: string): void {
    const events = [
      this.startedEvent(ex, a),
      this.event(ex, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, 'activityTaskCompletedEventAttributes', {
        result,
        scheduledEventId: a.scheduledEventId,
        startedEventId: 0,
        identity,
      }),
    ];
    this.closeActivity(ex, a);
    this.addExternal(ex, events, true);
  }

  private cancelActivity(ex: Execution, a: ActivityState, details: Payloads | null | undefined, identity: string): void {
    const events = [
      this.startedEvent(ex, a),
      this.event(ex, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED, 'activityTaskCanceledEventAttributes', {
        details,
        latestCancelRequestedEventId: a.cancelRequestedEventId,
        scheduledEventId: a.scheduledEventId,
        startedEventId: 0,
        identity,
      }),
    ];
    this.closeActivity(ex, a);
    this.addExternal(ex, events, true);
  }

  private heartbeat(ex: Execution, a: ActivityState, details: Payloads | null | undefined): Req<'RecordActivityTaskHeartbeatResponse'> {
    if (details) a.heartbeatDetails = details;
    a.lastHeartbeatTime = this.clock.now();
    if (a.heartbeatMs) this.setDeadline(ex, `act:${a.scheduledEventId}:hb`, a.lastHeartbeatTime + a.heartbeatMs);
    this.markDirty(ex);
    return { cancelRequested: a.cancelRequested };
  }

  async RespondActivityTaskCompleted(r: Req<'RespondActivityTaskCompletedRequest'>): Promise<object> {
    const { ex, a } = this.activityByToken(r.taskToken);
    this.completeActivity(ex, a, r.result, r.identity ?? '');
    await this.commit();
    return {};
  }

  async RespondActivityTaskCompletedById(r: Req<'RespondActivityTaskCompletedByIdRequest'>): Promise<object> {
    const { ex, a } = this.activityById(r);
    this.completeActivity(ex, a, r.result, r.identity ?? '');
    await this.commit();
    return {};
  }

  async RespondActivityTaskFailed(r: Req<'RespondActivityTaskFailedRequest'>): Promise<object> {
    const { ex, a } = this.activityByToken(r.taskToken);
    this.failAttempt(ex, a, r.failure ?? { message: 'activity failed' }, 0, r.lastHeartbeatDetails ?? null);
    await this.commit();
    return {};
  }

  async RespondActivityTaskFailedById(r: Req<'RespondActivityTaskFailedByIdRequest'>): Promise<object> {
    const { ex, a } = this.activityById(r);
    this.failAttempt(ex, a, r.failure ?? { message: 'activity failed' }, 0, r.lastHeartbeatDetails ?? null);
    await this.commit();
    return {};
  }

  async RespondActivityTaskCanceled(r: Req<'RespondActivityTaskCanceledRequest'>): Promise<object> {
    const { ex, a } = this.activityByToken(r.taskToken);
    this.cancelActivity(ex, a, r.details, r.identity ?? '');
    await this.commit();
    return {};
  }

  async RespondActivityTaskCanceledById(r: Req<'RespondActivityTaskCanceledByIdRequest'>): Promise<object> {
    const { ex, a } = this.activityById(r);
    this.cancelActivity(ex, a, r.details, r.identity ?? '');
    await this.commit();
    return {};
  }

  async RecordActivityTaskHeartbeat(r: Req<'RecordActivityTaskHeartbeatRequest'>): Promise<Req<'RecordActivityTaskHeartbeatResponse'>> {
    const { ex, a } = this.activityByToken(r.taskToken);
    const resp = this.heartbeat(ex, a, r.details);
    await this.commit();
    return resp;
  }

  async RecordActivityTaskHeartbeatById(
    r: Req<'RecordActivityTaskHeartbeatByIdRequest'>,
  ): Promise<Req<'RecordActivityTaskHeartbeatByIdResponse'>> {
    const { ex, a } = this.activityById(r);
    const resp = this.heartbeat(ex, a, r.details);
    await this.commit();
    return resp;
  }

  // ---------------------------------------------------------------- signals, cancel, terminate

  private signal(
    ex: Execution,
    signalName: string,
    input: Payloads | null | undefined,
    header: Plain<temporal.api.common.v1.IHeader> | null | undefined,
    identity: string,
    external: { workflowId: string; runId: string } | null,
  ): void {
    this.addExternal(ex, [
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'workflowExecutionSignaledEventAttributes', {
        signalName,
        input,
        identity,
        header,
        externalWorkflowExecution: external ?? undefined,
      }),
    ]);
  }

  async SignalWorkflowExecution(r: Req<'SignalWorkflowExecutionRequest'>): Promise<object> {
    const ex = this.findOpenRun(this.ns(r.namespace), r.workflowExecution);
    if (!r.signalName) throw invalid('SignalName is not set on request.');
    if (r.requestId && ex.s.signalRequestIds.includes(r.requestId)) return {};
    if (r.requestId) {
      ex.s.signalRequestIds.push(r.requestId);
      if (ex.s.signalRequestIds.length > 100) ex.s.signalRequestIds.shift();
    }
    this.signal(ex, r.signalName, r.input, r.header, r.identity ?? '', null);
    await this.commit();
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
    this.addExternal(ex, [
      this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, 'workflowExecutionCancelRequestedEventAttributes', {
        cause,
        identity,
        externalInitiatedEventId: externalInitiatedEventId || undefined,
        externalWorkflowExecution: external ?? undefined,
      }),
    ]);
  }

  async RequestCancelWorkflowExecution(r: Req<'RequestCancelWorkflowExecutionRequest'>): Promise<object> {
    const ex = this.findOpenRun(this.ns(r.namespace), r.workflowExecution);
    this.requestCancel(ex, r.reason ?? '', r.identity ?? '', null, 0);
    await this.commit();
    return {};
  }

  async TerminateWorkflowExecution(r: Req<'TerminateWorkflowExecutionRequest'>): Promise<object> {
    const ex = this.findOpenRun(this.ns(r.namespace), r.workflowExecution);
    this.terminate(ex, r.reason ?? '', r.details, r.identity ?? '');
    await this.commit();
    return {};
  }

  // ---------------------------------------------------------------- queries

  async QueryWorkflow(r: Req<'QueryWorkflowRequest'>, onCancel: (c: () => void) => void): Promise<Req<'QueryWorkflowResponse'>> {
    const ex = this.findRun(this.ns(r.namespace), r.execution);
    const C = enums.QueryRejectCondition;
    const status = ex.s.status;
    if (
      (r.queryRejectCondition === C.QUERY_REJECT_CONDITION_NOT_OPEN && status !== Status.WORKFLOW_EXECUTION_STATUS_RUNNING) ||
      (r.queryRejectCondition === C.QUERY_REJECT_CONDITION_NOT_COMPLETED_CLEANLY &&
        status !== Status.WORKFLOW_EXECUTION_STATUS_RUNNING &&
        status !== Status.WORKFLOW_EXECUTION_STATUS_COMPLETED)
    ) {
      return { queryRejected: { status } };
    }
    return await new Promise<Req<'QueryWorkflowResponse'>>((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        this.queries.delete(id);
        reject(new RpcError(Code.DEADLINE_EXCEEDED, 'query timed out: no worker answered'));
      }, 60_000);
      const q: PendingQuery = {
        id,
        runKey: execKey(ex.s.namespace, ex.s.runId),
        query: r.query ?? {},
        resolve: (v) => {
          clearTimeout(timer);
          this.queries.delete(id);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          this.queries.delete(id);
          reject(e);
        },
        dispatched: false,
        attachedTo: 0,
      };
      this.queries.set(id, q);
      onCancel(() => q.reject(new RpcError(Code.CANCELLED, 'query cancelled')));
      this.dispatchPendingQueries(ex);
    });
  }

  /**
   * Queries go out as legacy query tasks when no workflow task is pending and the workflow has run once;
   * while one is pending they ride along with it (the task's `queries`), as the real server does.
   */
  private dispatchPendingQueries(ex: Execution): void {
    const s = ex.s;
    const runKey = execKey(s.namespace, s.runId);
    if (s.wft.phase !== 'none') return;
    if (this.isOpen(ex) && s.lastWftCompletedEventId === 0) return;
    for (const q of this.queries.values()) {
      if (q.runKey !== runKey || q.dispatched) continue;
      q.dispatched = true;
      this.queues.offer(this.queueKey(s.namespace, s.taskQueue, 'wf'), { kind: 'query', queryId: q.id });
    }
  }

  private startQueryTask(queryId: string): Req<'PollWorkflowTaskQueueResponse'> | null {
    const q = this.queries.get(queryId);
    if (!q) return null;
    const ex = this.runs.get(q.runKey);
    if (!ex) return null;
    const s = ex.s;
    return {
      taskToken: encodeToken({ k: 'query', ns: s.namespace, r: s.runId, s: 0, a: 0, q: queryId }),
      workflowExecution: { workflowId: s.workflowId, runId: s.runId },
      workflowType: { name: s.workflowType },
      previousStartedEventId: s.lastCompletedStartedEventId,
      startedEventId: s.lastCompletedStartedEventId,
      history: { events: ex.history },
      query: q.query,
      workflowExecutionTaskQueue: { name: s.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    };
  }

  private answerAttachedQueries(ex: Execution, results: Record<string, Plain<temporal.api.query.v1.IWorkflowQueryResult>>): void {
    for (const [id, res] of Object.entries(results)) {
      const q = this.queries.get(id);
      if (!q) continue;
      if (res.resultType === enums.QueryResultType.QUERY_RESULT_TYPE_ANSWERED) q.resolve({ queryResult: res.answer });
      else q.reject(new RpcError(Code.INVALID_ARGUMENT, res.errorMessage || res.failure?.message || 'query failed'));
    }
    // Queries the task carried but did not answer go out again.
    const runKey = execKey(ex.s.namespace, ex.s.runId);
    for (const q of this.queries.values()) {
      if (q.runKey === runKey && q.attachedTo === ex.s.wft.scheduledEventId) {
        q.dispatched = false;
        q.attachedTo = 0;
      }
    }
  }

  async RespondQueryTaskCompleted(r: Req<'RespondQueryTaskCompletedRequest'>): Promise<object> {
    const t = decodeToken(r.taskToken);
    const q = t.q ? this.queries.get(t.q) : undefined;
    if (!q) throw notFound('query not found');
    if (r.completedType === enums.QueryResultType.QUERY_RESULT_TYPE_ANSWERED) {
      q.resolve({ queryResult: r.queryResult });
    } else {
      q.reject(new RpcError(Code.INVALID_ARGUMENT, r.errorMessage || r.failure?.message || 'query failed'));
    }
    return {};
  }

  // ---------------------------------------------------------------- updates

  private processMessage(ex: Execution, m: Message, completedId: number): void {
    const s = ex.s;
    const typeUrl = m.body?.type_url ?? '';
    const value = m.body?.value ?? new Uint8Array();
    const u = s.updates[m.protocolInstanceId ?? ''];
    const U = pb.temporal.api.update.v1;
    if (typeUrl.endsWith('update.v1.Acceptance')) {
      const acc = decodePlain(U.Acceptance, value);
      const e = this.appendNow(
        ex,
        this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 'workflowExecutionUpdateAcceptedEventAttributes', {
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
      this.appendNow(
        ex,
        this.event(ex, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, 'workflowExecutionUpdateCompletedEventAttributes', {
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
    this.markDirty(ex);
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
    await this.waitFor(execKey(ex.s.namespace, ex.s.runId), CALL_WAIT_MS, () => (reached() ? true : undefined), onCancel);
    return this.updateResponse(ex, ex.s.updates[u.updateId] ?? u);
  }

  async UpdateWorkflowExecution(
    r: Req<'UpdateWorkflowExecutionRequest'>,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'UpdateWorkflowExecutionResponse'>> {
    const namespace = this.ns(r.namespace);
    const ex = this.findRun(namespace, r.workflowExecution);
    const updateId = r.request?.meta?.updateId || randomUUID();
    let u = ex.s.updates[updateId];
    if (!u) {
      if (!this.isOpen(ex)) throw notFound('workflow execution already completed');
      u = {
        updateId,
        phase: 'admitted',
        request: { ...r.request, meta: { ...r.request?.meta, updateId } },
        acceptedEventId: 0,
        outcome: null,
      };
      ex.s.updates[updateId] = u;
      this.scheduleWorkflowTask(ex, true);
      this.markDirty(ex);
      await this.commit();
    }
    const stage = r.waitPolicy?.lifecycleStage || enums.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED;
    return this.awaitUpdate(ex, u, stage, onCancel);
  }

  async PollWorkflowExecutionUpdate(
    r: Req<'PollWorkflowExecutionUpdateRequest'>,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'PollWorkflowExecutionUpdateResponse'>> {
    const ex = this.findRun(this.ns(r.namespace), r.updateRef?.workflowExecution);
    const u = ex.s.updates[r.updateRef?.updateId ?? ''];
    if (!u) throw notFound(`update ${r.updateRef?.updateId ?? ''} not found`);
    const stage = r.waitPolicy?.lifecycleStage || enums.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;
    const resp = await this.awaitUpdate(ex, u, stage, onCancel);
    return { outcome: resp.outcome, stage: resp.stage, updateRef: resp.updateRef };
  }

  // ---------------------------------------------------------------- history & describe

  async GetWorkflowExecutionHistory(
    r: Req<'GetWorkflowExecutionHistoryRequest'>,
    onCancel: (c: () => void) => void,
  ): Promise<Req<'GetWorkflowExecutionHistoryResponse'>> {
    const namespace = this.ns(r.namespace);
    let ex: Execution;
    let offset = 0;
    let upTo = Infinity;
    if (r.nextPageToken && r.nextPageToken.length > 0) {
      const t = JSON.parse(Buffer.from(r.nextPageToken).toString('utf8')) as { runId: string; offset: number; upTo: number };
      const found = this.runs.get(execKey(namespace, t.runId));
      if (!found) throw notFound('workflow execution not found');
      ex = found;
      offset = t.offset;
      upTo = t.upTo || Infinity;
    } else {
      ex = this.findRun(namespace, r.execution);
    }
    const closeOnly = r.historyEventFilterType === enums.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT;
    if (r.waitNewEvent) {
      const known = ex.history.length;
      await this.waitFor(
        execKey(namespace, ex.s.runId),
        CALL_WAIT_MS,
        () => {
          if (!this.isOpen(ex)) return true;
          if (!closeOnly && ex.history.length > (offset || known)) return true;
          return undefined;
        },
        onCancel,
      );
    }
    if (closeOnly) {
      if (this.isOpen(ex)) return { history: { events: [] }, nextPageToken: Buffer.from(JSON.stringify({ runId: ex.s.runId, offset: 0, upTo: 0 })) };
      return { history: { events: ex.history.slice(-1) } };
    }
    const pageSize = r.maximumPageSize && r.maximumPageSize > 0 ? r.maximumPageSize : HISTORY_PAGE;
    const end = Math.min(ex.history.length, upTo, offset + pageSize);
    const events = ex.history.slice(offset, end);
    const more = end < Math.min(ex.history.length, upTo) || (r.waitNewEvent && this.isOpen(ex));
    return {
      history: { events },
      nextPageToken: more ? this.pageToken(ex.s.runId, end, upTo === Infinity ? 0 : upTo) : undefined,
    };
  }

  async GetWorkflowExecutionHistoryReverse(
    r: Req<'GetWorkflowExecutionHistoryReverseRequest'>,
  ): Promise<Req<'GetWorkflowExecutionHistoryReverseResponse'>> {
    const ex = this.findRun(this.ns(r.namespace), r.execution);
    const pageSize = r.maximumPageSize && r.maximumPageSize > 0 ? r.maximumPageSize : HISTORY_PAGE;
    const start = r.nextPageToken?.length ? Number(Buffer.from(r.nextPageToken).toString()) : ex.history.length;
    const from = Math.max(0, start - pageSize);
    return {
      history: { events: ex.history.slice(from, start).reverse() },
      nextPageToken: from > 0 ? Buffer.from(String(from)) : undefined,
    };
  }

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
    const ex = this.findRun(this.ns(r.namespace), r.execution);
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
    const name = this.ns(r.namespace);
    return {
      namespaceInfo: {
        name,
        state: enums.NamespaceState.NAMESPACE_STATE_REGISTERED,
        id: Buffer.from(name).toString('hex'),
        capabilities: { eagerWorkflowStart: false, syncUpdate: true, asyncUpdate: true },
      },
      config: { workflowExecutionRetentionTtl: msDuration(this.retentionOf(name)) },
      isGlobalNamespace: false,
    };
  }

  async ListNamespaces(): Promise<Req<'ListNamespacesResponse'>> {
    const out = [];
    for (const n of this.namespaces) out.push(await this.DescribeNamespace({ namespace: n }));
    return { namespaces: out };
  }

  async RegisterNamespace(r: Req<'RegisterNamespaceRequest'>): Promise<object> {
    if (!r.namespace) throw invalid('namespace is required');
    if (this.namespaces.has(r.namespace)) throw new RpcError(Code.ALREADY_EXISTS, `namespace ${r.namespace} already exists`);
    this.namespaces.add(r.namespace);
    const retentionMs = durationMs(r.workflowExecutionRetentionPeriod);
    if (retentionMs > 0) this.namespaceRetentionMs.set(r.namespace, retentionMs);
    this.markServerDirty();
    await this.commit();
    return {};
  }

  async ShutdownWorker(r: Req<'ShutdownWorkerRequest'>): Promise<object> {
    const namespace = this.ns(r.namespace);
    const sticky = r.stickyTaskQueue;
    if (!sticky) return {};
    // Tasks waiting on the departing worker's sticky queue go to the normal queue right away.
    this.queues.drain(this.queueKey(namespace, sticky, 'wf'));
    for (const ex of this.runs.values()) {
      if (ex.s.namespace !== namespace || ex.s.sticky?.queue !== sticky) continue;
      if (ex.s.wft.phase === 'scheduled' && ex.s.wft.sticky) this.moveToNormalQueue(ex);
      else ex.s.sticky = null;
    }
    await this.commit();
    return {};
  }

  async ResetStickyTaskQueue(r: Req<'ResetStickyTaskQueueRequest'>): Promise<object> {
    const ex = this.findRun(this.ns(r.namespace), r.execution);
    ex.s.sticky = null;
    if (ex.s.wft.phase === 'scheduled' && ex.s.wft.sticky) this.moveToNormalQueue(ex);
    await this.commit();
    return {};
  }

  async DescribeTaskQueue(r: Req<'DescribeTaskQueueRequest'>): Promise<Req<'DescribeTaskQueueResponse'>> {
    this.ns(r.namespace);
    return { pollers: [] };
  }

  /** Every run the engine holds (open and retained closed ones). */
  executions(): IterableIterator<Execution> {
    return this.runs.values();
  }

  /** Search attributes known to this server (OperatorService.ListSearchAttributes). */
  searchAttributeTypes(): Map<string, string> {
    return this.saTypes;
  }

  /** Registers search attribute types; durable (journaled) before it resolves. */
  async addSearchAttributes(attrs: Record<string, string>): Promise<void> {
    for (const [k, v] of Object.entries(attrs)) this.saTypes.set(k, v);
    this.markServerDirty();
    await this.commit();
  }
}


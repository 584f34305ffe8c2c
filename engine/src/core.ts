// The state every part of the engine shares — runs and their index, task queues, deadlines, pending queries,
// waiting callers — and the primitives over it: lookups, history appending, named deadlines on the clock,
// change tracking and journal staging. The concern modules (workflow-tasks.ts, activity-tasks.ts, ...) are
// functions over one EngineCore; engine.ts wires the gRPC handlers to them.
import { Clock, type TimerHandle } from './clock.js';
import { DEFAULT_DYNAMIC_CONFIG, type DynamicConfig } from './dynamic-config.js';
import { invalid, namespaceNotFound, notFound } from './errors.js';
import { StateCursor } from './journal-delta.js';
import type { Journal, JournalRecord } from './journal.js';
import { serialize } from './journal-codec.js';
import { TaskQueues } from './matching.js';
import {
  Status,
  msTs,
  num,
  pb,
  type temporal,
  type Command,
  type HistoryEvent,
  type Plain,
  type Req,
  type SearchAttributes,
} from './proto.js';
import { execKey, type ActivityState, type BufferedGroup, type Execution } from './state.js';

/** How long a caller waiting on a run (update stage, history long poll) waits before it gets an answer anyway. */
export const CALL_WAIT_MS = 20_000;

/** Journal key of the server record (namespaces, search attributes); execution keys always contain '/'. */
export const SERVER_RECORD_KEY = '#server';

export interface ServerRecord {
  namespaces: string[];
  searchAttributes: Record<string, string>;
  /** Retention of namespaces registered with their own. */
  retentionMs?: Record<string, number>;
  /** How far the dev-server clock was advanced (the sandbox clock); restored so time never goes back. */
  clockOffsetMs?: number;
}

const DEFAULT_RETENTION_MS = 24 * 3600 * 1000;

/**
 * The history's size in bytes as Temporal counts it: the protobuf encoding of its events (each framed as an
 * element of `History.events`). Each event is encoded once, the first time the size is asked for after it was
 * appended; after a restart the count starts again from the restored events.
 */
export function historySizeBytes(ex: Execution): number {
  ex.sized ??= { events: 0, bytes: 0 };
  const sized = ex.sized;
  for (; sized.events < ex.history.length; sized.events++) sized.bytes += encodedEventSize(ex.history[sized.events]!);
  return sized.bytes;
}

const HistoryEventType = pb.temporal.api.history.v1.HistoryEvent;

function encodedEventSize(e: HistoryEvent): number {
  // The writer's length is known before finish(), which would only copy the bytes out.
  const length = HistoryEventType.encode(e as temporal.api.history.v1.IHistoryEvent).len;
  return 1 + varintSize(length) + length;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size++;
  }
  return size;
}

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

export type TaskRef =
  | { kind: 'wft'; runKey: string; scheduledEventId: number }
  | { kind: 'act'; runKey: string; scheduledEventId: number; attempt: number }
  | { kind: 'query'; queryId: string };

export interface PendingQuery {
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

/** How an RPC handler learns that its caller went away. */
export type OnCancel = (c: () => void) => void;

type WorkflowService = typeof temporal.api.workflowservice.v1;
/** WorkflowService method names (those with a `<name>Request` and a `<name>Response` message), e.g. 'StartWorkflowExecution'. */
export type RpcName = {
  [K in keyof WorkflowService]: K extends `${infer M}Request`
    ? `${M}Response` extends keyof WorkflowService
      ? M
      : never
    : never;
}[keyof WorkflowService];
type Message<K extends string> = K extends keyof WorkflowService ? Req<K> : never;
export type RpcRequest<M extends RpcName> = Message<`${M}Request`>;
export type RpcResponse<M extends RpcName> = Message<`${M}Response`>;
/** The handler of WorkflowService method M over the shared core. */
export type Rpc<M extends RpcName> = (core: EngineCore, r: RpcRequest<M>, onCancel: OnCancel) => Promise<RpcResponse<M>>;

/** What happens when a named deadline of a run comes due (deadlines.ts). */
export type DeadlineHandler = (core: EngineCore, ex: Execution, name: string) => void;

/** What is checked when an open run's history grew (limits.ts: the history limits). */
export type HistoryGrownHandler = (core: EngineCore, ex: Execution) => void;

export interface EngineOptions {
  timeSkipping: boolean;
  /** How long closed executions are kept (namespace retention); 24 h by default. */
  retentionMs?: number;
  namespaces: string[];
  searchAttributes: Record<string, string>;
  journal?: Journal;
  /** Dynamic config settings given on the command line; Temporal's defaults for the rest. */
  dynamicConfig?: Partial<DynamicConfig>;
}

export class EngineCore {
  readonly clock: Clock;
  readonly runs = new Map<string, Execution>();
  /** namespace/workflowId -> run keys, oldest first. */
  readonly byWorkflowId = new Map<string, string[]>();
  readonly queues = new TaskQueues<TaskRef>();
  readonly timers = new Map<string, TimerHandle>();
  readonly stickyTimers = new Map<string, NodeJS.Timeout>();
  readonly queries = new Map<string, PendingQuery>();
  readonly waiters = new Map<string, Set<Waiter>>();
  readonly dirty = new Set<Execution>();
  /** Open runs whose history grew since the last commit: the history limits are checked on them at the commit. */
  readonly grown = new Set<Execution>();
  readonly namespaces: Set<string>;
  readonly namespaceRetentionMs = new Map<string, number>();
  readonly saTypes: Map<string, string>;
  readonly journal: Journal | undefined;
  readonly dynamicConfig: DynamicConfig;
  /** Namespaces or search attributes changed since the server record was last journaled. */
  serverDirty = false;
  taskId = 1;

  constructor(
    private readonly opts: EngineOptions,
    private readonly onDeadline: DeadlineHandler,
    private readonly onHistoryGrown: HistoryGrownHandler = () => {},
  ) {
    this.clock = new Clock(opts.timeSkipping);
    // An advanced dev-server clock is journaled with the server record (time-skipping mode never has a journal).
    if (!opts.timeSkipping) this.clock.onOffsetChange = () => this.markServerDirty();
    this.namespaces = new Set(['default', ...opts.namespaces]);
    this.saTypes = new Map([...Object.entries(PREDEFINED_SEARCH_ATTRIBUTES), ...Object.entries(opts.searchAttributes)]);
    this.journal = opts.journal;
    this.dynamicConfig = { ...DEFAULT_DYNAMIC_CONFIG, ...opts.dynamicConfig };
  }

  // ---------------------------------------------------------------- change tracking & journal staging

  /** Namespaces and search attributes live in one journal record beside the executions. */
  markServerDirty(): void {
    if (this.journal) this.serverDirty = true;
  }

  private serverRecord(): JournalRecord {
    const state: ServerRecord = {
      namespaces: [...this.namespaces],
      searchAttributes: Object.fromEntries(this.saTypes),
      retentionMs: Object.fromEntries(this.namespaceRetentionMs),
      ...(this.clock.offsetMs > 0 && !this.clock.timeSkipping ? { clockOffsetMs: this.clock.offsetMs } : {}),
    };
    return { key: SERVER_RECORD_KEY, base: 0, events: [], state };
  }

  markDirty(ex: Execution): void {
    ex.s.stateTransitions++;
    if (!this.journal) return;
    this.dirty.add(ex);
  }

  /**
   * Journals every changed run; resolves once durable. Every change ends here, so this is where a history that
   * grew is checked against the limits (as Temporal checks on every update of a run, not only on completions).
   */
  commit(): Promise<void> {
    if (this.grown.size > 0) this.checkGrown();
    const journal = this.journal;
    if (!journal) return Promise.resolve();
    this.stageDirty(journal);
    return journal.flush();
  }

  private checkGrown(): void {
    // A run the check terminates grows by its close events, and is then closed: visited once more, skipped.
    for (const ex of this.grown) {
      this.grown.delete(ex);
      if (this.isOpen(ex)) this.onHistoryGrown(this, ex);
    }
  }

  stageDirty(journal: Journal): void {
    if (this.serverDirty) {
      journal.append(this.serverRecord());
      this.serverDirty = false;
    }
    if (this.dirty.size === 0) return;
    for (const ex of this.dirty) {
      const base = Math.min(ex.persistedLength, ex.history.length);
      ex.cursor ??= new StateCursor();
      const delta = ex.cursor.diff(ex.s);
      // Marked dirty but nothing to say (e.g. a state transition counted before, then undone).
      if (delta === null && base === ex.persistedLength && base === ex.history.length) continue;
      // Built from the pieces: the delta is already JSON, and the history is only what was appended.
      const events = base === ex.history.length ? '[]' : serialize(ex.history.slice(base));
      const key = JSON.stringify(execKey(ex.s.namespace, ex.s.runId));
      journal.appendLine(`{"key":${key},"base":${base},"events":${events}${delta === null ? '' : `,"d":${delta}`}}`);
      ex.persistedLength = ex.history.length;
    }
    this.dirty.clear();
    if (journal.wantsCompaction) journal.compact(this.snapshot());
  }

  /** The journal's snapshot: the server record and every run whole (the cursors stay valid: nothing is dirty). */
  private *snapshot(): Generator<JournalRecord> {
    yield this.serverRecord();
    for (const ex of this.runs.values()) {
      yield { key: execKey(ex.s.namespace, ex.s.runId), base: 0, events: ex.history, state: ex.s };
    }
  }

  /** How long closed executions of a namespace are kept: its own retention, else the server's. */
  retentionOf(namespace: string): number {
    return this.namespaceRetentionMs.get(namespace) ?? this.opts.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  // ---------------------------------------------------------------- lookup helpers

  indexRun(ex: Execution): void {
    const k = `${ex.s.namespace}/${ex.s.workflowId}`;
    const list = this.byWorkflowId.get(k) ?? [];
    list.push(execKey(ex.s.namespace, ex.s.runId));
    list.sort((a, b) => (this.runs.get(a)?.s.startTime ?? 0) - (this.runs.get(b)?.s.startTime ?? 0));
    this.byWorkflowId.set(k, list);
  }

  latestRun(namespace: string, workflowId: string): Execution | undefined {
    const list = this.byWorkflowId.get(`${namespace}/${workflowId}`);
    const last = list?.[list.length - 1];
    return last ? this.runs.get(last) : undefined;
  }

  findRun(namespace: string, exec: Plain<temporal.api.common.v1.IWorkflowExecution> | null | undefined): Execution {
    const workflowId = exec?.workflowId ?? '';
    if (!workflowId) throw invalid('workflow id is required');
    const runId = exec?.runId ?? '';
    const ex = runId ? this.runs.get(execKey(namespace, runId)) : this.latestRun(namespace, workflowId);
    if (!ex || ex.s.workflowId !== workflowId) {
      throw notFound(`workflow execution not found for workflow ID "${workflowId}" and run ID "${runId}"`);
    }
    return ex;
  }

  findOpenRun(namespace: string, exec: Plain<temporal.api.common.v1.IWorkflowExecution> | null | undefined): Execution {
    const ex = this.findRun(namespace, exec);
    if (!this.isOpen(ex)) throw notFound('workflow execution already completed');
    return ex;
  }

  /** The open run, or undefined where findOpenRun would throw. */
  openRunOrUndefined(
    namespace: string,
    exec: Plain<temporal.api.common.v1.IWorkflowExecution> | null | undefined,
  ): Execution | undefined {
    try {
      return this.findOpenRun(namespace, exec);
    } catch {
      return undefined;
    }
  }

  isOpen(ex: Execution): boolean {
    return ex.s.status === Status.WORKFLOW_EXECUTION_STATUS_RUNNING;
  }

  /** The namespace of a request (default when empty); NOT_FOUND for unknown ones. */
  ns(namespace: string | null | undefined): string {
    const n = namespace || 'default';
    if (!this.namespaces.has(n)) throw namespaceNotFound(n);
    return n;
  }

  actKey(ex: Execution, a: ActivityState): string {
    return `act:${ex.s.runId}:${a.scheduledEventId}`;
  }

  queueKey(namespace: string, name: string, kind: 'wf' | 'act'): string {
    return `${namespace}\u0000${kind}\u0000${name}`;
  }

  // ---------------------------------------------------------------- waiting callers

  waitFor<T>(runKey: string, timeoutMs: number, probe: () => T | undefined, onCancel?: OnCancel): Promise<T | undefined> {
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

  notify(ex: Execution): void {
    const set = this.waiters.get(execKey(ex.s.namespace, ex.s.runId));
    if (!set) return;
    for (const w of [...set]) w.check();
  }

  // ---------------------------------------------------------------- named deadlines

  setDeadline(ex: Execution, name: string, at: number): void {
    ex.s.deadlines[name] = at;
    this.armDeadline(ex, name, at);
  }

  clearDeadline(ex: Execution, name: string): void {
    delete ex.s.deadlines[name];
    const k = `${ex.s.runId}|${name}`;
    this.timers.get(k)?.cancel();
    this.timers.delete(k);
  }

  armDeadline(ex: Execution, name: string, at: number): void {
    const k = `${ex.s.runId}|${name}`;
    this.timers.get(k)?.cancel();
    this.timers.set(
      k,
      this.clock.schedule(at, () => {
        this.timers.delete(k);
        if (ex.s.deadlines[name] !== at) return;
        delete ex.s.deadlines[name];
        this.onDeadline(this, ex, name);
        void this.commit();
      }),
    );
  }

  // ---------------------------------------------------------------- history

  event(type: number, field: string, attrs: object): HistoryEvent {
    return {
      eventId: 0,
      eventTime: msTs(this.clock.now()),
      eventType: type,
      taskId: this.taskId++,
      [field]: attrs,
    } as HistoryEvent;
  }

  appendNow(ex: Execution, e: HistoryEvent): HistoryEvent {
    e.eventId = ex.history.length + 1;
    ex.history.push(e);
    this.markDirty(ex);
    this.grown.add(ex);
    return e;
  }

  /** Appends the event of a workflow task's command; it carries the command's user metadata. */
  appendCommandEvent(ex: Execution, c: Command, type: number, field: string, attrs: object): HistoryEvent {
    const e = this.event(type, field, attrs);
    if (c.userMetadata) e.userMetadata = c.userMetadata;
    return this.appendNow(ex, e);
  }

  appendGroup(ex: Execution, g: BufferedGroup): void {
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

  /** Drops the events from `length` on (a discarded speculative workflow task) and their share of the history size. */
  truncateHistory(ex: Execution, length: number): void {
    const sized = ex.sized;
    if (sized && sized.events > length) {
      for (let i = length; i < sized.events; i++) sized.bytes -= encodedEventSize(ex.history[i]!);
      sized.events = length;
    }
    ex.history.length = length;
    // The next journal line rewrites from here (a shorter `base`).
    ex.persistedLength = Math.min(ex.persistedLength, length);
  }

  flushBuffered(ex: Execution): boolean {
    if (ex.s.buffered.length === 0) return false;
    for (const g of ex.s.buffered.splice(0)) this.appendGroup(ex, g);
    return true;
  }

  /** Adds the `type` metadata the SDK needs to decode typed search attributes, from the registered types. */
  typedSearchAttributes(sa: SearchAttributes | null | undefined): SearchAttributes | null {
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
}

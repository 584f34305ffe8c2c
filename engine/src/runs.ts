// Creating a run: its initial state, the WorkflowExecutionStarted event (and the signal of a signal-with-start),
// its run / execution deadlines, and its first workflow task (or the start delay before it).
import { randomUUID } from 'node:crypto';
import type { EngineCore } from './core.js';
import {
  EventType,
  Status,
  enums,
  msDuration,
  msTs,
  type temporal,
  type Failure,
  type Payloads,
  type Plain,
  type RetryPolicy,
  type SearchAttributes,
} from './proto.js';
import { execKey, type Execution, type ExecutionState, type Priority } from './state.js';
import { scheduleWorkflowTask } from './workflow-tasks.js';

const DEFAULT_WFT_TIMEOUT_MS = 10_000;

export interface NewRunParams {
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
  /** The root of the run's tree of child workflows; absent for a run that has no parent (it is its own root). */
  rootExecution?: Plain<temporal.api.common.v1.IWorkflowExecution> | null;
  priority?: Priority | null;
}

/** The signal of a signal-with-start: written right after the started event, before the first workflow task. */
export interface StartSignal {
  name: string;
  input: Payloads | null | undefined;
  header: Plain<temporal.api.common.v1.IHeader> | null | undefined;
  identity: string;
}

export function newRun(core: EngineCore, namespace: string, p: NewRunParams, signal?: StartSignal): Execution {
  const now = core.clock.now();
  const s = initialState(core, namespace, p, now);
  const ex: Execution = { s, history: [], persistedLength: 0 };
  const started = core.event(
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    'workflowExecutionStartedEventAttributes',
    startedAttributes(p, s),
  );
  if (p.userMetadata) started.userMetadata = p.userMetadata;
  core.appendNow(ex, started);
  if (signal) {
    core.appendNow(
      ex,
      core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'workflowExecutionSignaledEventAttributes', {
        signalName: signal.name,
        input: signal.input,
        identity: signal.identity,
        header: signal.header,
      }),
    );
  }
  const key = execKey(namespace, s.runId);
  core.runs.set(key, ex);
  core.indexRun(ex);
  if (s.runTimeoutMs) core.setDeadline(ex, 'run', now + s.runTimeoutMs);
  if (s.executionExpirationTime) core.setDeadline(ex, 'execution', s.executionExpirationTime);
  if (p.startDelayMs) core.setDeadline(ex, 'backoff', now + p.startDelayMs);
  else scheduleWorkflowTask(core, ex);
  core.markDirty(ex);
  return ex;
}

function initialState(core: EngineCore, namespace: string, p: NewRunParams, now: number): ExecutionState {
  const runId = randomUUID();
  const runTimeoutMs = p.runTimeoutMs || p.executionTimeoutMs;
  const expiration = p.executionExpirationTime ?? (p.executionTimeoutMs ? now + p.executionTimeoutMs : 0);
  const wftTimeout = Math.min(p.workflowTaskTimeoutMs || DEFAULT_WFT_TIMEOUT_MS, 120_000);
  return {
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
    searchAttributes: core.typedSearchAttributes(p.searchAttributes),
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
    priority: p.priority ?? null,
    buildIds: [],
    workerVersion: null,
  };
}

function startedAttributes(p: NewRunParams, s: ExecutionState): object {
  return {
    workflowType: { name: p.workflowType },
    taskQueue: { name: p.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    input: p.input,
    header: p.header,
    workflowExecutionTimeout: p.executionTimeoutMs ? msDuration(p.executionTimeoutMs) : undefined,
    workflowRunTimeout: s.runTimeoutMs ? msDuration(s.runTimeoutMs) : undefined,
    workflowTaskTimeout: msDuration(s.workflowTaskTimeoutMs),
    identity: p.identity,
    originalExecutionRunId: s.runId,
    firstExecutionRunId: s.firstRunId,
    continuedExecutionRunId: p.continuedRunId,
    initiator: p.initiator,
    lastCompletionResult: p.lastCompletionResult,
    continuedFailure: p.continuedFailure,
    attempt: s.attempt,
    retryPolicy: p.retryPolicy,
    workflowExecutionExpirationTime: s.executionExpirationTime ? msTs(s.executionExpirationTime) : undefined,
    firstWorkflowTaskBackoff: p.startDelayMs ? msDuration(p.startDelayMs) : undefined,
    memo: p.memo,
    searchAttributes: s.searchAttributes,
    workflowId: p.workflowId,
    parentWorkflowNamespace: p.parent?.namespace,
    parentWorkflowExecution: p.parent ? { workflowId: p.parent.workflowId, runId: p.parent.runId } : undefined,
    parentInitiatedEventId: p.parent?.initiatedEventId,
    // As in Temporal, only a child's started event names the root; a run without a parent is its own root.
    rootWorkflowExecution: p.rootExecution ?? undefined,
    priority: p.priority ?? undefined,
  };
}

/**
 * Temporal's priority inheritance: each field of `override` that is set (non-zero, non-empty) wins over the
 * same field of `base` (a child's command over its parent's priority, an activity's over its workflow's).
 */
export function mergePriority(
  base: Priority | null | undefined,
  override: Priority | null | undefined,
): Priority | null | undefined {
  if (!base) return override;
  if (!override) return base;
  return {
    priorityKey: override.priorityKey || base.priorityKey,
    fairnessKey: override.fairnessKey || base.fairnessKey,
    fairnessWeight: override.fairnessWeight || base.fairnessWeight,
  };
}

// How runs end and carry on: closing a run (and what that tells its parent and does to its children under their
// parent-close policies), run / execution timeouts, terminate, cancel requests, and the next run of a
// continue-as-new or a retry.
import type { EngineCore, Rpc } from './core.js';
import {
  EventType,
  RetryState,
  Status,
  TimeoutType,
  durationMs,
  enums,
  msDuration,
  type temporal,
  type Failure,
  type HistoryEvent,
  type Payloads,
  type Plain,
} from './proto.js';
import { nextRetry, retrySpec } from './retry.js';
import { newRun } from './runs.js';
import { abortUpdates } from './signals-updates.js';
import { execKey, type Execution } from './state.js';
import { addExternal, workflowTaskDone } from './workflow-tasks.js';

type ContinueAsNewAttributes = Plain<temporal.api.command.v1.IContinueAsNewWorkflowExecutionCommandAttributes>;

/** `continued`: a next run carries on (continue-as-new, retry), so the parent keeps waiting and unaccepted updates move on. */
export function closeRun(core: EngineCore, ex: Execution, status: number, continued = false): void {
  const s = ex.s;
  s.status = status;
  s.closeTime = core.clock.now();
  for (const name of Object.keys(s.deadlines)) core.clearDeadline(ex, name);
  for (const a of Object.values(s.activities)) core.clock.setOutstanding(core.actKey(ex, a), false);
  s.activities = {};
  s.timers = {};
  workflowTaskDone(core, ex);
  s.buffered = [];
  abortUpdates(ex, continued);
  core.markDirty(ex);
  core.notify(ex);
  if (!continued) notifyParent(core, ex, status);
  // Children do not follow a parent into its next run: the policy applies whenever a run closes.
  applyParentClosePolicy(core, ex);
}

function notifyParent(core: EngineCore, ex: Execution, status: number): void {
  const s = ex.s;
  if (!s.parent) return;
  const parent = core.runs.get(execKey(s.parent.namespace, s.parent.runId));
  if (!parent || !core.isOpen(parent)) return;
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
  const [type, field] = CHILD_CLOSED[status] ?? CHILD_TERMINATED;
  addExternal(core, parent, [core.event(type, field, { ...base, ...childOutcome(status, last) })]);
}

/** The parent's event for each way a child run closes; any other status is a termination. */
const CHILD_CLOSED: Record<number, [type: number, field: string]> = {
  [Status.WORKFLOW_EXECUTION_STATUS_COMPLETED]: [
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
    'childWorkflowExecutionCompletedEventAttributes',
  ],
  [Status.WORKFLOW_EXECUTION_STATUS_FAILED]: [
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED,
    'childWorkflowExecutionFailedEventAttributes',
  ],
  [Status.WORKFLOW_EXECUTION_STATUS_CANCELED]: [
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED,
    'childWorkflowExecutionCanceledEventAttributes',
  ],
  [Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT]: [
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT,
    'childWorkflowExecutionTimedOutEventAttributes',
  ],
};
const CHILD_TERMINATED: [type: number, field: string] = [
  EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED,
  'childWorkflowExecutionTerminatedEventAttributes',
];

/** What the parent's event carries beyond the child's identity: the result, failure or details of its close event. */
function childOutcome(status: number, last: HistoryEvent | undefined): object {
  switch (status) {
    case Status.WORKFLOW_EXECUTION_STATUS_COMPLETED:
      return { result: last?.workflowExecutionCompletedEventAttributes?.result };
    case Status.WORKFLOW_EXECUTION_STATUS_FAILED:
      return {
        failure: last?.workflowExecutionFailedEventAttributes?.failure,
        retryState: last?.workflowExecutionFailedEventAttributes?.retryState,
      };
    case Status.WORKFLOW_EXECUTION_STATUS_CANCELED:
      return { details: last?.workflowExecutionCanceledEventAttributes?.details };
    case Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
      return { retryState: RetryState.RETRY_STATE_TIMEOUT };
    default:
      return {};
  }
}

function applyParentClosePolicy(core: EngineCore, ex: Execution): void {
  const P = enums.ParentClosePolicy;
  for (const c of Object.values(ex.s.children)) {
    const child = core.runs.get(execKey(c.namespace, c.runId));
    if (!child || !core.isOpen(child)) continue;
    if (c.parentClosePolicy === P.PARENT_CLOSE_POLICY_ABANDON) continue;
    if (c.parentClosePolicy === P.PARENT_CLOSE_POLICY_REQUEST_CANCEL) {
      requestCancel(core, child, 'by parent close policy', '', null, 0);
    } else {
      terminate(core, child, 'by parent close policy', null, '');
    }
  }
  ex.s.children = {};
}

/** A run timeout is retried under the workflow's retry policy (until the execution expires); an execution timeout is final. */
export function timeOutWorkflow(core: EngineCore, ex: Execution, runTimeout: boolean): void {
  const s = ex.s;
  core.flushBuffered(ex);
  let retryState: number = RetryState.RETRY_STATE_TIMEOUT;
  let newExecutionRunId: string | undefined;
  if (runTimeout && s.retryPolicy) {
    const failure: Failure = {
      message: 'workflow run timed out',
      timeoutFailureInfo: { timeoutType: TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE },
    };
    const next = nextRetry(retrySpec(s.retryPolicy), s.attempt, failure, core.clock.now(), s.executionExpirationTime);
    if ('delay' in next) {
      newExecutionRunId = startNextRun(core, ex, null, {
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
  core.appendNow(
    ex,
    core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, 'workflowExecutionTimedOutEventAttributes', {
      retryState,
      newExecutionRunId,
    }),
  );
  closeRun(core, ex, Status.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, newExecutionRunId !== undefined);
}

export function terminate(
  core: EngineCore,
  ex: Execution,
  reason: string,
  details: Payloads | null | undefined,
  identity: string,
): void {
  core.flushBuffered(ex);
  core.appendNow(
    ex,
    core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, 'workflowExecutionTerminatedEventAttributes', {
      reason,
      details,
      identity,
    }),
  );
  closeRun(core, ex, Status.WORKFLOW_EXECUTION_STATUS_TERMINATED);
}

export function requestCancel(
  core: EngineCore,
  ex: Execution,
  cause: string,
  identity: string,
  external: { workflowId: string; runId: string } | null,
  externalInitiatedEventId: number,
): void {
  if (ex.s.cancelRequested) return;
  ex.s.cancelRequested = true;
  addExternal(core, ex, [
    core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, 'workflowExecutionCancelRequestedEventAttributes', {
      cause,
      identity,
      externalInitiatedEventId: externalInitiatedEventId || undefined,
      externalWorkflowExecution: external ?? undefined,
    }),
  ]);
}

export const requestCancelWorkflowExecution: Rpc<'RequestCancelWorkflowExecution'> = async (core, r) => {
  const ex = core.findOpenRun(core.ns(r.namespace), r.workflowExecution);
  requestCancel(core, ex, r.reason ?? '', r.identity ?? '', null, 0);
  await core.commit();
  return {};
};

export const terminateWorkflowExecution: Rpc<'TerminateWorkflowExecution'> = async (core, r) => {
  const ex = core.findOpenRun(core.ns(r.namespace), r.workflowExecution);
  terminate(core, ex, r.reason ?? '', r.details, r.identity ?? '');
  await core.commit();
  return {};
};

/** Starts the run that continues this one (continue-as-new or a retry): same id, parent and first run. */
export function startNextRun(
  core: EngineCore,
  ex: Execution,
  a: ContinueAsNewAttributes | null,
  how: { initiator: number; failure: Failure | null; backoffMs: number; attempt: number },
): Execution {
  const s = ex.s;
  const first = ex.history[0]?.workflowExecutionStartedEventAttributes;
  const next = newRun(core, s.namespace, {
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
    priority: s.priority,
  });
  s.continuedAsNewRunId = next.s.runId;
  // The parent keeps waiting: its child record now points at the new run.
  if (s.parent) {
    const parent = core.runs.get(execKey(s.parent.namespace, s.parent.runId));
    const child = parent && Object.values(parent.s.children).find((c) => c.runId === s.runId);
    if (child) child.runId = next.s.runId;
  }
  return next;
}

export function continueAsNew(core: EngineCore, ex: Execution, completedId: number, a: ContinueAsNewAttributes | null): void {
  const backoffMs = durationMs(a?.backoffStartInterval);
  const next = startNextRun(core, ex, a, {
    initiator: enums.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW,
    failure: null,
    backoffMs,
    attempt: 1,
  });
  const n = next.s;
  core.appendNow(
    ex,
    core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, 'workflowExecutionContinuedAsNewEventAttributes', {
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
  closeRun(core, ex, Status.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, true);
}

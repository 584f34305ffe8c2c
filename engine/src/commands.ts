// Commands of a workflow task completion: the validation the server does before applying any of them, and one
// handler per command type writing its event(s), in command order. Work that must wait until every command
// is applied (signalling or cancelling another workflow, starting a child) goes into `after`.
import { closeActivity, scheduleActivity } from './activity-tasks.js';
import { startChild } from './child-workflows.js';
import type { EngineCore } from './core.js';
import { closeRun, continueAsNew, requestCancel, startNextRun } from './lifecycle.js';
import { log } from './log.js';
import { CommandType, EventType, RetryState, Status, durationMs, enums, num, type Command } from './proto.js';
import { nextRetry, retrySpec } from './retry.js';
import { signal } from './signals-updates.js';
import type { ActivityState, Execution } from './state.js';
import { addExternal } from './workflow-tasks.js';

/** Writes a command's event(s) and applies it to the run. */
type CommandHandler = (
  core: EngineCore,
  ex: Execution,
  c: Command,
  completedId: number,
  after: Array<() => void>,
  eager: ActivityState[],
) => void;

/** Checks the attributes the server validates before applying any command of a completion. */
export function invalidCommand(ex: Execution, commands: Command[]): { cause: number; message: string } | null {
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
          return {
            cause: C.WORKFLOW_TASK_FAILED_CAUSE_SCHEDULE_ACTIVITY_DUPLICATE_ID,
            message: `Activity ID ${a.activityId} is already in use.`,
          };
        }
        activityIds.add(a.activityId);
        break;
      }
      case CommandType.COMMAND_TYPE_START_TIMER: {
        const id = c.startTimerCommandAttributes?.timerId;
        if (!id)
          return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_TIMER_ATTRIBUTES, message: 'TimerId is not set on command.' };
        if (timers.has(id))
          return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_START_TIMER_DUPLICATE_ID, message: `Timer ID ${id} is already in use.` };
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
          return {
            cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_CHILD_EXECUTION_ATTRIBUTES,
            message: 'WorkflowId and WorkflowType are required.',
          };
        }
        break;
      }
      case CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION: {
        const a = c.signalExternalWorkflowExecutionCommandAttributes;
        if (!a?.execution?.workflowId || !a.signalName) {
          return {
            cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SIGNAL_WORKFLOW_EXECUTION_ATTRIBUTES,
            message: 'Execution and SignalName are required.',
          };
        }
        break;
      }
      default:
        break;
    }
  }
  return null;
}

export function isClosingCommand(t: number): boolean {
  return (
    t === CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION ||
    t === CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION ||
    t === CommandType.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION ||
    t === CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION
  );
}

/** Writes the command's event(s) through its handler; unknown command types are logged and ignored. */
export const applyCommand: CommandHandler = (core, ex, c, completedId, after, eager) => {
  const handler = c.commandType ? COMMAND_HANDLERS[c.commandType] : undefined;
  if (handler) handler(core, ex, c, completedId, after, eager);
  else log.warn('unsupported command ignored', { commandType: c.commandType });
};

// ---------------------------------------------------------------- activities

const scheduleActivityTask: CommandHandler = (core, ex, c, completedId, _after, eager) => {
  const act = scheduleActivity(core, ex, c, completedId);
  // The worker reserved a slot for it: hand the task back with this response instead of a poll.
  if (c.scheduleActivityTaskCommandAttributes?.requestEagerExecution && act.taskQueue === ex.s.taskQueue) eager.push(act);
};

const requestCancelActivityTask: CommandHandler = (core, ex, c, completedId, after) => {
  const sid = num(c.requestCancelActivityTaskCommandAttributes?.scheduledEventId);
  const a = ex.s.activities[sid];
  const e = core.appendCommandEvent(
    ex,
    c,
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
    'activityTaskCancelRequestedEventAttributes',
    {
      scheduledEventId: sid,
      workflowTaskCompletedEventId: completedId,
    },
  );
  if (!a) return;
  if (a.phase === 'started') {
    a.cancelRequested = true;
    a.cancelRequestedEventId = num(e.eventId);
    return;
  }
  const cancelRequestedId = num(e.eventId);
  closeActivity(core, ex, a);
  after.push(() =>
    addExternal(core, ex, [
      core.event(EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED, 'activityTaskCanceledEventAttributes', {
        scheduledEventId: sid,
        startedEventId: 0,
        latestCancelRequestedEventId: cancelRequestedId,
      }),
    ]),
  );
};

// ---------------------------------------------------------------- timers, markers, search attributes, memo

const startTimer: CommandHandler = (core, ex, c, completedId) => {
  const a = c.startTimerCommandAttributes!;
  const timerId = a.timerId ?? '';
  const e = core.appendCommandEvent(ex, c, EventType.EVENT_TYPE_TIMER_STARTED, 'timerStartedEventAttributes', {
    timerId,
    startToFireTimeout: a.startToFireTimeout,
    workflowTaskCompletedEventId: completedId,
  });
  const fireAt = core.clock.now() + durationMs(a.startToFireTimeout);
  ex.s.timers[timerId] = { startedEventId: num(e.eventId), fireAt };
  core.setDeadline(ex, `timer:${timerId}`, fireAt);
};

const cancelTimer: CommandHandler = (core, ex, c, completedId) => {
  const timerId = c.cancelTimerCommandAttributes?.timerId ?? '';
  const t = ex.s.timers[timerId];
  core.appendCommandEvent(ex, c, EventType.EVENT_TYPE_TIMER_CANCELED, 'timerCanceledEventAttributes', {
    timerId,
    startedEventId: t?.startedEventId ?? 0,
    workflowTaskCompletedEventId: completedId,
  });
  delete ex.s.timers[timerId];
  core.clearDeadline(ex, `timer:${timerId}`);
};

const recordMarker: CommandHandler = (core, ex, c, completedId) => {
  const a = c.recordMarkerCommandAttributes!;
  core.appendCommandEvent(ex, c, EventType.EVENT_TYPE_MARKER_RECORDED, 'markerRecordedEventAttributes', {
    markerName: a.markerName,
    details: a.details,
    header: a.header,
    failure: a.failure,
    workflowTaskCompletedEventId: completedId,
  });
};

const upsertWorkflowSearchAttributes: CommandHandler = (core, ex, c, completedId) => {
  const s = ex.s;
  const sa = core.typedSearchAttributes(c.upsertWorkflowSearchAttributesCommandAttributes?.searchAttributes);
  core.appendCommandEvent(
    ex,
    c,
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    'upsertWorkflowSearchAttributesEventAttributes',
    {
      searchAttributes: sa,
      workflowTaskCompletedEventId: completedId,
    },
  );
  const fields = { ...(s.searchAttributes?.indexedFields ?? {}) };
  for (const [k, v] of Object.entries(sa?.indexedFields ?? {})) {
    // An empty value unsets the attribute.
    if (!v.data || v.data.length === 0 || Buffer.from(v.data).toString() === 'null') delete fields[k];
    else fields[k] = v;
  }
  s.searchAttributes = { indexedFields: fields };
};

const modifyWorkflowProperties: CommandHandler = (core, ex, c, completedId) => {
  const s = ex.s;
  const memo = c.modifyWorkflowPropertiesCommandAttributes?.upsertedMemo;
  core.appendCommandEvent(ex, c, EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED, 'workflowPropertiesModifiedEventAttributes', {
    upsertedMemo: memo,
    workflowTaskCompletedEventId: completedId,
  });
  const fields = { ...(s.memo?.fields ?? {}) };
  for (const [k, v] of Object.entries(memo?.fields ?? {})) {
    if (!v.data || v.data.length === 0) delete fields[k];
    else fields[k] = v;
  }
  s.memo = { fields };
};

// ---------------------------------------------------------------- closing the run

/** Writes the command's close event and closes the run (`continued`: a next run carries on). */
function closeByCommand(
  core: EngineCore,
  ex: Execution,
  c: Command,
  status: number,
  type: number,
  field: string,
  attrs: object,
  continued = false,
) {
  core.appendCommandEvent(ex, c, type, field, attrs);
  closeRun(core, ex, status, continued);
}

const completeWorkflowExecution: CommandHandler = (core, ex, c, completedId) => {
  closeByCommand(
    core,
    ex,
    c,
    Status.WORKFLOW_EXECUTION_STATUS_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    'workflowExecutionCompletedEventAttributes',
    {
      result: c.completeWorkflowExecutionCommandAttributes?.result,
      workflowTaskCompletedEventId: completedId,
    },
  );
};

/** The run fails; under a retry policy with attempts left, a new run retries it (its id is in the failed event). */
const failWorkflowExecution: CommandHandler = (core, ex, c, completedId) => {
  const s = ex.s;
  const failure = c.failWorkflowExecutionCommandAttributes?.failure ?? null;
  const next = s.retryPolicy
    ? nextRetry(retrySpec(s.retryPolicy), s.attempt, failure, core.clock.now(), s.executionExpirationTime)
    : { retryState: RetryState.RETRY_STATE_RETRY_POLICY_NOT_SET };
  const FAILED = Status.WORKFLOW_EXECUTION_STATUS_FAILED;
  const type = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED;
  if (!('delay' in next)) {
    closeByCommand(core, ex, c, FAILED, type, 'workflowExecutionFailedEventAttributes', {
      failure,
      retryState: next.retryState,
      workflowTaskCompletedEventId: completedId,
    });
    return;
  }
  // As the server does: the run fails (status FAILED) and names the run that retries it.
  const retry = startNextRun(core, ex, null, {
    initiator: enums.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_RETRY,
    failure,
    backoffMs: next.delay,
    attempt: s.attempt + 1,
  });
  const attrs = {
    failure,
    retryState: RetryState.RETRY_STATE_IN_PROGRESS,
    workflowTaskCompletedEventId: completedId,
    newExecutionRunId: retry.s.runId,
  };
  closeByCommand(core, ex, c, FAILED, type, 'workflowExecutionFailedEventAttributes', attrs, true);
};

const cancelWorkflowExecution: CommandHandler = (core, ex, c, completedId) => {
  const details = c.cancelWorkflowExecutionCommandAttributes?.details;
  const attrs = { details, workflowTaskCompletedEventId: completedId };
  closeByCommand(
    core,
    ex,
    c,
    Status.WORKFLOW_EXECUTION_STATUS_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    'workflowExecutionCanceledEventAttributes',
    attrs,
  );
};

const continueAsNewWorkflowExecution: CommandHandler = (core, ex, c, completedId) => {
  continueAsNew(core, ex, completedId, c.continueAsNewWorkflowExecutionCommandAttributes ?? null);
};

// ---------------------------------------------------------------- other workflows

const startChildWorkflowExecution: CommandHandler = (core, ex, c, completedId, after) => {
  startChild(core, ex, c, completedId, after);
};

type SignalExternalAttributes = NonNullable<Command['signalExternalWorkflowExecutionCommandAttributes']>;
type CancelExternalAttributes = NonNullable<Command['requestCancelExternalWorkflowExecutionCommandAttributes']>;
type ExecutionRef = { workflowId?: string | null; runId?: string | null } | null | undefined;

const signalExternalWorkflowExecution: CommandHandler = (core, ex, c, completedId, after) => {
  const a = c.signalExternalWorkflowExecutionCommandAttributes!;
  const { execution, signalName, input, control, childWorkflowOnly, header } = a;
  const ns = a.namespace || ex.s.namespace;
  const e = core.appendCommandEvent(
    ex,
    c,
    EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
    'signalExternalWorkflowExecutionInitiatedEventAttributes',
    {
      namespace: ns,
      workflowExecution: execution,
      signalName,
      input,
      control,
      childWorkflowOnly,
      header,
      workflowTaskCompletedEventId: completedId,
    },
  );
  const initiatedEventId = num(e.eventId);
  after.push(() => signalExternal(core, ex, a, ns, initiatedEventId, completedId));
};

/** Signals the target run if it is open, else the signalling workflow hears that it failed. */
function signalExternal(
  core: EngineCore,
  ex: Execution,
  a: SignalExternalAttributes,
  ns: string,
  initiatedEventId: number,
  completedId: number,
): void {
  const s = ex.s;
  const target = core.openRunOrUndefined(ns, a.execution);
  if (!target) {
    const cause =
      enums.SignalExternalWorkflowExecutionFailedCause
        .SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND;
    const type = EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED;
    externalFailed(
      core,
      ex,
      type,
      'signalExternalWorkflowExecutionFailedEventAttributes',
      cause,
      initiatedEventId,
      ns,
      a.execution,
      a.control,
      completedId,
    );
    return;
  }
  signal(core, target, a.signalName ?? '', a.input, a.header, '', { workflowId: s.workflowId, runId: s.runId });
  addExternal(core, ex, [
    core.event(EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, 'externalWorkflowExecutionSignaledEventAttributes', {
      initiatedEventId,
      namespace: ns,
      workflowExecution: { workflowId: target.s.workflowId, runId: a.execution?.runId ?? '' },
      control: a.control,
    }),
  ]);
}

const requestCancelExternalWorkflowExecution: CommandHandler = (core, ex, c, completedId, after) => {
  const a = c.requestCancelExternalWorkflowExecutionCommandAttributes!;
  const ns = a.namespace || ex.s.namespace;
  const execution = { workflowId: a.workflowId, runId: a.runId };
  const e = core.appendCommandEvent(
    ex,
    c,
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
  after.push(() => cancelExternal(core, ex, a, ns, execution, initiatedEventId, completedId));
};

/** Requests cancellation of the target run if it is open, else the requesting workflow hears that it failed. */
function cancelExternal(
  core: EngineCore,
  ex: Execution,
  a: CancelExternalAttributes,
  ns: string,
  execution: ExecutionRef,
  initiatedEventId: number,
  completedId: number,
): void {
  const s = ex.s;
  const target = core.openRunOrUndefined(ns, execution);
  if (!target) {
    const cause =
      enums.CancelExternalWorkflowExecutionFailedCause
        .CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND;
    const type = EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED;
    externalFailed(
      core,
      ex,
      type,
      'requestCancelExternalWorkflowExecutionFailedEventAttributes',
      cause,
      initiatedEventId,
      ns,
      execution,
      a.control,
      completedId,
    );
    return;
  }
  requestCancel(core, target, a.reason ?? '', '', { workflowId: s.workflowId, runId: s.runId }, initiatedEventId);
  addExternal(core, ex, [
    core.event(
      EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
      'externalWorkflowExecutionCancelRequestedEventAttributes',
      {
        initiatedEventId,
        namespace: ns,
        workflowExecution: execution,
      },
    ),
  ]);
}

/** The target of an external signal or cancel request is not an open run. */
function externalFailed(
  core: EngineCore,
  ex: Execution,
  type: number,
  field: string,
  cause: number,
  initiatedEventId: number,
  ns: string,
  execution: ExecutionRef,
  control: string | null | undefined,
  completedId: number,
): void {
  addExternal(core, ex, [
    core.event(type, field, {
      cause,
      initiatedEventId,
      namespace: ns,
      workflowExecution: execution,
      control,
      workflowTaskCompletedEventId: completedId,
    }),
  ]);
}

const COMMAND_HANDLERS: Record<number, CommandHandler> = {
  [CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK]: scheduleActivityTask,
  [CommandType.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK]: requestCancelActivityTask,
  [CommandType.COMMAND_TYPE_START_TIMER]: startTimer,
  [CommandType.COMMAND_TYPE_CANCEL_TIMER]: cancelTimer,
  [CommandType.COMMAND_TYPE_RECORD_MARKER]: recordMarker,
  [CommandType.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]: upsertWorkflowSearchAttributes,
  [CommandType.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES]: modifyWorkflowProperties,
  [CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION]: completeWorkflowExecution,
  [CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION]: failWorkflowExecution,
  [CommandType.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION]: cancelWorkflowExecution,
  [CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION]: continueAsNewWorkflowExecution,
  [CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION]: startChildWorkflowExecution,
  [CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION]: signalExternalWorkflowExecution,
  [CommandType.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION]: requestCancelExternalWorkflowExecution,
};

// Starting child workflows (the StartChildWorkflowExecution command): the initiated event, then — once the
// parent's commands are applied — the child run and its started (or start-failed) event in the parent.
// What a closing child tells its parent, and parent-close policies, are in lifecycle.ts.
import type { EngineCore } from './core.js';
import { Code, RpcError } from './errors.js';
import { EventType, durationMs, enums, num, type temporal, type Command, type Plain } from './proto.js';
import { mergePriority, newRun } from './runs.js';
import { admitStart } from './start.js';
import type { Execution } from './state.js';
import { addExternal } from './workflow-tasks.js';

type StartChildAttributes = Plain<temporal.api.command.v1.IStartChildWorkflowExecutionCommandAttributes>;

export function startChild(core: EngineCore, ex: Execution, c: Command, completedId: number, after: Array<() => void>): void {
  const a = c.startChildWorkflowExecutionCommandAttributes!;
  const ns = a.namespace || ex.s.namespace;
  const e = core.appendCommandEvent(
    ex,
    c,
    EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    'startChildWorkflowExecutionInitiatedEventAttributes',
    {
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
      priority: a.priority,
    },
  );
  const initiatedEventId = num(e.eventId);
  after.push(() => startChildRun(core, ex, a, ns, initiatedEventId, completedId, c.userMetadata));
}

/** Starts the child run (or records why it could not start) and tells the parent. */
function startChildRun(
  core: EngineCore,
  ex: Execution,
  a: StartChildAttributes,
  ns: string,
  initiatedEventId: number,
  completedId: number,
  userMetadata: Command['userMetadata'],
): void {
  const s = ex.s;
  const workflowId = a.workflowId ?? '';
  const workflowType = a.workflowType?.name ?? '';
  let child: Execution | undefined;
  try {
    const admitted = admitStart(
      core,
      ns,
      workflowId,
      '',
      a.workflowIdReusePolicy ?? 0,
      enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
      '',
    );
    if (admitted.existing) throw new RpcError(Code.ALREADY_EXISTS, 'exists');
    const root = ex.history[0]?.workflowExecutionStartedEventAttributes?.rootWorkflowExecution;
    child = newRun(core, ns, {
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
      // As the server does: the command's priority fields win, the parent's fill in the rest.
      priority: mergePriority(s.priority, a.priority),
      userMetadata,
    });
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    addExternal(core, ex, [
      core.event(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED, 'startChildWorkflowExecutionFailedEventAttributes', {
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
  const startedEvent = core.event(
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
    'childWorkflowExecutionStartedEventAttributes',
    {
      namespace: ns,
      initiatedEventId,
      workflowExecution: { workflowId, runId: child.s.runId },
      workflowType: { name: workflowType },
      header: a.header,
    },
  );
  s.children[initiatedEventId] = {
    initiatedEventId,
    startedEventId: 0,
    namespace: ns,
    workflowId,
    runId: child.s.runId,
    workflowType,
    parentClosePolicy: a.parentClosePolicy ?? 0,
  };
  addExternal(core, ex, [startedEvent]);
  const rec = s.children[initiatedEventId];
  // The started event's id is known once it leaves the buffer; resolve it lazily for the close event.
  if (rec) rec.startedEventId = num(startedEvent.eventId);
}

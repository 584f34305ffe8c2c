// Starting workflows: StartWorkflowExecution and SignalWithStartWorkflowExecution, with request-id dedupe and
// the workflow id reuse / conflict policies (also applied to child workflows).
import type { EngineCore, Rpc } from './core.js';
import { eagerWorkflowTask } from './eager-start.js';
import { Code, RpcError, invalid } from './errors.js';
import { terminate } from './lifecycle.js';
import { Status, durationMs, enums, packAny, pb, type Req } from './proto.js';
import { newRun, type NewRunParams } from './runs.js';
import { MAX_ID_LENGTH, signal } from './signals-updates.js';
import type { Execution } from './state.js';

/** The run a start request asks for, checked as Temporal's frontend does. */
export function startRequestParams(r: Req<'StartWorkflowExecutionRequest'>): NewRunParams {
  if (!r.workflowId) throw invalid('WorkflowId is not set on request.');
  if (r.workflowId.length > MAX_ID_LENGTH) {
    throw invalid(`WorkflowId exceeds maximum allowed length (${r.workflowId.length}/${MAX_ID_LENGTH})`);
  }
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
    priority: r.priority,
  };
}

/** Temporal's WorkflowExecutionAlreadyStarted: ALREADY_EXISTS with the detail the SDKs read the run from. */
function alreadyStarted(prev: Execution, message: string): RpcError {
  const detail = packAny(
    'temporal.api.errordetails.v1.WorkflowExecutionAlreadyStartedFailure',
    pb.temporal.api.errordetails.v1.WorkflowExecutionAlreadyStartedFailure,
    { startRequestId: prev.s.requestIds[0] ?? '', runId: prev.s.runId },
  );
  return new RpcError(Code.ALREADY_EXISTS, `${message} WorkflowId: ${prev.s.workflowId}, RunId: ${prev.s.runId}.`, [detail]);
}

/** Applies request-id dedupe and the id reuse/conflict policies; returns an existing run to answer with, if any. */
export function admitStart(
  core: EngineCore,
  namespace: string,
  workflowId: string,
  requestId: string,
  reuse: number,
  conflict: number,
  identity: string,
): { existing?: Execution; deduped?: boolean } {
  const prev = core.latestRun(namespace, workflowId);
  if (!prev) return {};
  if (requestId && prev.s.requestIds.includes(requestId)) return { existing: prev, deduped: true };
  if (core.isOpen(prev)) {
    const P = enums.WorkflowIdConflictPolicy;
    if (conflict === P.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING) return { existing: prev };
    if (
      conflict === P.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING ||
      reuse === enums.WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_TERMINATE_IF_RUNNING
    ) {
      terminate(core, prev, 'terminated by a new start with the same workflow id', null, identity);
      return {};
    }
    throw alreadyStarted(prev, 'Workflow execution is already running.');
  }
  const R = enums.WorkflowIdReusePolicy;
  if (reuse === R.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE) {
    throw alreadyStarted(prev, 'Workflow execution already finished.');
  }
  if (reuse === R.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY) {
    const s = prev.s.status;
    if (s === Status.WORKFLOW_EXECUTION_STATUS_COMPLETED || s === Status.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW) {
      throw alreadyStarted(prev, 'Workflow execution already finished successfully.');
    }
  }
  return {};
}

export const startWorkflowExecution: Rpc<'StartWorkflowExecution'> = async (core, r) => {
  const namespace = core.ns(r.namespace);
  const params = startRequestParams(r);
  const { existing, deduped } = admitStart(
    core,
    namespace,
    params.workflowId,
    params.requestId,
    r.workflowIdReusePolicy ?? 0,
    r.workflowIdConflictPolicy ?? 0,
    params.identity,
  );
  if (existing) {
    if (!deduped && r.onConflictOptions?.attachRequestId && params.requestId) existing.s.requestIds.push(params.requestId);
    await core.commit();
    return { runId: existing.s.runId, started: !!deduped, status: existing.s.status };
  }
  const ex = newRun(core, namespace, params);
  const eagerTask = eagerWorkflowTask(core, ex, r);
  await core.commit();
  return { runId: ex.s.runId, started: true, status: ex.s.status, eagerWorkflowTask: eagerTask };
};

export const signalWithStartWorkflowExecution: Rpc<'SignalWithStartWorkflowExecution'> = async (core, r) => {
  const namespace = core.ns(r.namespace);
  if (!r.signalName) throw invalid('SignalName is not set on request.');
  const params = startRequestParams(r);
  const prev = core.latestRun(namespace, params.workflowId);
  const conflict = r.workflowIdConflictPolicy || enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING;
  if (prev && core.isOpen(prev) && conflict === enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING) {
    signal(core, prev, r.signalName, r.signalInput, r.header, r.identity ?? '', null);
    await core.commit();
    return { runId: prev.s.runId, started: false };
  }
  admitStart(core, namespace, params.workflowId, '', r.workflowIdReusePolicy ?? 0, conflict, params.identity);
  const ex = newRun(core, namespace, params, {
    name: r.signalName,
    input: r.signalInput,
    header: r.header,
    identity: r.identity ?? '',
  });
  await core.commit();
  return { runId: ex.s.runId, started: true };
};

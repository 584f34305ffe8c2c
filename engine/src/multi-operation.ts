// ExecuteMultiOperation: update-with-start, the one combination Temporal serves ([StartWorkflow, UpdateWorkflow]
// on one workflow id), in one round trip. The update goes to the running workflow when the start is a retry of the
// one that started it, when the update is already there, or under the USE_EXISTING conflict policy; otherwise the
// workflow is started (conflict and reuse policies as for a plain start) and its first workflow task carries the
// update. Errors come as Temporal shapes them: a status whose MultiOperationExecutionFailure detail holds one status
// per operation, the one that did not fail marked MultiOperationExecutionAborted.
import type { EngineCore, OnCancel, Rpc } from './core.js';
import { Code, RpcError, invalid, notFound } from './errors.js';
import { enums, packAny, pb, type temporal, type Plain, type Req } from './proto.js';
import { newRun } from './runs.js';
import { prepareUpdateRequest, runUpdate, type UpdateRequest } from './signals-updates.js';
import { admitStart, startRequestParams } from './start.js';
import type { Execution } from './state.js';

type StartRequest = Req<'StartWorkflowExecutionRequest'>;
type UpdateWorkflowRequest = Req<'UpdateWorkflowExecutionRequest'>;
type MultiOperationResponse = Req<'ExecuteMultiOperationResponse'>;
type UpdateResponse = Req<'UpdateWorkflowExecutionResponse'>;
type OperationStatus = Plain<temporal.api.errordetails.v1.MultiOperationExecutionFailure.IOperationStatus>;

const ABORTED = 10;
const MESSAGE = 'Update-with-Start could not be executed.';
const UPDATE_ABORTED_BY_CLOSING = 'workflow update was aborted by closing workflow';

/** One operation's part in a failed multi-operation: its error, `aborted` (not run because of the other), or `ok`. */
type Outcome = RpcError | 'aborted' | 'ok';

function operationStatus(outcome: Outcome): OperationStatus {
  if (outcome === 'ok') return { code: 0 };
  if (outcome === 'aborted') {
    const aborted = pb.temporal.api.failure.v1.MultiOperationExecutionAborted;
    return {
      code: ABORTED,
      message: 'Operation was aborted.',
      details: [packAny('temporal.api.failure.v1.MultiOperationExecutionAborted', aborted, {})],
    };
  }
  return { code: outcome.code, message: outcome.message, details: outcome.details };
}

/** Temporal's MultiOperationExecution error: the code of the operation that failed, every operation's status in the detail. */
function multiOperationError(start: Outcome, update: Outcome): RpcError {
  const failed = [start, update].find((o): o is RpcError => o instanceof RpcError);
  const failure = pb.temporal.api.errordetails.v1.MultiOperationExecutionFailure;
  const detail = packAny('temporal.api.errordetails.v1.MultiOperationExecutionFailure', failure, {
    statuses: [operationStatus(start), operationStatus(update)],
  });
  return new RpcError(failed?.code ?? ABORTED, MESSAGE, [detail]);
}

/** Runs `check`; an RpcError it throws becomes that operation's outcome. */
function outcomeOf(check: () => void): Outcome {
  try {
    check();
    return 'ok';
  } catch (err) {
    if (err instanceof RpcError) return err;
    throw err;
  }
}

/** The checks of Temporal's frontend on a start operation, beyond those of a plain start. */
function checkStart(r: StartRequest, namespace: string): void {
  if (r.namespace && r.namespace !== namespace) throw invalid("Operation namespace did not match request's namespace.");
  startRequestParams(r);
  if (r.cronSchedule) throw invalid('CronSchedule is not allowed.');
  if (r.requestEagerExecution) throw invalid('RequestEagerExecution is not supported.');
  const delay = r.workflowStartDelay;
  if (delay && (Number(delay.seconds ?? 0) > 0 || (delay.nanos ?? 0) > 0)) throw invalid('WorkflowStartDelay is not supported.');
}

/** The checks of Temporal's frontend on an update operation: a plain update's, and no run to pin. */
function checkUpdate(r: UpdateWorkflowRequest, namespace: string): void {
  if (r.namespace && r.namespace !== namespace) throw invalid("Operation namespace did not match request's namespace.");
  if (!r.workflowExecution) throw invalid('Execution is not set on request.');
  if (!r.workflowExecution.workflowId) throw invalid('WorkflowId is not set on request.');
  prepareUpdateRequest(r);
  if (r.firstExecutionRunId) throw invalid('FirstExecutionRunId is not allowed.');
  if (r.workflowExecution.runId) throw invalid('RunId is not allowed.');
}

export const executeMultiOperation: Rpc<'ExecuteMultiOperation'> = async (core, r, onCancel) => {
  const namespace = core.ns(r.namespace);
  const ops = r.operations ?? [];
  const startReq = ops[0]?.startWorkflow;
  const updateReq = ops[1]?.updateWorkflow;
  if (ops.length !== 2 || !startReq || !updateReq) throw invalid('Operations have to be exactly [Start, Update].');

  const startChecked = outcomeOf(() => checkStart(startReq, namespace));
  let updateChecked = outcomeOf(() => checkUpdate(updateReq, namespace));
  if (startChecked === 'ok' && updateChecked === 'ok' && startReq.workflowId !== updateReq.workflowExecution?.workflowId) {
    updateChecked = invalid('WorkflowId is not consistent with previous operation(s).');
  }
  if (startChecked !== 'ok' || updateChecked !== 'ok') {
    throw multiOperationError(
      startChecked === 'ok' ? 'aborted' : startChecked,
      updateChecked === 'ok' ? 'aborted' : updateChecked,
    );
  }

  const { request, stage } = prepareUpdateRequest(updateReq);
  const first = await updateWithStart(core, namespace, startReq, request, stage, onCancel);
  if (!first.abortedByClosing) return first.response;
  // The running workflow closed before it accepted the update: once more, which starts a new run, as Temporal does.
  const second = await updateWithStart(core, namespace, startReq, request, stage, onCancel);
  if (!second.abortedByClosing) return second.response;
  throw multiOperationError('aborted', new RpcError(ABORTED, UPDATE_ABORTED_BY_CLOSING));
};

type Attempt = { response: MultiOperationResponse; abortedByClosing?: false } | { abortedByClosing: true };

async function updateWithStart(
  core: EngineCore,
  namespace: string,
  startReq: StartRequest,
  request: UpdateRequest,
  stage: number,
  onCancel: OnCancel,
): Promise<Attempt> {
  const workflowId = startReq.workflowId ?? '';
  const updateId = request.meta?.updateId ?? '';
  const current = core.latestRun(namespace, workflowId);
  if (current) {
    // A completed update answers with its outcome, whatever became of its run.
    const done = current.s.updates[updateId];
    if (done?.phase === 'completed') {
      return {
        response: respond(current, false, {
          updateRef: { workflowExecution: { workflowId, runId: current.s.runId }, updateId },
          outcome: done.outcome,
          stage: enums.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED,
        }),
      };
    }
    if (core.isOpen(current) && usesRunningWorkflow(current, startReq, updateId)) {
      return updateRunning(core, current, request, stage, onCancel);
    }
  }
  return startAndUpdate(core, namespace, startReq, request, stage, onCancel);
}

/** The start is a retry of the one that started the run, the update is already there, or the policy says use it. */
function usesRunningWorkflow(current: Execution, startReq: StartRequest, updateId: string): boolean {
  if (startReq.requestId && current.s.requestIds.includes(startReq.requestId)) return true;
  const u = current.s.updates[updateId];
  if (u && u.phase !== 'rejected' && u.phase !== 'aborted') return true;
  return startReq.workflowIdConflictPolicy === enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING;
}

async function updateRunning(
  core: EngineCore,
  ex: Execution,
  request: UpdateRequest,
  stage: number,
  onCancel: OnCancel,
): Promise<Attempt> {
  let response: UpdateResponse | undefined;
  try {
    response = await runUpdate(core, ex, request, stage, onCancel);
  } catch (err) {
    if (err instanceof RpcError && err.code === Code.NOT_FOUND && err.message === UPDATE_ABORTED_BY_CLOSING) {
      return { abortedByClosing: true };
    }
    throw err instanceof RpcError ? multiOperationError('aborted', err) : err;
  }
  // Continued as new before the worker saw the update: the update goes to the run that carries on.
  if (!response) return { abortedByClosing: true };
  return { response: respond(ex, false, response) };
}

async function startAndUpdate(
  core: EngineCore,
  namespace: string,
  startReq: StartRequest,
  request: UpdateRequest,
  stage: number,
  onCancel: OnCancel,
): Promise<Attempt> {
  const params = startRequestParams(startReq);
  let existing: Execution | undefined;
  try {
    existing = admitStart(
      core,
      namespace,
      params.workflowId,
      params.requestId,
      startReq.workflowIdReusePolicy ?? 0,
      startReq.workflowIdConflictPolicy || enums.WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
      params.identity,
    ).existing;
  } catch (err) {
    throw err instanceof RpcError ? multiOperationError(err, 'aborted') : err;
  }
  // Only a closed run is left here (an open one took the update above): this request started it, and it is over.
  if (existing) throw multiOperationError('ok', notFound('workflow execution already completed'));
  const ex = newRun(core, namespace, params);
  let response: UpdateResponse | undefined;
  try {
    // Admitted in the same turn as the start, so the run's first workflow task carries the update.
    response = await runUpdate(core, ex, request, stage, onCancel);
    // The run was retried before the worker saw the update (a closing first task cannot pass over it): follow the
    // workflow to the run that carries on, as Temporal's callers do.
    let run = ex;
    while (!response) {
      const next = core.latestRun(namespace, run.s.workflowId);
      if (!next || next === run) throw notFound('workflow execution already completed');
      run = next;
      response = await runUpdate(core, run, request, stage, onCancel);
    }
  } catch (err) {
    throw err instanceof RpcError ? multiOperationError('ok', err) : err;
  }
  return { response: respond(ex, true, response) };
}

function respond(ex: Execution, started: boolean, update: UpdateResponse): MultiOperationResponse {
  return {
    responses: [{ startWorkflow: { runId: ex.s.runId, started, status: ex.s.status } }, { updateWorkflow: update }],
  };
}

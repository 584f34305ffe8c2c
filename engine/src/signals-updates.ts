// Messages into a running workflow: signals (with request-id dedupe) and updates — admitted (within Temporal's
// per-run limits), delivered with a workflow task as protocol messages, accepted / rejected / completed by the
// worker's messages, failed or aborted when their run closes first, and awaited by callers up to the lifecycle
// stage they asked for.
import { randomUUID } from 'node:crypto';
import { CALL_WAIT_MS, type EngineCore, type OnCancel, type Rpc } from './core.js';
import { Code, RpcError, invalid, notFound } from './errors.js';
import { log } from './log.js';
import {
  EventType,
  decodePlain,
  enums,
  num,
  packAny,
  pb,
  type temporal,
  type Failure,
  type Message,
  type Payloads,
  type Plain,
  type Req,
} from './proto.js';
import { execKey, type Execution, type ExecutionState, type UpdateState } from './state.js';
import { addExternal, scheduleWorkflowTask } from './workflow-tasks.js';

export function signal(
  core: EngineCore,
  ex: Execution,
  signalName: string,
  input: Payloads | null | undefined,
  header: Plain<temporal.api.common.v1.IHeader> | null | undefined,
  identity: string,
  external: { workflowId: string; runId: string } | null,
): void {
  addExternal(core, ex, [
    core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'workflowExecutionSignaledEventAttributes', {
      signalName,
      input,
      identity,
      header,
      externalWorkflowExecution: external ?? undefined,
    }),
  ]);
}

export const signalWorkflowExecution: Rpc<'SignalWorkflowExecution'> = async (core, r) => {
  const ex = core.findOpenRun(core.ns(r.namespace), r.workflowExecution);
  if (!r.signalName) throw invalid('SignalName is not set on request.');
  if (r.requestId && ex.s.signalRequestIds.includes(r.requestId)) return {};
  if (r.requestId) {
    ex.s.signalRequestIds.push(r.requestId);
    if (ex.s.signalRequestIds.length > 100) ex.s.signalRequestIds.shift();
  }
  signal(core, ex, r.signalName, r.input, r.header, r.identity ?? '', null);
  await core.commit();
  return {};
};

/** A protocol message of a workflow task completion: an update's acceptance, rejection or response. */
export function processMessage(core: EngineCore, ex: Execution, m: Message, completedId: number): void {
  const s = ex.s;
  const typeUrl = m.body?.type_url ?? '';
  const value = m.body?.value ?? new Uint8Array();
  const u = s.updates[m.protocolInstanceId ?? ''];
  const U = pb.temporal.api.update.v1;
  if (typeUrl.endsWith('update.v1.Acceptance')) {
    const acc = decodePlain(U.Acceptance, value);
    const e = core.appendNow(
      ex,
      core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 'workflowExecutionUpdateAcceptedEventAttributes', {
        protocolInstanceId: m.protocolInstanceId,
        acceptedRequestMessageId: acc.acceptedRequestMessageId,
        acceptedRequestSequencingEventId: acc.acceptedRequestSequencingEventId,
        acceptedRequest: acc.acceptedRequest ?? u?.request,
      }),
    );
    if (u) {
      u.phase = 'accepted';
      u.acceptedEventId = num(e.eventId);
      forgetRequestPayload(u);
    }
  } else if (typeUrl.endsWith('update.v1.Rejection')) {
    const rej = decodePlain(U.Rejection, value);
    if (u) {
      u.phase = 'rejected';
      u.outcome = { failure: rej.failure };
      forgetRequestPayload(u);
    }
  } else if (typeUrl.endsWith('update.v1.Response')) {
    const res = decodePlain(U.Response, value);
    const updateId = res.meta?.updateId || m.protocolInstanceId || '';
    const target = s.updates[updateId];
    core.appendNow(
      ex,
      core.event(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, 'workflowExecutionUpdateCompletedEventAttributes', {
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
  core.markDirty(ex);
}

const Stage = enums.UpdateWorkflowExecutionLifecycleStage;

/** gRPC PERMISSION_DENIED, which Temporal answers for an update request waiting for ADMITTED only. */
const PERMISSION_DENIED = 7;

/** Temporal's per-run update limits (dynamic config history.maxInFlightUpdates, history.maxTotalUpdates). */
const MAX_IN_FLIGHT_UPDATES = 10;
const MAX_TOTAL_UPDATES = 2000;
/** Temporal's limit on ids (limit.maxIDLength). */
export const MAX_ID_LENGTH = 1000;

/** Temporal's outcome of an accepted update whose run closed (or continued as new) before the update completed. */
export const ACCEPTED_UPDATE_COMPLETED_WORKFLOW: Failure = {
  message: 'Workflow Update failed because the Workflow completed before the Update completed.',
  source: 'Server',
  applicationFailureInfo: { type: 'AcceptedUpdateCompletedWorkflow', nonRetryable: true },
};

/** Temporal's rejection of an update a completed workflow task carried but the worker answered neither way. */
const UNPROCESSED_UPDATE: Failure = {
  message:
    "Workflow Update is rejected because it wasn't processed by worker. Probably, Workflow Update is not supported by the worker.",
  source: 'Server',
  applicationFailureInfo: { type: 'UnprocessedUpdate', nonRetryable: true },
};

export type UpdateRequest = Plain<temporal.api.update.v1.IRequest>;
type UpdateResponse = Req<'UpdateWorkflowExecutionResponse'>;

/** Once the worker answered, the request's arguments live in the accepted event (or nowhere): the state keeps its meta. */
function forgetRequestPayload(u: UpdateState): void {
  u.request = { meta: u.request.meta };
}

/**
 * Checks an UpdateWorkflowExecution request as Temporal's frontend does; returns its update request (with an
 * update id, generated when empty) and the stage the caller waits for (COMPLETED unless it asked for ACCEPTED).
 */
export function prepareUpdateRequest(r: Req<'UpdateWorkflowExecutionRequest'>): { request: UpdateRequest; stage: number } {
  const meta = r.request?.meta;
  if (!meta) throw invalid('Update meta is not set on request.');
  if ((meta.updateId ?? '').length > MAX_ID_LENGTH) throw invalid('UpdateId length exceeds limit.');
  if (!r.request?.input) throw invalid('Update input is not set on request.');
  if (!r.request.input.name) throw invalid('Update name is not set on request.');
  const stage = r.waitPolicy?.lifecycleStage || Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;
  if (stage === Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED) {
    throw new RpcError(
      PERMISSION_DENIED,
      'UpdateWorkflowExecution issued asynchronously and waiting on update admitted is not supported.',
    );
  }
  return { request: { ...r.request, meta: { ...meta, updateId: meta.updateId || randomUUID() } }, stage };
}

function checkUpdateLimits(s: ExecutionState): void {
  let inFlight = 0;
  let total = 0;
  for (const u of Object.values(s.updates)) {
    if (u.phase === 'admitted' || u.phase === 'delivered' || u.phase === 'accepted') inFlight++;
    if (u.phase !== 'rejected' && u.phase !== 'aborted') total++;
  }
  if (inFlight >= MAX_IN_FLIGHT_UPDATES) {
    const cause = pb.temporal.api.errordetails.v1.ResourceExhaustedFailure;
    throw new RpcError(
      Code.RESOURCE_EXHAUSTED,
      `limit on number of concurrent in-flight updates has been reached (${MAX_IN_FLIGHT_UPDATES})`,
      [
        packAny('temporal.api.errordetails.v1.ResourceExhaustedFailure', cause, {
          cause: enums.ResourceExhaustedCause.RESOURCE_EXHAUSTED_CAUSE_CONCURRENT_LIMIT,
          scope: enums.ResourceExhaustedScope.RESOURCE_EXHAUSTED_SCOPE_NAMESPACE,
        }),
      ],
    );
  }
  if (total >= MAX_TOTAL_UPDATES) {
    throw new RpcError(
      Code.FAILED_PRECONDITION,
      `The limit on the total number of distinct updates in this workflow has been reached (${MAX_TOTAL_UPDATES}). ` +
        "Make sure any duplicate updates share an Update ID so the server can deduplicate them, and consider rejecting updates that you aren't going to process. " +
        'You can also Continue-as-New to avoid this; we recommend you check Continue-as-New Suggested in your Workflow.',
    );
  }
}

/**
 * Admits an update to a run, or finds the one with its id (a repeated request gets the first one's outcome).
 * A run still waiting out its start delay (or a retry / continue-as-new backoff) starts now, as in Temporal: its
 * first workflow task carries the update. Not journaled: the caller commits.
 */
export function admitUpdate(core: EngineCore, ex: Execution, request: UpdateRequest): UpdateState {
  const updateId = request.meta?.updateId ?? '';
  const existing = ex.s.updates[updateId];
  if (existing && existing.abortedBy !== 'continuing') return existing;
  if (!core.isOpen(ex)) throw notFound('workflow execution already completed');
  checkUpdateLimits(ex.s);
  const u: UpdateState = { updateId, phase: 'admitted', request, acceptedEventId: 0, outcome: null };
  ex.s.updates[updateId] = u;
  if (ex.s.deadlines.backoff !== undefined) {
    // Not speculative: were the update rejected, the run must still go on.
    core.clearDeadline(ex, 'backoff');
    scheduleWorkflowTask(core, ex);
  } else {
    scheduleWorkflowTask(core, ex, true);
  }
  core.markDirty(ex);
  return u;
}

/**
 * Closing a run ends its updates as Temporal does: accepted ones fail with AcceptedUpdateCompletedWorkflow (also
 * on continue-as-new: an accepted update never moves to the next run); the ones the worker has not accepted are
 * aborted, and their callers retry on the next run when one carries on.
 */
export function abortUpdates(ex: Execution, continued: boolean): void {
  for (const u of Object.values(ex.s.updates)) {
    if (u.phase === 'accepted') {
      u.phase = 'completed';
      u.outcome = { failure: ACCEPTED_UPDATE_COMPLETED_WORKFLOW };
    } else if (u.phase === 'admitted' || u.phase === 'delivered') {
      u.phase = 'aborted';
      u.abortedBy = continued ? 'continuing' : 'closing';
      forgetRequestPayload(u);
    }
  }
}

/**
 * After a completed workflow task of a run that goes on: updates it carried that the worker answered neither way
 * are rejected (otherwise they would wait forever). Not for a heartbeat task, which need not answer them.
 */
export function rejectUnprocessedUpdates(ex: Execution): void {
  for (const u of Object.values(ex.s.updates)) {
    if (u.phase !== 'delivered') continue;
    u.phase = 'rejected';
    u.outcome = { failure: UNPROCESSED_UPDATE };
    forgetRequestPayload(u);
  }
}

function updateResponse(ex: Execution, u: UpdateState): UpdateResponse {
  const done = u.phase === 'completed' || u.phase === 'rejected';
  return {
    updateRef: { workflowExecution: { workflowId: ex.s.workflowId, runId: ex.s.runId }, updateId: u.updateId },
    outcome: done ? u.outcome : undefined,
    stage: done
      ? Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED
      : u.phase === 'accepted'
        ? Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED
        : Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED,
  };
}

/** Waits (bounded by CALL_WAIT_MS, like Temporal's long-poll expiry) until the update reached `stage` or ended. */
async function awaitUpdate(
  core: EngineCore,
  ex: Execution,
  u: UpdateState,
  stage: number,
  onCancel: OnCancel,
): Promise<UpdateState> {
  const current = () => ex.s.updates[u.updateId] ?? u;
  const reached = () => {
    const cur = current();
    if (cur.phase === 'completed' || cur.phase === 'rejected' || cur.phase === 'aborted') return true;
    return stage <= Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED && cur.phase === 'accepted';
  };
  await core.waitFor(execKey(ex.s.namespace, ex.s.runId), CALL_WAIT_MS, () => (reached() ? true : undefined), onCancel);
  return current();
}

/**
 * Admits the update to `ex`, journals it and waits for `stage`. Undefined when the run continued as new (or was
 * retried) before the worker accepted it: the caller retries on the run that carries on, as Temporal's do.
 */
export async function runUpdate(
  core: EngineCore,
  ex: Execution,
  request: UpdateRequest,
  stage: number,
  onCancel: OnCancel,
): Promise<UpdateResponse | undefined> {
  const u = admitUpdate(core, ex, request);
  await core.commit();
  const cur = await awaitUpdate(core, ex, u, stage, onCancel);
  if (cur.phase === 'aborted') {
    if (cur.abortedBy === 'continuing') return undefined;
    throw notFound('workflow update was aborted by closing workflow');
  }
  return updateResponse(ex, cur);
}

export const updateWorkflowExecution: Rpc<'UpdateWorkflowExecution'> = async (core, r, onCancel) => {
  const namespace = core.ns(r.namespace);
  const { request, stage } = prepareUpdateRequest(r);
  for (;;) {
    const ex = core.findRun(namespace, r.workflowExecution);
    if (r.firstExecutionRunId && ex.s.firstRunId !== r.firstExecutionRunId) throw notFound('workflow execution not found');
    const response = await runUpdate(core, ex, request, stage, onCancel);
    if (response) return response;
    // A caller that named the run it updates does not follow it to the next one.
    if (r.workflowExecution?.runId) throw notFound('workflow execution already completed');
  }
};

export const pollWorkflowExecutionUpdate: Rpc<'PollWorkflowExecutionUpdate'> = async (core, r, onCancel) => {
  if (!r.updateRef) throw invalid('UpdateRef is not set on request.');
  const ex = core.findRun(core.ns(r.namespace), r.updateRef.workflowExecution);
  const updateId = r.updateRef.updateId ?? '';
  const u = ex.s.updates[updateId];
  if (!u || u.phase === 'aborted') throw notFound(`update "${updateId}" not found`);
  // Without a stage to wait for (or ADMITTED), Temporal answers the stage reached so far at once.
  const stage = r.waitPolicy?.lifecycleStage ?? Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_UNSPECIFIED;
  const cur =
    stage >= Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED ? await awaitUpdate(core, ex, u, stage, onCancel) : u;
  if (cur.phase === 'aborted') throw notFound('workflow update was aborted by closing workflow');
  const resp = updateResponse(ex, cur);
  return { outcome: resp.outcome, stage: resp.stage, updateRef: resp.updateRef };
};

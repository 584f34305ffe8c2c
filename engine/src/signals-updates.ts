// Messages into a running workflow: signals (with request-id dedupe) and updates — admitted, delivered with a
// workflow task as protocol messages, accepted / rejected / completed by the worker's messages, and awaited
// by callers up to the lifecycle stage they asked for.
import { randomUUID } from 'node:crypto';
import { CALL_WAIT_MS, type EngineCore, type OnCancel, type Rpc } from './core.js';
import { invalid, notFound } from './errors.js';
import { log } from './log.js';
import {
  EventType,
  decodePlain,
  enums,
  num,
  pb,
  type temporal,
  type Message,
  type Payloads,
  type Plain,
  type Req,
} from './proto.js';
import { execKey, type Execution, type UpdateState } from './state.js';
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

function updateResponse(ex: Execution, u: UpdateState): Req<'UpdateWorkflowExecutionResponse'> {
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

async function awaitUpdate(
  core: EngineCore,
  ex: Execution,
  u: UpdateState,
  stage: number,
  onCancel: OnCancel,
): Promise<Req<'UpdateWorkflowExecutionResponse'>> {
  const L = enums.UpdateWorkflowExecutionLifecycleStage;
  const reached = () => {
    const cur = ex.s.updates[u.updateId] ?? u;
    if (cur.phase === 'completed' || cur.phase === 'rejected') return true;
    return stage <= L.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED && cur.phase === 'accepted';
  };
  await core.waitFor(execKey(ex.s.namespace, ex.s.runId), CALL_WAIT_MS, () => (reached() ? true : undefined), onCancel);
  return updateResponse(ex, ex.s.updates[u.updateId] ?? u);
}

export const updateWorkflowExecution: Rpc<'UpdateWorkflowExecution'> = async (core, r, onCancel) => {
  const namespace = core.ns(r.namespace);
  const ex = core.findRun(namespace, r.workflowExecution);
  const updateId = r.request?.meta?.updateId || randomUUID();
  let u = ex.s.updates[updateId];
  if (!u) {
    if (!core.isOpen(ex)) throw notFound('workflow execution already completed');
    u = {
      updateId,
      phase: 'admitted',
      request: { ...r.request, meta: { ...r.request?.meta, updateId } },
      acceptedEventId: 0,
      outcome: null,
    };
    ex.s.updates[updateId] = u;
    scheduleWorkflowTask(core, ex, true);
    core.markDirty(ex);
    await core.commit();
  }
  const stage =
    r.waitPolicy?.lifecycleStage ||
    enums.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED;
  return awaitUpdate(core, ex, u, stage, onCancel);
};

export const pollWorkflowExecutionUpdate: Rpc<'PollWorkflowExecutionUpdate'> = async (core, r, onCancel) => {
  const ex = core.findRun(core.ns(r.namespace), r.updateRef?.workflowExecution);
  const u = ex.s.updates[r.updateRef?.updateId ?? ''];
  if (!u) throw notFound(`update ${r.updateRef?.updateId ?? ''} not found`);
  const stage =
    r.waitPolicy?.lifecycleStage ||
    enums.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;
  const resp = await awaitUpdate(core, ex, u, stage, onCancel);
  return { outcome: resp.outcome, stage: resp.stage, updateRef: resp.updateRef };
};

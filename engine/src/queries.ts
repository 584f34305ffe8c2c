// Queries: carried by the pending workflow task and answered from its `queryResults`, otherwise sent out as
// legacy query tasks (with full history) on the workflow's task queue.
import { randomUUID } from 'node:crypto';
import type { EngineCore, PendingQuery, Rpc } from './core.js';
import { Code, RpcError, notFound } from './errors.js';
import { Status, enums, type temporal, type Plain, type Req } from './proto.js';
import { execKey, type Execution } from './state.js';
import { decodeToken, encodeToken } from './tokens.js';

export const queryWorkflow: Rpc<'QueryWorkflow'> = async (core, r, onCancel) => {
  const ex = core.findRun(core.ns(r.namespace), r.execution);
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
      core.queries.delete(id);
      reject(new RpcError(Code.DEADLINE_EXCEEDED, 'query timed out: no worker answered'));
    }, 60_000);
    const q: PendingQuery = {
      id,
      runKey: execKey(ex.s.namespace, ex.s.runId),
      query: r.query ?? {},
      resolve: (v) => {
        clearTimeout(timer);
        core.queries.delete(id);
        resolve(v);
      },
      reject: (e) => {
        clearTimeout(timer);
        core.queries.delete(id);
        reject(e);
      },
      dispatched: false,
      attachedTo: 0,
    };
    core.queries.set(id, q);
    onCancel(() => q.reject(new RpcError(Code.CANCELLED, 'query cancelled')));
    dispatchPendingQueries(core, ex);
  });
};

/**
 * Queries go out as legacy query tasks when no workflow task is pending and the workflow has run once;
 * while one is pending they ride along with it (the task's `queries`), as the real server does.
 */
export function dispatchPendingQueries(core: EngineCore, ex: Execution): void {
  const s = ex.s;
  const runKey = execKey(s.namespace, s.runId);
  if (s.wft.phase !== 'none') return;
  if (core.isOpen(ex) && s.lastWftCompletedEventId === 0) return;
  for (const q of core.queries.values()) {
    if (q.runKey !== runKey || q.dispatched) continue;
    q.dispatched = true;
    core.queues.offer(core.queueKey(s.namespace, s.taskQueue, 'wf'), { kind: 'query', queryId: q.id });
  }
}

/** Queries not yet dispatched ride along with the workflow task starting now (keyed by query id). */
export function attachPendingQueries(
  core: EngineCore,
  ex: Execution,
  runKey: string,
): Record<string, Plain<temporal.api.query.v1.IWorkflowQuery>> {
  const queries: Record<string, Plain<temporal.api.query.v1.IWorkflowQuery>> = {};
  for (const q of core.queries.values()) {
    if (q.runKey !== runKey || q.dispatched) continue;
    q.dispatched = true;
    q.attachedTo = ex.s.wft.scheduledEventId;
    queries[q.id] = q.query;
  }
  return queries;
}

export function startQueryTask(core: EngineCore, queryId: string): Req<'PollWorkflowTaskQueueResponse'> | null {
  const q = core.queries.get(queryId);
  if (!q) return null;
  const ex = core.runs.get(q.runKey);
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

export function answerAttachedQueries(
  core: EngineCore,
  ex: Execution,
  results: Record<string, Plain<temporal.api.query.v1.IWorkflowQueryResult>>,
): void {
  for (const [id, res] of Object.entries(results)) {
    const q = core.queries.get(id);
    if (!q) continue;
    if (res.resultType === enums.QueryResultType.QUERY_RESULT_TYPE_ANSWERED) q.resolve({ queryResult: res.answer });
    else q.reject(new RpcError(Code.INVALID_ARGUMENT, res.errorMessage || res.failure?.message || 'query failed'));
  }
  // Queries the task carried but did not answer go out again.
  const runKey = execKey(ex.s.namespace, ex.s.runId);
  for (const q of core.queries.values()) {
    if (q.runKey === runKey && q.attachedTo === ex.s.wft.scheduledEventId) {
      q.dispatched = false;
      q.attachedTo = 0;
    }
  }
}

export const respondQueryTaskCompleted: Rpc<'RespondQueryTaskCompleted'> = async (core, r) => {
  const t = decodeToken(r.taskToken);
  const q = t.q ? core.queries.get(t.q) : undefined;
  if (!q) throw notFound('query not found');
  if (r.completedType === enums.QueryResultType.QUERY_RESULT_TYPE_ANSWERED) {
    q.resolve({ queryResult: r.queryResult });
  } else {
    q.reject(new RpcError(Code.INVALID_ARGUMENT, r.errorMessage || r.failure?.message || 'query failed'));
  }
  return {};
};

// Activity-task dispatch: scheduling an activity (timeouts normalised as the server does), offering each attempt
// to pollers, starting it, heartbeats, completion / failure / cancellation by task token or by id, timeouts and
// retries under the activity's retry policy.
import { randomUUID } from 'node:crypto';
import type { EngineCore, Rpc, RpcName, RpcRequest, RpcResponse, TaskRef } from './core.js';
import { invalid, notFound } from './errors.js';
import { FailureReason, blobTooLarge, oversizedFailure, payloadsSize, serverFailure } from './limits.js';
import { longPoll } from './long-poll.js';
import {
  EventType,
  RetryState,
  TimeoutType,
  durationMs,
  enums,
  msDuration,
  msTs,
  num,
  type Command,
  type Failure,
  type HistoryEvent,
  type Payloads,
  type Req,
} from './proto.js';
import { nextRetry, retryPolicyOf, retrySpec } from './retry.js';
import { mergePriority } from './runs.js';
import { execKey, type ActivityState, type Execution } from './state.js';
import { decodeToken, encodeToken } from './tokens.js';
import { addExternal } from './workflow-tasks.js';

/** Writes the ActivityTaskScheduled event of a ScheduleActivityTask command and offers the first attempt. */
export function scheduleActivity(core: EngineCore, ex: Execution, c: Command, completedId: number): ActivityState {
  const a = c.scheduleActivityTaskCommandAttributes!;
  const s = ex.s;
  const runLeft = s.runTimeoutMs ? Math.max(0, s.startTime + s.runTimeoutMs - core.clock.now()) : 0;
  let s2c = durationMs(a.scheduleToCloseTimeout);
  let stc = durationMs(a.startToCloseTimeout);
  let s2s = durationMs(a.scheduleToStartTimeout);
  // Normalise as the server does: every attempt needs a start-to-close bound and nothing outlives the run.
  if (runLeft && (!s2c || s2c > runLeft)) s2c = runLeft;
  if (!stc) stc = s2c;
  if (s2c && stc > s2c) stc = s2c;
  if (s2s && s2c && s2s > s2c) s2s = s2c;
  const heartbeat = Math.min(durationMs(a.heartbeatTimeout), stc);
  const spec = retrySpec(a.retryPolicy);
  const policy = retryPolicyOf(spec);
  const taskQueue = a.taskQueue?.name || s.taskQueue;
  const e = core.appendCommandEvent(ex, c, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, 'activityTaskScheduledEventAttributes', {
    activityId: a.activityId,
    activityType: a.activityType,
    taskQueue: { name: taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    header: a.header,
    input: a.input,
    scheduleToCloseTimeout: s2c ? msDuration(s2c) : undefined,
    scheduleToStartTimeout: s2s ? msDuration(s2s) : undefined,
    startToCloseTimeout: msDuration(stc),
    heartbeatTimeout: heartbeat ? msDuration(heartbeat) : undefined,
    workflowTaskCompletedEventId: completedId,
    retryPolicy: policy,
    useWorkflowBuildId: a.useWorkflowBuildId,
    priority: a.priority,
  });
  const now = core.clock.now();
  const act: ActivityState = {
    scheduledEventId: num(e.eventId),
    activityId: a.activityId ?? '',
    activityType: a.activityType?.name ?? '',
    taskQueue,
    phase: 'scheduled',
    attempt: 1,
    scheduledTime: now,
    attemptScheduledTime: now,
    startedTime: 0,
    startedIdentity: '',
    heartbeatDetails: null,
    lastHeartbeatTime: 0,
    cancelRequested: false,
    cancelRequestedEventId: 0,
    lastFailure: null,
    scheduleToCloseMs: s2c,
    scheduleToStartMs: s2s,
    startToCloseMs: stc,
    heartbeatMs: heartbeat,
    retry: spec,
    retryPolicy: policy,
  };
  s.activities[act.scheduledEventId] = act;
  if (s2c) core.setDeadline(ex, `act:${act.scheduledEventId}:s2c`, now + s2c);
  offerActivity(core, ex, act);
  return act;
}

function offerActivity(core: EngineCore, ex: Execution, a: ActivityState): void {
  if (a.scheduleToStartMs) core.setDeadline(ex, `act:${a.scheduledEventId}:s2s`, core.clock.now() + a.scheduleToStartMs);
  core.clock.setOutstanding(core.actKey(ex, a), true);
  dispatchActivity(core, ex, a);
}

export function dispatchActivity(core: EngineCore, ex: Execution, a: ActivityState): void {
  core.queues.offer(core.queueKey(ex.s.namespace, a.taskQueue, 'act'), {
    kind: 'act',
    runKey: execKey(ex.s.namespace, ex.s.runId),
    scheduledEventId: a.scheduledEventId,
    attempt: a.attempt,
  });
}

export function closeActivity(core: EngineCore, ex: Execution, a: ActivityState): void {
  for (const sub of ['s2c', 's2s', 'stc', 'hb', 'retry']) core.clearDeadline(ex, `act:${a.scheduledEventId}:${sub}`);
  core.clock.setOutstanding(core.actKey(ex, a), false);
  delete ex.s.activities[a.scheduledEventId];
  core.markDirty(ex);
}

export function retryActivity(core: EngineCore, ex: Execution, a: ActivityState): void {
  a.phase = 'scheduled';
  a.attemptScheduledTime = core.clock.now();
  offerActivity(core, ex, a);
}

function startedEvent(core: EngineCore, a: ActivityState): HistoryEvent {
  return core.event(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, 'activityTaskStartedEventAttributes', {
    scheduledEventId: a.scheduledEventId,
    identity: a.startedIdentity,
    requestId: randomUUID(),
    attempt: a.attempt,
    lastFailure: a.lastFailure,
  });
}

/** A failed attempt: retried per policy, or recorded as the activity's final outcome. */
function failAttempt(
  core: EngineCore,
  ex: Execution,
  a: ActivityState,
  failure: Failure,
  timeoutType: number,
  details: Payloads | null,
): void {
  const now = core.clock.now();
  const expiration = a.scheduleToCloseMs ? a.scheduledTime + a.scheduleToCloseMs : 0;
  const retryable =
    timeoutType === 0 ||
    timeoutType === TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE ||
    timeoutType === TimeoutType.TIMEOUT_TYPE_HEARTBEAT;
  const next = retryable
    ? nextRetry(a.retry, a.attempt, failure, now, expiration)
    : { retryState: RetryState.RETRY_STATE_TIMEOUT };
  if ('delay' in next && !a.cancelRequested) {
    for (const sub of ['s2s', 'stc', 'hb']) core.clearDeadline(ex, `act:${a.scheduledEventId}:${sub}`);
    core.clock.setOutstanding(core.actKey(ex, a), false);
    a.phase = 'backoff';
    a.lastFailure = failure;
    if (details) a.heartbeatDetails = details;
    a.attempt++;
    core.setDeadline(ex, `act:${a.scheduledEventId}:retry`, now + next.delay);
    core.markDirty(ex);
    return;
  }
  const retryState = 'retryState' in next ? next.retryState : RetryState.RETRY_STATE_CANCEL_REQUESTED;
  const started = a.phase === 'started';
  const events: HistoryEvent[] = started ? [startedEvent(core, a)] : [];
  if (timeoutType) {
    events.push(
      core.event(EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, 'activityTaskTimedOutEventAttributes', {
        failure,
        scheduledEventId: a.scheduledEventId,
        startedEventId: 0,
        retryState,
      }),
    );
  } else {
    events.push(
      core.event(EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED, 'activityTaskFailedEventAttributes', {
        failure,
        scheduledEventId: a.scheduledEventId,
        startedEventId: 0,
        identity: a.startedIdentity,
        retryState,
      }),
    );
  }
  closeActivity(core, ex, a);
  addExternal(core, ex, events, started);
}

/** One of the activity's timeout deadlines (`sub`: s2c, s2s, stc, hb) came due. */
export function activityTimedOut(core: EngineCore, ex: Execution, a: ActivityState, sub: string): void {
  const type =
    sub === 's2c'
      ? TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE
      : sub === 's2s'
        ? TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START
        : sub === 'hb'
          ? TimeoutType.TIMEOUT_TYPE_HEARTBEAT
          : TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE;
  if ((sub === 'stc' || sub === 'hb') && a.phase !== 'started') return;
  if (sub === 's2s' && a.phase !== 'scheduled') return;
  const name = enums.TimeoutType[type]?.replace('TIMEOUT_TYPE_', '') ?? 'UNKNOWN';
  const failure: Failure = {
    message: `activity ${name} timeout`,
    source: 'Server',
    timeoutFailureInfo: { timeoutType: type, lastHeartbeatDetails: a.heartbeatDetails },
    cause: type === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE ? a.lastFailure : undefined,
  };
  failAttempt(core, ex, a, failure, type, null);
}

export const pollActivityTaskQueue: Rpc<'PollActivityTaskQueue'> = (core, r, onCancel) =>
  longPoll(core, r, 'act', onCancel, takeActivityTask);

/** A polled reference: the activity's attempt, if it is still the scheduled one. */
function takeActivityTask(
  core: EngineCore,
  ref: TaskRef,
  r: Req<'PollActivityTaskQueueRequest'>,
): Req<'PollActivityTaskQueueResponse'> | null {
  if (ref.kind !== 'act') return null;
  const ex = core.runs.get(ref.runKey);
  if (!ex || !core.isOpen(ex)) return null;
  const a = ex.s.activities[ref.scheduledEventId];
  if (a?.phase !== 'scheduled' || a.attempt !== ref.attempt) return null;
  return startActivity(core, ex, a, r.identity ?? '');
}

export function startActivity(
  core: EngineCore,
  ex: Execution,
  a: ActivityState,
  identity: string,
): Req<'PollActivityTaskQueueResponse'> {
  const s = ex.s;
  const now = core.clock.now();
  a.phase = 'started';
  a.startedTime = now;
  a.startedIdentity = identity;
  a.lastHeartbeatTime = now;
  core.clearDeadline(ex, `act:${a.scheduledEventId}:s2s`);
  core.setDeadline(ex, `act:${a.scheduledEventId}:stc`, now + a.startToCloseMs);
  if (a.heartbeatMs) core.setDeadline(ex, `act:${a.scheduledEventId}:hb`, now + a.heartbeatMs);
  core.markDirty(ex);
  const scheduled = ex.history[a.scheduledEventId - 1]?.activityTaskScheduledEventAttributes;
  return {
    taskToken: encodeToken({ k: 'act', ns: s.namespace, r: s.runId, s: a.scheduledEventId, a: a.attempt }),
    workflowNamespace: s.namespace,
    workflowType: { name: s.workflowType },
    workflowExecution: { workflowId: s.workflowId, runId: s.runId },
    activityType: { name: a.activityType },
    activityId: a.activityId,
    header: scheduled?.header,
    input: scheduled?.input,
    heartbeatDetails: a.heartbeatDetails,
    scheduledTime: msTs(a.scheduledTime),
    currentAttemptScheduledTime: msTs(a.attemptScheduledTime),
    startedTime: msTs(now),
    attempt: a.attempt,
    scheduleToCloseTimeout: msDuration(a.scheduleToCloseMs || 0),
    startToCloseTimeout: msDuration(a.startToCloseMs),
    heartbeatTimeout: msDuration(a.heartbeatMs),
    retryPolicy: a.retryPolicy,
    // The activity's own priority fields win; the workflow's fill in the rest (Temporal's inheritance).
    priority: mergePriority(s.priority, scheduled?.priority),
  };
}

// ---------------------------------------------------------------- reports on a started attempt: by task token or by id

/** The started attempt an RPC reports on. */
interface Found {
  ex: Execution;
  a: ActivityState;
}

/**
 * An RPC reporting on a started activity attempt: `find` locates the attempt (by task token or by workflow id
 * + activity id), `apply` records the report, and the change is journaled before the caller is answered.
 */
function reportRpc<M extends RpcName>(
  find: (core: EngineCore, r: RpcRequest<M>) => Found,
  apply: (core: EngineCore, ex: Execution, a: ActivityState, r: RpcRequest<M>) => RpcResponse<M>,
): Rpc<M> {
  return async (core, r) => {
    const { ex, a } = find(core, r);
    const resp = apply(core, ex, a, r);
    await core.commit();
    return resp;
  };
}

function byToken(core: EngineCore, r: { taskToken?: Uint8Array | null }): Found {
  const t = decodeToken(r.taskToken, core.namespaces);
  if (t.k !== 'act') throw invalid('not an activity task token');
  const ex = core.runs.get(execKey(t.ns, t.r));
  const a = ex && core.isOpen(ex) ? ex.s.activities[t.s] : undefined;
  if (!ex || !a || a.attempt !== t.a || a.phase !== 'started') throw notFound('activity task not found');
  return { ex, a };
}

function byId(
  core: EngineCore,
  r: { namespace?: string | null; workflowId?: string | null; runId?: string | null; activityId?: string | null },
): Found {
  const ex = core.findOpenRun(core.ns(r.namespace), { workflowId: r.workflowId, runId: r.runId });
  const a = Object.values(ex.s.activities).find((x) => x.activityId === r.activityId);
  if (!a) throw notFound('activity task not found');
  if (a.phase !== 'started') {
    // Completing by id an activity nobody has started still counts as a start by this caller.
    a.phase = 'started';
    a.startedTime = core.clock.now();
  }
  return { ex, a };
}

/** Closes the started attempt: its started event and the closing event (`type`, `attrs`) are written together. */
function closeStarted(core: EngineCore, ex: Execution, a: ActivityState, type: number, field: string, attrs: object): object {
  const events = [startedEvent(core, a), core.event(type, field, attrs)];
  closeActivity(core, ex, a);
  addExternal(core, ex, events, true);
  return {};
}

function completed(
  core: EngineCore,
  ex: Execution,
  a: ActivityState,
  r: { result?: Payloads | null; identity?: string | null },
): object {
  // Too large to keep: the activity fails for good instead, as on Temporal.
  if (blobTooLarge(core, payloadsSize(r.result)))
    return failed(core, ex, a, { failure: serverFailure(FailureReason.completeResult, true) });
  return closeStarted(core, ex, a, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, 'activityTaskCompletedEventAttributes', {
    result: r.result,
    scheduledEventId: a.scheduledEventId,
    startedEventId: 0,
    identity: r.identity ?? '',
  });
}

function failed(
  core: EngineCore,
  ex: Execution,
  a: ActivityState,
  r: { failure?: Failure | null; lastHeartbeatDetails?: Payloads | null },
): { failures?: Failure[] } {
  // What is too large to keep is replaced or dropped, and the worker told so in `failures`.
  const failures: Failure[] = [];
  let details = r.lastHeartbeatDetails ?? null;
  if (details && blobTooLarge(core, payloadsSize(details))) {
    failures.push(serverFailure(FailureReason.heartbeat, true));
    details = null;
  }
  let failure = r.failure ?? { message: 'activity failed' };
  const replaced = oversizedFailure(core, failure);
  if (replaced) {
    failure = replaced;
    failures.push(replaced);
  }
  failAttempt(core, ex, a, failure, 0, details);
  return failures.length > 0 ? { failures } : {};
}

function canceled(
  core: EngineCore,
  ex: Execution,
  a: ActivityState,
  r: { details?: Payloads | null; identity?: string | null },
): object {
  if (blobTooLarge(core, payloadsSize(r.details)))
    return failed(core, ex, a, { failure: serverFailure(FailureReason.cancelDetails, true) });
  return closeStarted(core, ex, a, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED, 'activityTaskCanceledEventAttributes', {
    details: r.details,
    latestCancelRequestedEventId: a.cancelRequestedEventId,
    scheduledEventId: a.scheduledEventId,
    startedEventId: 0,
    identity: r.identity ?? '',
  });
}

/** Keeps the details for the next attempt, pushes the heartbeat deadline out, and tells the worker of a cancel request. */
function heartbeat(
  core: EngineCore,
  ex: Execution,
  a: ActivityState,
  r: { details?: Payloads | null },
): { cancelRequested: boolean } {
  if (r.details && blobTooLarge(core, payloadsSize(r.details))) {
    // Details too large to keep: the activity fails for good, and the worker is told to stop.
    failed(core, ex, a, { failure: serverFailure(FailureReason.heartbeat, true) });
    return { cancelRequested: true };
  }
  if (r.details) a.heartbeatDetails = r.details;
  a.lastHeartbeatTime = core.clock.now();
  if (a.heartbeatMs) core.setDeadline(ex, `act:${a.scheduledEventId}:hb`, a.lastHeartbeatTime + a.heartbeatMs);
  core.markDirty(ex);
  return { cancelRequested: a.cancelRequested };
}

export const respondActivityTaskCompleted = reportRpc<'RespondActivityTaskCompleted'>(byToken, completed);
export const respondActivityTaskCompletedById = reportRpc<'RespondActivityTaskCompletedById'>(byId, completed);
export const respondActivityTaskFailed = reportRpc<'RespondActivityTaskFailed'>(byToken, failed);
export const respondActivityTaskFailedById = reportRpc<'RespondActivityTaskFailedById'>(byId, failed);
export const respondActivityTaskCanceled = reportRpc<'RespondActivityTaskCanceled'>(byToken, canceled);
export const respondActivityTaskCanceledById = reportRpc<'RespondActivityTaskCanceledById'>(byId, canceled);
export const recordActivityTaskHeartbeat = reportRpc<'RecordActivityTaskHeartbeat'>(byToken, heartbeat);
export const recordActivityTaskHeartbeatById = reportRpc<'RecordActivityTaskHeartbeatById'>(byId, heartbeat);

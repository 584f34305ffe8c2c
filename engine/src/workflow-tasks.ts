// Workflow-task dispatch: events that wake the workflow, scheduling a task (normal or sticky queue), offering
// it to pollers, starting it (history, update requests and queries it carries), failing, timing out and
// retrying it, and the sticky queues of workers that go away. Completion is workflow-task-completion.ts.
import { randomUUID } from 'node:crypto';
import { historySizeBytes, type EngineCore, type Rpc, type TaskRef } from './core.js';
import { notFound } from './errors.js';
import { HISTORY_PAGE, pageToken } from './history.js';
import { log } from './log.js';
import { longPoll } from './long-poll.js';
import {
  EventType,
  durationMs,
  enums,
  msDuration,
  msTs,
  num,
  packAny,
  pb,
  type HistoryEvent,
  type Message,
  type Req,
} from './proto.js';
import { answerAttachedQueries, attachPendingQueries, dispatchPendingQueries, startQueryTask } from './queries.js';
import { execKey, type BufferedGroup, type Execution, type ExecutionState } from './state.js';
import { decodeToken, encodeToken, type TaskToken } from './tokens.js';

const STICKY_DEFAULT_MS = 5_000;

/** An event not caused by the running workflow task: buffered while a task is in flight, and it wakes the workflow. */
export function addExternal(core: EngineCore, ex: Execution, events: HistoryEvent[], linkStarted = false): void {
  const g: BufferedGroup = { events, linkStarted };
  if (ex.s.wft.phase === 'started') {
    ex.s.buffered.push(g);
  } else {
    core.appendGroup(ex, g);
    ex.s.wft.speculativeFrom = null;
  }
  scheduleWorkflowTask(core, ex);
  core.notify(ex);
  core.markDirty(ex);
}

export function scheduleWorkflowTask(core: EngineCore, ex: Execution, speculative = false): void {
  const s = ex.s;
  if (!core.isOpen(ex) || s.wft.phase !== 'none') return;
  if (s.deadlines.backoff !== undefined || s.deadlines.wftretry !== undefined) return;
  const now = core.clock.now();
  const sticky = s.sticky;
  const queue = sticky ? sticky.queue : s.taskQueue;
  const historyBefore = ex.history.length;
  const e = core.appendNow(
    ex,
    core.event(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 'workflowTaskScheduledEventAttributes', {
      taskQueue: sticky
        ? { name: queue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_STICKY, normalName: s.taskQueue }
        : { name: queue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      startToCloseTimeout: msDuration(s.workflowTaskTimeoutMs),
      attempt: s.wft.attempt,
    }),
  );
  s.wft = {
    phase: 'scheduled',
    scheduledEventId: num(e.eventId),
    startedEventId: 0,
    attempt: s.wft.attempt,
    queue,
    sticky: !!sticky,
    scheduledTime: now,
    startedTime: 0,
    speculativeFrom: speculative ? historyBefore : null,
  };
  dispatchWorkflowTask(core, ex);
}

export function dispatchWorkflowTask(core: EngineCore, ex: Execution): void {
  const s = ex.s;
  const runKey = execKey(s.namespace, s.runId);
  core.clock.setOutstanding(`wft:${runKey}`, true);
  const ref: TaskRef = { kind: 'wft', runKey, scheduledEventId: s.wft.scheduledEventId };
  core.queues.offer(core.queueKey(s.namespace, s.wft.queue, 'wf'), ref);
  if (s.wft.sticky && s.sticky) {
    // A sticky task nobody picks up goes back to the normal queue (with full history).
    const timeout = s.sticky.scheduleToStartMs || STICKY_DEFAULT_MS;
    const scheduledEventId = s.wft.scheduledEventId;
    const old = core.stickyTimers.get(runKey);
    if (old) clearTimeout(old);
    core.stickyTimers.set(
      runKey,
      setTimeout(() => {
        core.stickyTimers.delete(runKey);
        if (s.wft.phase === 'scheduled' && s.wft.scheduledEventId === scheduledEventId && s.wft.sticky) {
          moveToNormalQueue(core, ex);
        }
      }, timeout),
    );
  }
}

function moveToNormalQueue(core: EngineCore, ex: Execution): void {
  const s = ex.s;
  s.sticky = null;
  s.wft.sticky = false;
  s.wft.queue = s.taskQueue;
  core.queues.offer(core.queueKey(s.namespace, s.taskQueue, 'wf'), {
    kind: 'wft',
    runKey: execKey(s.namespace, s.runId),
    scheduledEventId: s.wft.scheduledEventId,
  });
  core.markDirty(ex);
}

function clearStickyTimer(core: EngineCore, runKey: string): void {
  const st = core.stickyTimers.get(runKey);
  if (st) {
    clearTimeout(st);
    core.stickyTimers.delete(runKey);
  }
}

export function workflowTaskDone(core: EngineCore, ex: Execution): void {
  const runKey = execKey(ex.s.namespace, ex.s.runId);
  ex.s.wft.phase = 'none';
  core.clearDeadline(ex, 'wft');
  core.clock.setOutstanding(`wft:${runKey}`, false);
  clearStickyTimer(core, runKey);
}

/** Writes the event ending the started workflow task without a completion (failed, timed out): its ids, then `attrs`. */
export function appendTaskOutcome(core: EngineCore, ex: Execution, type: number, field: string, attrs: object): void {
  const w = ex.s.wft;
  core.appendNow(
    ex,
    core.event(type, field, { scheduledEventId: w.scheduledEventId, startedEventId: w.startedEventId, ...attrs }),
  );
}

export function workflowTaskTimedOut(core: EngineCore, ex: Execution, timeoutType: number): void {
  appendTaskOutcome(core, ex, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, 'workflowTaskTimedOutEventAttributes', {
    timeoutType,
  });
  retryWorkflowTask(core, ex);
}

export function retryWorkflowTask(core: EngineCore, ex: Execution): void {
  const s = ex.s;
  workflowTaskDone(core, ex);
  s.wft.attempt++;
  s.wft.speculativeFrom = null;
  s.sticky = null;
  for (const u of Object.values(s.updates)) if (u.phase === 'delivered') u.phase = 'admitted';
  answerAttachedQueries(core, ex, {});
  core.flushBuffered(ex);
  // The SDK fails a task on the first attempt only; later attempts are left to time out, so back off gently.
  if (s.wft.attempt > 2) {
    core.setDeadline(ex, 'wftretry', core.clock.now() + Math.min(1000 * (s.wft.attempt - 2), 10_000));
  } else {
    scheduleWorkflowTask(core, ex);
  }
  dispatchPendingQueries(core, ex);
  core.notify(ex);
  core.markDirty(ex);
}

export const pollWorkflowTaskQueue: Rpc<'PollWorkflowTaskQueue'> = (core, r, onCancel) =>
  longPoll(core, r, 'wf', onCancel, takeWorkflowTask);

/** A polled reference: a query task, or the run's scheduled workflow task if it is still the one queued here. */
function takeWorkflowTask(
  core: EngineCore,
  ref: TaskRef,
  r: Req<'PollWorkflowTaskQueueRequest'>,
): Req<'PollWorkflowTaskQueueResponse'> | null {
  if (ref.kind === 'query') return startQueryTask(core, ref.queryId);
  if (ref.kind !== 'wft') return null;
  const ex = core.runs.get(ref.runKey);
  if (!ex || !core.isOpen(ex)) return null;
  const s = ex.s;
  if (s.wft.phase !== 'scheduled' || s.wft.scheduledEventId !== ref.scheduledEventId || s.wft.queue !== r.taskQueue?.name)
    return null;
  const sticky = r.taskQueue?.kind === enums.TaskQueueKind.TASK_QUEUE_KIND_STICKY;
  return startWorkflowTask(core, ex, r.identity ?? '', sticky);
}

/** Starts the scheduled task for a poller (or, eager-start.ts, for the caller of a start). */
export function startWorkflowTask(
  core: EngineCore,
  ex: Execution,
  identity: string,
  sticky: boolean,
): Req<'PollWorkflowTaskQueueResponse'> {
  const s = ex.s;
  const now = core.clock.now();
  const { sizeBytes, reasons } = historyLimits(core, ex);
  const started = core.appendNow(
    ex,
    core.event(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, 'workflowTaskStartedEventAttributes', {
      scheduledEventId: s.wft.scheduledEventId,
      identity,
      requestId: randomUUID(),
      historySizeBytes: sizeBytes,
      suggestContinueAsNew: reasons.length > 0 || undefined,
      suggestContinueAsNewReasons: reasons.length > 0 ? reasons : undefined,
    }),
  );
  s.wft.phase = 'started';
  s.wft.startedEventId = num(started.eventId);
  s.wft.startedTime = now;
  core.setDeadline(ex, 'wft', now + s.workflowTaskTimeoutMs);
  const runKey = execKey(s.namespace, s.runId);
  clearStickyTimer(core, runKey);
  const messages = deliverAdmittedUpdates(s);
  const queries = attachPendingQueries(core, ex, runKey);
  const from = sticky ? s.lastCompletedStartedEventId : 0;
  const events = ex.history.slice(from);
  if (log.debugEnabled)
    log.debug('workflow task started', {
      sticky,
      previousStartedEventId: s.lastCompletedStartedEventId,
      events: events.map((e) => `${e.eventId}:${e.eventType}`).join(' '),
      messages: messages.length,
    });
  const token = encodeToken({ k: 'wft', ns: s.namespace, r: s.runId, s: s.wft.scheduledEventId, a: s.wft.attempt });
  let nextPageToken: Uint8Array | undefined;
  let page = events;
  if (events.length > HISTORY_PAGE) {
    page = events.slice(0, HISTORY_PAGE);
    nextPageToken = pageToken(s.runId, from + HISTORY_PAGE, s.wft.startedEventId);
  }
  return {
    taskToken: token,
    workflowExecution: { workflowId: s.workflowId, runId: s.runId },
    workflowType: { name: s.workflowType },
    previousStartedEventId: s.lastCompletedStartedEventId,
    startedEventId: s.wft.startedEventId,
    attempt: s.wft.attempt,
    history: { events: page },
    nextPageToken,
    workflowExecutionTaskQueue: { name: s.taskQueue, kind: enums.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    scheduledTime: msTs(s.wft.scheduledTime),
    startedTime: msTs(now),
    messages,
    queries,
  };
}

/**
 * The history's size as the started event reports it, and why continue-as-new is suggested, as Temporal decides
 * it: the size so far (without this task's started event) against `limit.historySize.suggestContinueAsNew`, and
 * the started event's id against `limit.historyCount.suggestContinueAsNew`.
 */
function historyLimits(core: EngineCore, ex: Execution): { sizeBytes: number; reasons: number[] } {
  const R = enums.SuggestContinueAsNewReason;
  const sizeBytes = historySizeBytes(ex);
  const reasons: number[] = [];
  if (sizeBytes >= core.dynamicConfig.historySizeSuggestContinueAsNew) {
    reasons.push(R.SUGGEST_CONTINUE_AS_NEW_REASON_HISTORY_SIZE_TOO_LARGE);
  }
  if (ex.history.length + 1 >= core.dynamicConfig.historyCountSuggestContinueAsNew) {
    reasons.push(R.SUGGEST_CONTINUE_AS_NEW_REASON_TOO_MANY_HISTORY_EVENTS);
  }
  return { sizeBytes, reasons };
}

/** Admitted updates go out with the starting task as protocol messages (their requests). */
function deliverAdmittedUpdates(s: ExecutionState): Message[] {
  const messages: Message[] = [];
  for (const u of Object.values(s.updates)) {
    if (u.phase !== 'admitted') continue;
    u.phase = 'delivered';
    messages.push({
      id: `${u.updateId}/request`,
      protocolInstanceId: u.updateId,
      eventId: s.wft.startedEventId - 1,
      body: packAny('temporal.api.update.v1.Request', pb.temporal.api.update.v1.Request, u.request),
    });
  }
  return messages;
}

/** The run whose workflow task the token names, if that task is still the started one. */
export function startedWorkflowTask(core: EngineCore, token: TaskToken): Execution {
  const ex = core.runs.get(execKey(token.ns, token.r));
  if (!ex || !core.isOpen(ex) || token.k !== 'wft') throw notFound('Workflow task not found.');
  const w = ex.s.wft;
  if (w.phase !== 'started' || w.scheduledEventId !== token.s || w.attempt !== token.a) {
    throw notFound('Workflow task not found.');
  }
  return ex;
}

export const respondWorkflowTaskFailed: Rpc<'RespondWorkflowTaskFailed'> = async (core, r) => {
  const ex = startedWorkflowTask(core, decodeToken(r.taskToken));
  appendTaskOutcome(core, ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
    cause: r.cause,
    failure: r.failure,
    identity: r.identity,
  });
  retryWorkflowTask(core, ex);
  await core.commit();
  return {};
};

/** The worker's sticky queue for the run's next tasks, as its completion asked. */
export function applySticky(ex: Execution, r: Req<'RespondWorkflowTaskCompletedRequest'>): void {
  const q = r.stickyAttributes?.workerTaskQueue?.name;
  ex.s.sticky = q ? { queue: q, scheduleToStartMs: durationMs(r.stickyAttributes?.scheduleToStartTimeout) } : null;
}

export function scheduleIfPendingUpdates(core: EngineCore, ex: Execution): void {
  if (Object.values(ex.s.updates).some((u) => u.phase === 'admitted')) scheduleWorkflowTask(core, ex, ex.s.wft.phase === 'none');
}

export const shutdownWorker: Rpc<'ShutdownWorker'> = async (core, r) => {
  const namespace = core.ns(r.namespace);
  const sticky = r.stickyTaskQueue;
  if (!sticky) return {};
  // Tasks waiting on the departing worker's sticky queue go to the normal queue right away.
  core.queues.drain(core.queueKey(namespace, sticky, 'wf'));
  for (const ex of core.runs.values()) {
    if (ex.s.namespace !== namespace || ex.s.sticky?.queue !== sticky) continue;
    if (ex.s.wft.phase === 'scheduled' && ex.s.wft.sticky) moveToNormalQueue(core, ex);
    else ex.s.sticky = null;
  }
  await core.commit();
  return {};
};

export const resetStickyTaskQueue: Rpc<'ResetStickyTaskQueue'> = async (core, r) => {
  const ex = core.findRun(core.ns(r.namespace), r.execution);
  ex.s.sticky = null;
  if (ex.s.wft.phase === 'scheduled' && ex.s.wft.sticky) moveToNormalQueue(core, ex);
  await core.commit();
  return {};
};

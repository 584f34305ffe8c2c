// RespondWorkflowTaskCompleted: query answers, then either a refusal (invalid commands; closing over events the
// workflow has not seen; a speculative update task whose updates were all rejected, which leaves no trace), or
// the WorkflowTaskCompleted event, the commands and protocol messages in order, and eager activity tasks. A
// completion that leads to a new workflow task and asks for it (`returnNewWorkflowTask`) gets it in the response,
// already started for its worker.
import { startActivity } from './activity-tasks.js';
import { applyCommand, invalidCommand, isClosingCommand } from './commands.js';
import type { EngineCore, Rpc } from './core.js';
import { invalid } from './errors.js';
import { log } from './log.js';
import { CommandType, EventType, enums, num, type Command, type Message, type Req } from './proto.js';
import { answerAttachedQueries, dispatchPendingQueries } from './queries.js';
import { processMessage, rejectUnprocessedUpdates } from './signals-updates.js';
import type { ActivityState, Execution, WorkerVersionInfo } from './state.js';
import { decodeToken } from './tokens.js';
import {
  appendTaskOutcome,
  applySticky,
  retryWorkflowTask,
  scheduleIfPendingUpdates,
  scheduleWorkflowTask,
  startedWorkflowTask,
  startWorkflowTask,
  workflowTaskDone,
} from './workflow-tasks.js';

type CompletedRequest = Req<'RespondWorkflowTaskCompletedRequest'>;

export const respondWorkflowTaskCompleted: Rpc<'RespondWorkflowTaskCompleted'> = async (core, r) => {
  const ex = startedWorkflowTask(core, decodeToken(r.taskToken));
  const s = ex.s;
  answerAttachedQueries(core, ex, r.queryResults ?? {});
  const commands = r.commands ?? [];
  if (log.debugEnabled)
    log.debug('workflow task completed', {
      commands: commands.map((c) => c.commandType),
      messages: (r.messages ?? []).map((m) => m.body?.type_url),
      sticky: r.stickyAttributes?.workerTaskQueue?.name,
    });
  const messages = new Map((r.messages ?? []).map((m) => [m.id ?? '', m]));
  const bad = invalidCommand(ex, commands);
  if (bad) {
    failInvalidCompletion(core, ex, r, bad);
    await core.commit();
    throw invalid(bad.message);
  }
  if (commands.some((c) => isClosingCommand(c.commandType ?? 0)) && hasNewWork(ex)) {
    failUnhandledCommand(core, ex, r);
    await core.commit();
    // As the server answers: the SDK evicts the run on exactly this and replays it with the new events; a success
    // would leave its cached run closed, so it would send the same closing command again and lose what arrived.
    throw invalid('UnhandledCommand');
  }
  // A heartbeat (forceCreateNewWorkflowTask: the SDK keeps the task while a local activity runs) is kept even on a
  // speculative task with nothing in it, as Temporal keeps it: dropping it left the worker without its next task.
  if (
    !r.forceCreateNewWorkflowTask &&
    s.wft.speculativeFrom !== null &&
    onlyRejections(commands, messages) &&
    s.buffered.length === 0
  ) {
    discardSpeculativeTask(core, ex, r, messages);
    const workflowTask = newWorkflowTaskFor(core, ex, r);
    await core.commit();
    // Tells the worker to forget the discarded task's events (it resets its last started event id).
    return { resetHistoryEventId: s.lastCompletedStartedEventId, workflowTask };
  }
  const activityTasks = completeWorkflowTask(core, ex, r, commands, messages);
  const workflowTask = newWorkflowTaskFor(core, ex, r);
  await core.commit();
  return { activityTasks, workflowTask };
};

/**
 * The workflow task this completion scheduled (forced, as the SDK's heartbeat of a long local activity does, or for
 * events and updates that arrived while the task ran), started at once for the completing worker when it asked for
 * it with `returnNewWorkflowTask`, as Temporal does: the worker keeps working on the run without a round trip
 * through matching (and the SDK keeps the run's task slot). It is what a poll of a sticky worker would get — the
 * history since the last completed task, the updates admitted meanwhile, the queries waiting — and stays
 * outstanding for the clock like a polled one. The reference offered to pollers when it was scheduled is skipped
 * when taken (the task is no longer the scheduled one). Nothing when the run closed or no task is scheduled.
 */
function newWorkflowTaskFor(
  core: EngineCore,
  ex: Execution,
  r: CompletedRequest,
): Req<'PollWorkflowTaskQueueResponse'> | undefined {
  if (!r.returnNewWorkflowTask || !core.isOpen(ex) || ex.s.wft.phase !== 'scheduled') return undefined;
  // Temporal always sends the partial history here (StickyExecutionEnabled): the SDKs ask only when they cache runs.
  return startWorkflowTask(core, ex, r.identity ?? '', true);
}

/** As the server does: the task fails with the cause, nothing of it is applied, and the caller hears why. */
function failInvalidCompletion(
  core: EngineCore,
  ex: Execution,
  r: CompletedRequest,
  bad: { cause: number; message: string },
): void {
  appendTaskOutcome(core, ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
    cause: bad.cause,
    failure: { message: bad.message, source: 'Server' },
    identity: r.identity,
  });
  retryWorkflowTask(core, ex);
}

/** Events or updates arrived while the task ran: a run cannot close over what it has not seen yet. */
function hasNewWork(ex: Execution): boolean {
  return ex.s.buffered.length > 0 || Object.values(ex.s.updates).some((u) => u.phase === 'admitted');
}

/** The task fails with UNHANDLED_COMMAND and a new one makes the workflow look at the new events first. */
function failUnhandledCommand(core: EngineCore, ex: Execution, r: CompletedRequest): void {
  const s = ex.s;
  appendTaskOutcome(core, ex, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'workflowTaskFailedEventAttributes', {
    cause: enums.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
    identity: r.identity,
  });
  workflowTaskDone(core, ex);
  s.wft.speculativeFrom = null;
  s.sticky = null;
  core.flushBuffered(ex);
  scheduleWorkflowTask(core, ex);
}

function onlyRejections(commands: Command[], messages: Map<string, Message>): boolean {
  return commands.length === 0 && [...messages.values()].every((m) => (m.body?.type_url ?? '').endsWith('update.v1.Rejection'));
}

/** A task that only delivered updates the workflow rejected leaves no trace in history. */
function discardSpeculativeTask(core: EngineCore, ex: Execution, r: CompletedRequest, messages: Map<string, Message>): void {
  const s = ex.s;
  for (const m of messages.values()) processMessage(core, ex, m, 0);
  core.truncateHistory(ex, s.wft.speculativeFrom!);
  workflowTaskDone(core, ex);
  s.wft.speculativeFrom = null;
  applySticky(ex, r);
  scheduleIfPendingUpdates(core, ex);
  dispatchPendingQueries(core, ex);
  core.notify(ex);
  core.markDirty(ex);
}

/** Records the completion, applies commands and messages in order; returns the eager activity tasks it started. */
function completeWorkflowTask(
  core: EngineCore,
  ex: Execution,
  r: CompletedRequest,
  commands: Command[],
  messages: Map<string, Message>,
): Req<'PollActivityTaskQueueResponse'>[] {
  const s = ex.s;
  const completedId = recordCompletion(core, ex, r);
  const after: Array<() => void> = [];
  const eager: ActivityState[] = [];
  for (const c of commands) {
    if (!core.isOpen(ex)) break;
    if (c.commandType === CommandType.COMMAND_TYPE_PROTOCOL_MESSAGE) {
      const id = c.protocolMessageCommandAttributes?.messageId ?? '';
      const m = messages.get(id);
      if (m) {
        messages.delete(id);
        processMessage(core, ex, m, completedId);
      }
      continue;
    }
    applyCommand(core, ex, c, completedId, after, eager);
  }
  for (const m of messages.values()) processMessage(core, ex, m, completedId);
  if (core.isOpen(ex) && !r.forceCreateNewWorkflowTask) rejectUnprocessedUpdates(ex);
  if (core.isOpen(ex)) {
    const wake = core.flushBuffered(ex);
    for (const f of after) f();
    if (wake || r.forceCreateNewWorkflowTask) scheduleWorkflowTask(core, ex);
    scheduleIfPendingUpdates(core, ex);
  }
  const activityTasks = [];
  for (const a of eager) {
    if (core.isOpen(ex) && s.activities[a.scheduledEventId] === a && a.phase === 'scheduled') {
      activityTasks.push(startActivity(core, ex, a, r.identity ?? ''));
    }
  }
  dispatchPendingQueries(core, ex);
  core.notify(ex);
  core.markDirty(ex);
  return activityTasks;
}

/** The WorkflowTaskCompleted event; the task is done and the worker's sticky queue recorded. Returns the event id. */
function recordCompletion(core: EngineCore, ex: Execution, r: CompletedRequest): number {
  const s = ex.s;
  const version = workerVersionOf(r);
  const completed = core.appendNow(
    ex,
    core.event(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 'workflowTaskCompletedEventAttributes', {
      scheduledEventId: s.wft.scheduledEventId,
      startedEventId: s.wft.startedEventId,
      identity: r.identity,
      binaryChecksum: r.binaryChecksum,
      sdkMetadata: r.sdkMetadata,
      meteringMetadata: r.meteringMetadata,
      workerVersion: version.stamp ?? undefined,
      workerDeploymentName: version.deploymentName || undefined,
      deploymentVersion: version.deploymentVersion ?? undefined,
      versioningBehavior: version.behavior || undefined,
    }),
  );
  s.workerVersion = version;
  s.buildIds = buildIdsAfterCompletion(s.buildIds ?? [], version);
  const completedId = num(completed.eventId);
  s.lastCompletedStartedEventId = s.wft.startedEventId;
  s.lastWftCompletedEventId = completedId;
  s.wft.attempt = 1;
  s.wft.speculativeFrom = null;
  workflowTaskDone(core, ex);
  applySticky(ex, r);
  return completedId;
}

/**
 * What a completion says about its worker's version, as the server records it in the WorkflowTaskCompleted event:
 * the version stamp (build id), the deployment name, the deployment version of a worker that uses worker
 * versioning, and the workflow's versioning behavior (only when the worker uses versioning: SDKs report their
 * default behavior even when they do not).
 */
function workerVersionOf(r: CompletedRequest): WorkerVersionInfo {
  const options = r.deploymentOptions;
  const versioned = options?.workerVersioningMode === enums.WorkerVersioningMode.WORKER_VERSIONING_MODE_VERSIONED;
  let deploymentVersion: WorkerVersionInfo['deploymentVersion'] = null;
  if (versioned && options?.buildId) {
    deploymentVersion = { deploymentName: options.deploymentName ?? '', buildId: options.buildId };
  } else if (!options && r.deployment?.buildId) {
    deploymentVersion = { deploymentName: r.deployment.seriesName ?? '', buildId: r.deployment.buildId };
  }
  return {
    stamp: r.workerVersionStamp ?? null,
    deploymentName: options?.deploymentName || r.deployment?.seriesName || '',
    deploymentVersion,
    behavior: options && !versioned ? 0 : (r.versioningBehavior ?? 0),
  };
}

const UNVERSIONED = 'unversioned';
/** Temporal's `limit.searchAttributeValueSize` default: older build ids are dropped to stay within it. */
const MAX_BUILD_IDS_BYTES = 2 * 1024;

/**
 * The `BuildIds` search attribute after a completed workflow task, as Temporal maintains it: first the
 * `unversioned` sentinel (a workflow neither on build-id versioning nor with a versioning behavior) or
 * `pinned:<deployment>:<build id>` (a pinned workflow), then every build id that completed a task, as
 * `unversioned:<id>` or `versioned:<id>` (build-id versioning), oldest first.
 */
export function buildIdsAfterCompletion(existing: readonly string[], version: WorkerVersionInfo): string[] {
  const B = enums.VersioningBehavior;
  const out: string[] = [];
  if (!version.stamp?.useVersioning && version.behavior === B.VERSIONING_BEHAVIOR_UNSPECIFIED) out.push(UNVERSIONED);
  if (version.behavior === B.VERSIONING_BEHAVIOR_PINNED) {
    const v = version.deploymentVersion;
    out.push(`pinned:${v ? `${v.deploymentName}:${v.buildId}` : '__unversioned__'}`);
  }
  let buildId = '';
  if (version.stamp) {
    const id = version.stamp.buildId ?? '';
    buildId = !id ? UNVERSIONED : `${version.stamp.useVersioning ? 'versioned' : 'unversioned'}:${id}`;
  }
  let found = false;
  for (const v of existing) {
    if (v === buildId) found = true;
    if (v !== UNVERSIONED && !v.startsWith('assigned:') && !v.startsWith('pinned')) out.push(v);
  }
  if (!found && buildId) out.push(buildId);
  // Keep the sentinel; drop the oldest build ids past the size limit.
  const keepFirst = out[0] === UNVERSIONED ? 1 : 0;
  while (out.length > 0 && Buffer.byteLength(JSON.stringify(out)) > MAX_BUILD_IDS_BYTES) {
    out.splice(out.length === 1 ? 0 : keepFirst, 1);
  }
  return out;
}

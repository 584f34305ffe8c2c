// Restoring from the journal (runs rebuilt, deadlines and tasks re-armed) and retention (closed executions
// forgotten after their namespace's retention). Change tracking and journal staging are in core.ts.
import { dispatchActivity } from './activity-tasks.js';
import { SERVER_RECORD_KEY, type EngineCore, type ServerRecord } from './core.js';
import { Status, num, type HistoryEvent } from './proto.js';
import { StateCursor } from './journal-delta.js';
import { execKey, type Execution, type ExecutionState } from './state.js';
import { dispatchWorkflowTask } from './workflow-tasks.js';

/**
 * Rebuilds runs from the journal and re-arms every deadline and task (time that passed while down fires now).
 * Returns how many executions it restored.
 */
export function restore(core: EngineCore, restored: Map<string, { state: unknown; events: unknown[] }>): number {
  const server = restored.get(SERVER_RECORD_KEY)?.state as ServerRecord | undefined;
  // Before any deadline is re-armed: the advanced clock carries on from where it was.
  if (server?.clockOffsetMs && !core.clock.timeSkipping) core.clock.restoreOffset(server.clockOffsetMs);
  for (const n of server?.namespaces ?? []) core.namespaces.add(n);
  for (const [n, ms] of Object.entries(server?.retentionMs ?? {})) core.namespaceRetentionMs.set(n, ms);
  // Types given on this start's command line win over remembered ones.
  for (const [k, v] of Object.entries(server?.searchAttributes ?? {})) if (!core.saTypes.has(k)) core.saTypes.set(k, v);
  for (const [key, r] of restored) {
    if (key === SERVER_RECORD_KEY) continue;
    const s = r.state as ExecutionState;
    const ex: Execution = { s, history: r.events as HistoryEvent[], persistedLength: r.events.length };
    if (core.journal) {
      // The journal holds exactly this state (the snapshot written on open): later lines carry differences.
      ex.cursor = new StateCursor();
      ex.cursor.diff(s);
    }
    // Event task ids keep increasing across restarts.
    for (const e of ex.history) core.taskId = Math.max(core.taskId, num(e.taskId) + 1);
    core.runs.set(key, ex);
    core.indexRun(ex);
  }
  for (const ex of core.runs.values()) {
    if (ex.s.status === Status.WORKFLOW_EXECUTION_STATUS_RUNNING) rearm(core, ex);
  }
  core.markServerDirty();
  return core.runs.size;
}

/**
 * Offers an open run's scheduled tasks again and re-arms its deadlines. A workflow task a worker had started stays
 * started, as Temporal keeps it across a server restart: the worker that holds it (still running: only the server
 * went away) completes it with its token, or it times out at its start-to-close deadline (re-armed with the others).
 * Timing it out at once would hand the run a second task while that worker still works on the first one, which the
 * SDK cannot take ("a new WFT for a run which already has one"): its cached run then drops what the new task brings.
 */
function rearm(core: EngineCore, ex: Execution): void {
  const s = ex.s;
  // Sticky workers did not survive the restart with us; their tasks go to the normal queue.
  s.sticky = null;
  if (s.wft.phase === 'started') {
    // outstanding for the clock, as when it was started: a time skip waits for its completion or its timeout
    core.clock.setOutstanding(`wft:${execKey(s.namespace, s.runId)}`, true);
  } else if (s.wft.phase === 'scheduled') {
    s.wft.queue = s.taskQueue;
    s.wft.sticky = false;
    dispatchWorkflowTask(core, ex);
  }
  for (const a of Object.values(s.activities)) {
    if (a.phase === 'scheduled') dispatchActivity(core, ex, a);
    if (a.phase !== 'backoff') core.clock.setOutstanding(core.actKey(ex, a), true);
  }
  for (const [name, at] of Object.entries(s.deadlines)) core.armDeadline(ex, name, at);
  core.markDirty(ex);
}

/** Forgets executions closed longer ago than their namespace's retention period, as the server's retention does. */
export function sweepClosed(core: EngineCore): void {
  const now = core.clock.now();
  for (const [key, ex] of core.runs) {
    if (core.isOpen(ex) || ex.s.closeTime > now - core.retentionOf(ex.s.namespace)) continue;
    core.runs.delete(key);
    core.dirty.delete(ex);
    core.waiters.delete(key);
    const idKey = `${ex.s.namespace}/${ex.s.workflowId}`;
    const remaining = (core.byWorkflowId.get(idKey) ?? []).filter((k) => k !== key);
    if (remaining.length > 0) core.byWorkflowId.set(idKey, remaining);
    else core.byWorkflowId.delete(idKey);
    core.journal?.append({ key, base: 0, events: [], state: null, deleted: true });
  }
  void core.commit();
}

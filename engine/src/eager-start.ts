// Eager workflow start: a StartWorkflowExecution that asks for it (`requestEagerExecution`, which the SDKs set
// when a worker of theirs on the same connection reserved a slot for the task queue) gets the run's first
// workflow task, already started for the caller, in its response (`eagerWorkflowTask`) — one round trip instead
// of start + poll. As on Temporal, only a run that starts now gets one: not a start delay, not a deduplicated or
// conflicting start that answers with an existing run (those fall back to matching).
import type { EngineCore, RpcRequest, RpcResponse } from './core.js';
import type { Execution } from './state.js';
import { startWorkflowTask } from './workflow-tasks.js';

type EagerTask = RpcResponse<'StartWorkflowExecution'>['eagerWorkflowTask'];

/** The first workflow task of a run just created for `r`, started for its caller, if `r` asked for it. */
export function eagerWorkflowTask(
  core: EngineCore,
  ex: Execution,
  r: RpcRequest<'StartWorkflowExecution'>,
): EagerTask | undefined {
  if (!r.requestEagerExecution) return undefined;
  const w = ex.s.wft;
  // A start delay schedules nothing yet; the first task of a fresh run is attempt 1 on the normal queue.
  if (!core.isOpen(ex) || w.phase !== 'scheduled' || w.attempt !== 1 || w.sticky) return undefined;
  // The reference queued for pollers is skipped when taken: the task is no longer the scheduled one.
  return startWorkflowTask(core, ex, r.identity ?? '', false);
}

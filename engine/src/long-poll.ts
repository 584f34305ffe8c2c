// The long poll of a task queue, shared by PollWorkflowTaskQueue and PollActivityTaskQueue.
import type { EngineCore, OnCancel, TaskRef } from './core.js';
import { invalid } from './errors.js';

const POLL_WAIT_MS = 20_000;

/** What both polls ask for: a task queue of a namespace. */
interface PollRequest {
  namespace?: string | null;
  taskQueue?: { name?: string | null } | null;
}

/**
 * Waits up to 20 s for a task on the request's queue (`kind`: workflow or activity tasks) and hands each
 * reference to `take`, which re-validates it (the task may have been completed, timed out or moved meanwhile)
 * and starts it: null skips a stale reference and polls on. A started workflow or activity task is journaled
 * before the poller hears of it; a query task changes nothing. An empty response when the wait ends or the
 * caller goes away.
 */
export async function longPoll<Q extends PollRequest, R extends object>(
  core: EngineCore,
  r: Q,
  kind: 'wf' | 'act',
  onCancel: OnCancel,
  take: (core: EngineCore, ref: TaskRef, r: Q) => R | null,
): Promise<Partial<R>> {
  const namespace = core.ns(r.namespace);
  const name = r.taskQueue?.name;
  if (!name) throw invalid('task queue is required');
  const key = core.queueKey(namespace, name, kind);
  const deadline = Date.now() + POLL_WAIT_MS;
  let cancelled = false;
  let cancelCurrent: (() => void) | null = null;
  onCancel(() => {
    cancelled = true;
    cancelCurrent?.();
  });
  while (!cancelled) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const ref = await core.queues.poll(key, left, (c) => (cancelCurrent = c));
    if (!ref) break;
    if (cancelled) {
      // The caller is gone: hand the task to the next poller.
      core.queues.offer(key, ref);
      break;
    }
    const resp = take(core, ref, r);
    if (!resp) continue;
    if (ref.kind !== 'query') {
      await core.commit();
      // Starting the task made the run pass a history limit and it was terminated: the task is gone with it.
      const ex = core.runs.get(ref.runKey);
      if (ex?.limitReason && !core.isOpen(ex)) continue;
    }
    return resp;
  }
  return {};
}

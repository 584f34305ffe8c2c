// The long poll of a task queue, shared by PollWorkflowTaskQueue and PollActivityTaskQueue.
import type { EngineCore, OnCancel, TaskRef } from './core.js';

const POLL_WAIT_MS = 20_000;

/**
 * Waits up to 20 s for a task on the queue `key` and hands each reference to `take`, which re-validates it
 * (the task may have been completed, timed out or moved meanwhile) and starts it: null skips a stale
 * reference and polls on. A started workflow or activity task is journaled before the poller hears of it;
 * a query task changes nothing. An empty response when the wait ends or the caller goes away.
 */
export async function longPoll<Q, R extends object>(
  core: EngineCore,
  key: string,
  request: Q,
  onCancel: OnCancel,
  take: (core: EngineCore, ref: TaskRef, request: Q) => R | null,
): Promise<Partial<R>> {
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
    const resp = take(core, ref, request);
    if (!resp) continue;
    if (ref.kind !== 'query') await core.commit();
    return resp;
  }
  return {};
}

// Workflows of local-activities.test.ts: local activities that run longer than the workflow task timeout, so the
// SDK heartbeats the workflow task (completes it with forceCreateNewWorkflowTask and returnNewWorkflowTask).
import { condition, defineSignal, defineUpdate, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import type { EngineActivities } from './activities.js';

const { busyFor } = proxyLocalActivities<EngineActivities>({ startToCloseTimeout: '1 minute' });

/** Runs `count` local activities in a row, each busy for `ms` of real time; returns their results. */
export async function longLocalActivities(count: number, ms: number): Promise<string[]> {
  const results: string[] = [];
  for (let i = 0; i < count; i++) results.push(await busyFor(ms));
  return results;
}

export const noteSignal = defineSignal<[string]>('note');
export const noteUpdate = defineUpdate<string, [string]>('note');

export interface LongLocalActivityOutcome {
  activity: string;
  /** What the handlers had recorded when the local activity returned: `signal:<x>` / `update:<x>`. */
  seenAfterActivity: string[];
}

/**
 * One long local activity while signals and updates arrive; the handlers record what they got. The workflow then
 * waits (bounded) until `expected` messages were seen, so a message delivered only after the activity still counts.
 */
export async function longLocalActivityWithMessages(ms: number, expected: number): Promise<LongLocalActivityOutcome> {
  const seen: string[] = [];
  setHandler(noteSignal, (value) => {
    seen.push(`signal:${value}`);
  });
  setHandler(noteUpdate, (value) => {
    seen.push(`update:${value}`);
    return `noted ${value}`;
  });
  const activity = await busyFor(ms);
  const seenAfterActivity = [...seen];
  await condition(() => seen.length >= expected, '20s');
  return { activity, seenAfterActivity };
}

/**
 * Local activities of the given lengths in a row, a short timer between them (each wakes a new workflow task), then
 * it waits for an update that runs one more local activity in its own task (as paygate's verification does: one
 * local activity at a time): the load test's run.
 */
export async function localActivitiesUnderLoad(lengthsMs: number[]): Promise<number> {
  let updates = 0;
  let ready = false;
  setHandler(noteUpdate, async (value) => {
    await condition(() => ready);
    await busyFor(Number(value));
    updates++;
    return `noted ${value}`;
  });
  for (const ms of lengthsMs) {
    await busyFor(ms);
    await sleep(10);
  }
  ready = true;
  await condition(() => updates > 0, '60s');
  return lengthsMs.length + updates;
}

/**
 * Idle until an update comes (its workflow task is speculative: the engine may drop it if the update is rejected);
 * the update's handler runs a local activity of `value` ms, longer than the task timeout, so the SDK heartbeats that
 * task. Completes once `expected` updates were handled.
 */
export async function idleThenLongLocalActivityUpdate(expected: number): Promise<string[]> {
  const done: string[] = [];
  setHandler(noteUpdate, async (value) => {
    done.push(await busyFor(Number(value)));
    return `noted ${value}`;
  });
  await condition(() => done.length >= expected);
  return done;
}

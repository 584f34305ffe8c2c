// Workflows of local-activities.test.ts: local activities that run longer than the workflow task timeout, so the
// SDK heartbeats the workflow task (completes it with forceCreateNewWorkflowTask and returnNewWorkflowTask).
import { condition, defineSignal, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';
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

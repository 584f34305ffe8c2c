// The benchmark's only workflow, in its own bundle so each run evaluates nothing else per workflow.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { BenchActivities } from './activities.js';

const { echo } = proxyActivities<BenchActivities>({ startToCloseTimeout: '20s' });

/** One activity, then one timer. */
export async function activityAndTimer(timerMs: number): Promise<string> {
  const value = await echo('bench');
  await sleep(timerMs);
  return value;
}

// Workflows of the errors / limits / time-skipping / eager-start checks (server-errors.test.ts, limits.test.ts,
// time-skipping-sleep.test.ts, eager-start.test.ts).
import { proxyActivities, sleep } from '@temporalio/workflow';

/** Activities these workflows call; the tests register them on their own workers. */
export interface ErrorsActivities {
  /** Sleeps `ms` of server time through the test environment's `env.sleep()` (UnlockTimeSkippingWithSleep). */
  sleepOnServer(ms: number): Promise<void>;
  /** Returns its argument's length. */
  measure(data: string): Promise<number>;
  /** Returns a string of `bytes` characters. */
  produce(bytes: number): Promise<string>;
}

/** Which finishes first: a workflow timer of `timerMs`, or an activity sleeping `activityMs` on the server clock. */
export async function raceServerSleepAndTimer(activityMs: number, timerMs: number): Promise<string> {
  const { sleepOnServer } = proxyActivities<ErrorsActivities>({ startToCloseTimeout: '30 days' });
  const activity = sleepOnServer(activityMs).then(() => 'activity');
  const winner = await Promise.race([activity, sleep(timerMs).then(() => 'timer')]);
  // Settle the activity before the run closes, so no task outlives the workflow.
  await activity;
  return winner;
}

/** Timers due while an activity sleeps on the server clock must fire: returns which of them did. */
export async function timersDuringServerSleep(timerMs: number[], activityMs: number): Promise<boolean[]> {
  const { sleepOnServer } = proxyActivities<ErrorsActivities>({ startToCloseTimeout: '30 days' });
  const fired = timerMs.map(() => false);
  timerMs.forEach((ms, i) => {
    void sleep(ms).then(() => {
      fired[i] = true;
    });
  });
  await sleepOnServer(activityMs);
  return fired;
}

/** Schedules one activity whose input is `bytes` characters long. */
export async function activityWithInput(bytes: number): Promise<number> {
  const { measure } = proxyActivities<ErrorsActivities>({ startToCloseTimeout: '1 minute' });
  return measure('x'.repeat(bytes));
}

/** Completes with a result of `bytes` characters. */
export async function resultOfSize(bytes: number): Promise<string> {
  return 'x'.repeat(bytes);
}

/** Runs an activity that returns `bytes` characters (retried at most twice). */
export async function activityResultOfSize(bytes: number): Promise<number> {
  const { produce } = proxyActivities<ErrorsActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 2 } });
  return (await produce(bytes)).length;
}

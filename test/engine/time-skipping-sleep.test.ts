// `env.sleep()` (TestService.UnlockTimeSkippingWithSleep) called by a running activity: the activity holds time
// as an outstanding task, yet the sleep must reach its deadline — the Java test server skips time while the caller
// sleeps, firing the workflow timers due before it on the way. (The lock semantics without a sleeper stay as
// timers.test.ts pins them: a running activity alone holds time still.)
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bounded, createEnv, excludedAgainstRealServer, againstRealServer, uniqueId, withWorker } from './env.js';
import { raceServerSleepAndTimer, timersDuringServerSleep, type ErrorsActivities } from './workflows.js';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

if (againstRealServer) {
  excludedAgainstRealServer('time-skipping-sleep.test.ts', 'a real server has no virtual clock');
} else {
  describe('env.sleep() inside a running activity', () => {
    let env: TestWorkflowEnvironment;
    let activities: ErrorsActivities;

    beforeAll(async () => {
      env = await createEnv('time-skipping');
      activities = {
        sleepOnServer: (ms: number) => env.sleep(ms),
        measure: async (data: string) => data.length,
        produce: async (bytes: number) => 'x'.repeat(bytes),
      };
    });

    afterAll(async () => {
      await env?.teardown();
    });

    it('reaches its deadline and lets a shorter workflow timer win the race', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const before = (await env.connection.testService!.getCurrentTime({})).time;
        const winner = await bounded(
          env.client.workflow.execute(raceServerSleepAndTimer, {
            taskQueue,
            workflowId: uniqueId('race-timer'),
            args: [1_500_000, 1_000_000],
          }),
          20_000,
          'the race with a sleeping activity',
        );
        expect(winner).toBe('timer');
        const after = (await env.connection.testService!.getCurrentTime({})).time;
        // 25 virtual minutes passed in far less real time.
        expect(Number(after?.seconds) - Number(before?.seconds)).toBeGreaterThanOrEqual(1_500);
      });
    });

    it('lets the activity win when its sleep is the shorter one', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const winner = await bounded(
          env.client.workflow.execute(raceServerSleepAndTimer, {
            taskQueue,
            workflowId: uniqueId('race-activity'),
            args: [1_000_000, 1_500_000],
          }),
          20_000,
          'the race with a sleeping activity',
        );
        expect(winner).toBe('activity');
      });
    });

    it('fires every workflow timer due before the sleep ends, and none after', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const fired = await bounded(
          env.client.workflow.execute(timersDuringServerSleep, {
            taskQueue,
            workflowId: uniqueId('timers-during-sleep'),
            args: [[21_500, 24_500, 3 * DAY_MS], 2 * MINUTE_MS],
          }),
          20_000,
          'timers during a sleeping activity',
        );
        expect(fired).toEqual([true, true, false]);
      });
    });
  });
}

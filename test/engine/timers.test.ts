// Timers, conditions and the time-skipping TestService: virtual clock, lock/unlock counter,
// Sleep / SleepUntil / UnlockTimeSkippingWithSleep / GetCurrentTime, event times on the virtual clock.
import { WorkflowFailedError, type TestService } from '@temporalio/client';
import { msToTs, tsToMs } from '@temporalio/common/lib/time.js';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from './activities.js';
import {
  againstRealServer,
  createEnv,
  eventTypeName,
  eventually,
  excludedAgainstRealServer,
  historyEvents,
  isSubsequence,
  uniqueId,
  withWorker,
} from './env.js';
import { conditionWithTimeout, raceActivityAndTimer, releaseSignal, sleeper } from './workflows.js';

const EventType = temporal.api.enums.v1.EventType;
const MINUTE_MS = 60 * 1000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

let env: TestWorkflowEnvironment;
const activities = createActivities();

beforeAll(async () => {
  env = await createEnv();
});
afterAll(async () => {
  await env?.teardown();
});

function testServiceOf(environment: TestWorkflowEnvironment): TestService {
  const service = environment.connection.testService;
  if (service === undefined) throw new Error('the time-skipping environment exposes no TestService');
  return service;
}

async function virtualNowMs(): Promise<number> {
  const { time } = await testServiceOf(env).getCurrentTime({});
  return tsToMs(time);
}

describe('timers', () => {
  it('fires a timer and writes TIMER_STARTED then TIMER_FIRED', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(sleeper, {
        taskQueue,
        workflowId: uniqueId('timer'),
        args: [500],
      });
      expect(await handle.result()).toBeGreaterThanOrEqual(500);
      const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
      expect(isSubsequence(types, ['TIMER_STARTED', 'TIMER_FIRED', 'WORKFLOW_EXECUTION_COMPLETED']), types.join(' ')).toBe(true);
      const started = (await historyEvents(handle)).find((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED);
      expect(tsToMs(started?.timerStartedEventAttributes?.startToFireTimeout)).toBe(500);
    });
  });

  it('resolves a condition when signalled before its timeout', async () => {
    await withWorker(env, { activities }, async (taskQueue) => {
      const handle = await env.client.workflow.start(conditionWithTimeout, {
        taskQueue,
        workflowId: uniqueId('condition-signalled'),
        args: [HOUR_MS],
      });
      await handle.signal(releaseSignal);
      expect(await handle.result()).toBe(true);
    });
  });
});

if (againstRealServer) {
  excludedAgainstRealServer('time-skipping tests in timers.test.ts', 'a real server has no virtual clock');
} else {
  describe('time skipping', () => {
    it('completes a 30-day timer by skipping virtual time', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const before = await virtualNowMs();
        const elapsed = await env.client.workflow.execute(sleeper, {
          taskQueue,
          workflowId: uniqueId('timer-30-days'),
          args: [30 * DAY_MS],
        });
        expect(elapsed).toBeGreaterThanOrEqual(30 * DAY_MS);
        expect(await virtualNowMs()).toBeGreaterThanOrEqual(before + 30 * DAY_MS);
      });
    });

    it('times out a 30-minute condition window', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const before = await virtualNowMs();
        const released = await env.client.workflow.execute(conditionWithTimeout, {
          taskQueue,
          workflowId: uniqueId('condition-30-minutes'),
          args: [30 * MINUTE_MS],
        });
        expect(released).toBe(false);
        expect(await virtualNowMs()).toBeGreaterThanOrEqual(before + 30 * MINUTE_MS);
      });
    });

    it('skips to a 30-day workflow execution timeout', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const before = await virtualNowMs();
        const handle = await env.client.workflow.start(sleeper, {
          taskQueue,
          workflowId: uniqueId('timeout-30-days'),
          args: [60 * DAY_MS],
          workflowExecutionTimeout: '30 days',
        });
        await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
        expect((await handle.describe()).status.name).toBe('TIMED_OUT');
        const now = await virtualNowMs();
        expect(now).toBeGreaterThanOrEqual(before + 30 * DAY_MS);
        expect(now).toBeLessThan(before + 60 * DAY_MS);
      });
    });

    it('does not skip time while an activity is running', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const winner = await env.client.workflow.execute(raceActivityAndTimer, {
          taskQueue,
          workflowId: uniqueId('race'),
          args: [1_000, HOUR_MS],
        });
        expect(winner).toBe('activity');
      });
    });

    it('does not skip time while locked, and skips once the lock counter reaches zero', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        const handle = await env.client.workflow.start(sleeper, {
          taskQueue,
          workflowId: uniqueId('locked'),
          args: [DAY_MS],
        });
        // Time skipping starts locked; nobody awaits a result, so a 1-day timer cannot fire.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect((await handle.describe()).status.name).toBe('RUNNING');

        // One more lock and one unlock leave the initial lock in place.
        const testService = testServiceOf(env);
        await testService.lockTimeSkipping({});
        await testService.unlockTimeSkipping({});
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect((await handle.describe()).status.name).toBe('RUNNING');

        // Unlock the initial lock: the counter is zero and the server skips to the timer by itself.
        await testService.unlockTimeSkipping({});
        try {
          await eventually(
            async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined),
            'the workflow to complete after unlocking',
          );
        } finally {
          await testService.lockTimeSkipping({});
        }
        expect(await handle.result()).toBeGreaterThanOrEqual(DAY_MS);
      });
    });

    it('advances the virtual clock with Sleep and SleepUntil once unlocked, and with UnlockTimeSkippingWithSleep', async () => {
      const testService = testServiceOf(env);
      const t0 = await virtualNowMs();

      // Sleep and SleepUntil wait for server time; only with the counter at zero does it jump.
      await testService.unlockTimeSkipping({});
      let t2: number;
      try {
        await testService.sleep({ duration: msToTs('2 hours') });
        const t1 = await virtualNowMs();
        expect(t1).toBeGreaterThanOrEqual(t0 + 2 * HOUR_MS);

        await testService.sleepUntil({ timestamp: msToTs(t1 + 3 * DAY_MS) });
        t2 = await virtualNowMs();
        expect(t2).toBeGreaterThanOrEqual(t1 + 3 * DAY_MS);
      } finally {
        await testService.lockTimeSkipping({});
      }

      // The SDK's env.sleep: UnlockTimeSkippingWithSleep from a counter of one fast-forwards.
      await env.sleep('1 day');
      const t3 = await virtualNowMs();
      expect(t3).toBeGreaterThanOrEqual(t2 + DAY_MS);
      expect(await env.currentTimeMs()).toBeGreaterThanOrEqual(t3);
    });

    it('refuses an unbalanced UnlockTimeSkipping', async () => {
      const testService = testServiceOf(env);
      await testService.unlockTimeSkipping({});
      let unbalanced: unknown;
      try {
        unbalanced = await testService.unlockTimeSkipping({}).then(
          () => 'accepted',
          (err: unknown) => err,
        );
      } finally {
        await testService.lockTimeSkipping({});
      }
      // Had the server let the counter go negative, one more lock restores it for the next test.
      if (unbalanced === 'accepted') await testService.lockTimeSkipping({});
      expect(unbalanced).toBeInstanceOf(Error);
    });

    it('fires a timer during a manual sleep and stamps events with virtual time', async () => {
      await withWorker(env, { activities }, async (taskQueue) => {
        await env.sleep('10 days');
        const virtualStart = await virtualNowMs();
        expect(virtualStart).toBeGreaterThan(Date.now() + 9 * DAY_MS);

        const handle = await env.client.workflow.start(sleeper, {
          taskQueue,
          workflowId: uniqueId('virtual-event-times'),
          args: [HOUR_MS],
        });
        // Let the first workflow task run (it starts the timer), then skip past the timer manually.
        await eventually(async () => {
          const types = (await historyEvents(handle)).map((e) => eventTypeName(e, EventType));
          return types.includes('TIMER_STARTED') ? true : undefined;
        }, 'the timer to start');
        await env.sleep('2 hours');
        await eventually(
          async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined),
          'the timer to fire during env.sleep',
        );

        const events = await historyEvents(handle);
        const startedAt = tsToMs(events[0]?.eventTime);
        expect(startedAt).toBeGreaterThanOrEqual(virtualStart);
        const fired = events.find((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED);
        expect(tsToMs(fired?.eventTime)).toBeGreaterThanOrEqual(startedAt + HOUR_MS);
      });
    });
  });
}

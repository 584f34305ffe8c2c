// The delivery workflow with stub attempts (no database, no receiver, no API): the retry ladder (±20 %) until a
// 2xx, the last attempt (max_retry), a manual retry's run, Retry-After (capped at twice the rung), the
// endpointDisabled signal from outside or from another delivery's attempt, and an attempt activity retried on an
// outage. Waits read from the run's own history; virtual time on the project's engine; payloads sealed by
// paygate's codec.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookActivities } from '../../src/activities/webhooks.js';
import {
  type AttemptOutcome,
  DELIVERY_NOT_FOUND,
  DELIVERY_WORKFLOW_TYPE,
  type DeliveryInput,
  deliveryWorkflowId,
  endpointDisabledSignal,
} from '../../src/webhooks/contract.js';
import { ladderDelayMs } from '../../src/webhooks/retry-ladder.js';
import type { deliveryWorkflow } from '../../src/workflows/webhooks.js';
import {
  ActivityStubs,
  refusal,
  startWorkflowTestEnv,
  timerDurationsMs,
  type WorkerScope,
  type WorkflowTestEnv,
} from '../helpers/workflow-env.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

type Stubs = ActivityStubs<WebhookActivities>;

/** The outcome of each attempt by its number; 'ready' (a failed send, more to come) for the others. */
const attempts = (outcomes: Record<number, AttemptOutcome> = {}): Stubs =>
  new ActivityStubs<WebhookActivities>({
    attemptDelivery: async ({ attempt }) => outcomes[attempt] ?? { state: 'ready' },
  });

const expectJittered = (actual: number | undefined, rung: number) => {
  expect(actual).toBeGreaterThanOrEqual(Math.floor(rung * 0.8));
  expect(actual).toBeLessThanOrEqual(Math.ceil(rung * 1.2));
};

describe('delivery workflow (stub activities)', () => {
  let t: WorkflowTestEnv;
  beforeAll(async () => {
    t = await startWorkflowTestEnv();
  });
  afterAll(async () => {
    await t?.close();
  });

  const start = (scope: WorkerScope, args: DeliveryInput) =>
    scope.start<typeof deliveryWorkflow>(DELIVERY_WORKFLOW_TYPE, [args], deliveryWorkflowId(args.deliveryId));
  const deliveryId = () => randomUUID().replaceAll('-', '').slice(0, 24);

  it('retries on the ladder (5 s, 5 min, 30 min, 2 h, ±20 %) until an attempt is delivered', async () => {
    const stubs = attempts({ 5: { state: 'done' } });
    await t.withWorker(stubs, async (scope) => {
      const id = deliveryId();
      const handle = await start(scope, { deliveryId: id, firstAttempt: 1, lastAttempt: 10 });
      expect(await handle.result()).toBe('done');
      expect(stubs.inputsOf('attemptDelivery')).toEqual(
        [1, 2, 3, 4, 5].map((attempt) => ({ deliveryId: id, attempt, lastAttempt: 10 })),
      );
      const waits = await timerDurationsMs(handle);
      expect(waits).toHaveLength(4);
      [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR].forEach((rung, i) => {
        expectJittered(waits[i], rung);
      });
      // each attempt ran once its wait had passed on the engine's clock
      const at = stubs.calls.map((c) => c.scheduledAtMs);
      waits.forEach((wait, i) => {
        expect(at[i + 1]! - at[i]!).toBeGreaterThanOrEqual(wait);
      });
    });
  });

  it('stops as failed after the last attempt (max_retry): 10 h rungs from the 7th on', async () => {
    const stubs = attempts();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { deliveryId: deliveryId(), firstAttempt: 1, lastAttempt: 8 });
      expect(await handle.result()).toBe('failed');
      expect(stubs.inputsOf('attemptDelivery').map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const waits = await timerDurationsMs(handle);
      expect(waits).toHaveLength(7);
      [2, 3, 4, 5, 6, 7, 8].forEach((attempt, i) => {
        expectJittered(waits[i], ladderDelayMs(attempt));
      });
      expect(ladderDelayMs(7)).toBe(10 * HOUR);
      expect(ladderDelayMs(8)).toBe(10 * HOUR);
    });
  });

  it("an attempt that ends the delivery (the activity's own verdict on the last one, or a 410) ends the run", async () => {
    const stubs = attempts({ 2: { state: 'failed' } });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { deliveryId: deliveryId(), firstAttempt: 1, lastAttempt: 5 });
      expect(await handle.result()).toBe('failed');
      expect(stubs.inputsOf('attemptDelivery').map((a) => a.attempt)).toEqual([1, 2]);
    });
  });

  it("a manual retry's run starts at once with its first attempt number, then waits that attempt's next rung", async () => {
    const stubs = attempts();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { deliveryId: deliveryId(), firstAttempt: 4, lastAttempt: 5 });
      expect(await handle.result()).toBe('failed');
      expect(stubs.inputsOf('attemptDelivery').map((a) => [a.attempt, a.lastAttempt])).toEqual([
        [4, 5],
        [5, 5],
      ]);
      const waits = await timerDurationsMs(handle);
      expect(waits).toHaveLength(1);
      expectJittered(waits[0], 2 * HOUR);
    });
  });

  it("honours the receiver's Retry-After exactly, capped at twice the rung; without one the ladder again", async () => {
    const stubs = attempts({
      1: { state: 'ready', retryAfterMs: 3 * SECOND },
      2: { state: 'ready', retryAfterMs: 3 * HOUR },
      4: { state: 'done' },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { deliveryId: deliveryId(), firstAttempt: 1, lastAttempt: 10 });
      expect(await handle.result()).toBe('done');
      const waits = await timerDurationsMs(handle);
      expect(waits.slice(0, 2)).toEqual([3 * SECOND, 2 * 5 * MINUTE]);
      expectJittered(waits[2], 30 * MINUTE);
    });
  });

  it('the endpointDisabled signal ends a waiting delivery as failed, without another attempt', async () => {
    const stubs = attempts();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { deliveryId: deliveryId(), firstAttempt: 1, lastAttempt: 10 });
      // attempts 1 and 2 (after ~5 s), then the 5-minute rung
      await t.skipTime(MINUTE);
      expect(stubs.inputsOf('attemptDelivery').map((a) => a.attempt)).toEqual([1, 2]);
      await handle.signal(endpointDisabledSignal);
      expect(await handle.result()).toBe('failed');
      expect(stubs.names()).toHaveLength(2);
      expect(await t.now()).toBeLessThan((await handle.describe()).startTime.getTime() + 4 * MINUTE);
    });
  });

  it("an attempt that disabled the endpoint stops the endpoint's other waiting deliveries (a run already gone is skipped)", async () => {
    const waiting = deliveryId();
    const stopping = deliveryId();
    const stubs = new ActivityStubs<WebhookActivities>({
      attemptDelivery: async ({ deliveryId: id }) =>
        id === stopping ? { state: 'failed', stoppedDeliveryIds: [waiting, deliveryId()] } : { state: 'ready' },
    });
    await t.withWorker(stubs, async (scope) => {
      // the waiting delivery has made its 3rd attempt and waits the 30-minute rung
      const other = await start(scope, { deliveryId: waiting, firstAttempt: 3, lastAttempt: 10 });
      await stubs.called('attemptDelivery');
      const startedAt = await t.now();
      const handle = await start(scope, { deliveryId: stopping, firstAttempt: 1, lastAttempt: 10 });
      expect(await handle.result()).toBe('failed');
      expect(await other.result()).toBe('failed');
      expect(stubs.inputsOf('attemptDelivery').map((a) => [a.deliveryId, a.attempt])).toEqual([
        [waiting, 3],
        [stopping, 1],
      ]);
      // ended by the signal, long before its rung (at least 24 minutes) was over
      expect((await t.now()) - startedAt).toBeLessThan(20 * MINUTE);
    });
  });

  it('an attempt activity that fails on an outage is retried under the same attempt number; a vanished delivery fails the run', async () => {
    const gone = deliveryId();
    const stubs = new ActivityStubs<WebhookActivities>({
      attemptDelivery: async ({ deliveryId: id, attempt }) => {
        if (id === gone) throw ApplicationFailure.nonRetryable('the delivery row is gone', DELIVERY_NOT_FOUND);
        const tries = stubs.calls.filter((c) => (c.input as { attempt: number }).attempt === attempt).length;
        if (attempt === 1 && tries < 3) throw new Error('database unavailable');
        return { state: attempt === 2 ? 'done' : 'ready' };
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, { deliveryId: deliveryId(), firstAttempt: 1, lastAttempt: 10 });
      expect(await handle.result()).toBe('done');
      expect(stubs.calls.map((c) => [(c.input as { attempt: number }).attempt, c.attempt])).toEqual([
        [1, 1],
        [1, 2],
        [1, 3],
        [2, 1],
      ]);
      // the ladder waited once (before attempt 2), not for the activity's retries
      expect(await timerDurationsMs(handle)).toHaveLength(1);

      const vanished = await start(scope, { deliveryId: gone, firstAttempt: 1, lastAttempt: 10 });
      expect((await refusal(vanished.result())).type).toBe(DELIVERY_NOT_FOUND);
      expect(stubs.inputsOf('attemptDelivery').filter((a) => a.deliveryId === gone)).toHaveLength(1);
    });
  });
});

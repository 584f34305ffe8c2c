// The subscription schedule workflow's state machine with stub activities (no database, no PG, no API): periods due
// on the Asia/Seoul calendar (month ends clamped), max_charges / end_at completion, continue-as-new every 12
// periods, the dunning ladder after a decline (past_due, retried after each delay, then paused or cancelled), a
// retry that pays, a billing key gone, and the pause / resume / cancel / patch updates with their refusals and
// proofs. Virtual time on the project's engine; payloads sealed by paygate's codec.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScheduleActivities } from '../../src/activities/schedules.js';
import {
  cancelScheduleUpdate,
  patchScheduleUpdate,
  pauseScheduleUpdate,
  resumeScheduleUpdate,
  SCHEDULE_WORKFLOW_TYPE,
  type ScheduleChargeResult,
  type ScheduleInput,
  scheduleStateQuery,
  scheduleWorkflowId,
} from '../../src/schedules/contract.js';
import type { SchedulePlan, ScheduleStatus } from '../../src/schedules/rules.js';
import { UPDATE_NOT_AUTHORIZED } from '../../src/platform/temporal/messages.js';
import type { scheduleWorkflow } from '../../src/workflows/schedules.js';
import { ActivityStubs, refusal, startWorkflowTestEnv, type WorkerScope, type WorkflowTestEnv } from '../helpers/workflow-env.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
/** RUN_PERIODS of src/workflows/schedules.ts (not imported: a test process does not load workflow modules) */
const RUN_PERIODS = 12;

type Stubs = ActivityStubs<ScheduleActivities>;
type ChargeInput = Parameters<ScheduleActivities['chargePeriod']>[0];
type Charge = (input: ChargeInput) => ScheduleChargeResult['outcome'];

describe('schedule workflow (stub activities)', () => {
  let t: WorkflowTestEnv;
  beforeAll(async () => {
    t = await startWorkflowTestEnv();
  });
  afterAll(async () => {
    await t?.close();
  });

  const input = (plan: SchedulePlan, overrides: Partial<ScheduleInput> = {}): ScheduleInput => ({
    scheduleId: `sch-${randomUUID()}`,
    plan,
    retryDelaysSeconds: [DAY / 1000, (3 * DAY) / 1000],
    onExhausted: 'pause',
    period: 1,
    status: 'active',
    chargesMade: 0,
    attempts: 0,
    ...overrides,
  });
  const inAnHour = async () => new Date((await t.now()) + HOUR).toISOString();

  /**
   * The charge activity as the store would answer it: `outcome` decides each attempt; a decline with a retry to
   * come is past_due, the last one leaves the schedule as onExhausted says. Plus the update activities.
   */
  const stubsWith = (outcome: Charge = () => 'paid', overrides: Partial<ScheduleActivities> = {}): Stubs => {
    let chargesMade = 0;
    let status: ScheduleStatus = 'active';
    return new ActivityStubs<ScheduleActivities>({
      chargePeriod: async (charge) => {
        const result = outcome(charge);
        if (result === 'paid') {
          chargesMade++;
          status = 'active';
        } else if (result === 'declined') {
          status = charge.retryAt !== undefined ? 'past_due' : charge.onExhausted === 'cancel' ? 'cancelled' : 'paused';
        } else {
          status = 'cancelled';
        }
        return { outcome: result, status, chargesMade };
      },
      completeSchedule: async () => 'completed',
      pauseSchedule: async () => undefined,
      resumeSchedule: async ({ fromPeriod }) => ({ period: fromPeriod, status: 'active' }),
      cancelSchedule: async () => undefined,
      patchSchedule: async () => undefined,
      ...overrides,
    });
  };
  const start = (scope: WorkerScope, args: ScheduleInput) =>
    scope.start<typeof scheduleWorkflow>(SCHEDULE_WORKFLOW_TYPE, [args], scheduleWorkflowId(args.scheduleId));
  const charges = (stubs: Stubs) => stubs.inputsOf('chargePeriod');

  it('a monthly schedule from Jan 31 (KST) is due on each month end, charged once each; after max_charges it completes', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const year = new Date(await t.now()).getUTCFullYear() + 1;
      const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
      // 00:30 KST on Jan 31 is still Jan 30 in UTC: the calendar is Seoul's
      const plan: SchedulePlan = { startAt: `${year}-01-31T00:30:00+09:00`, interval: 'month', intervalCount: 1, maxCharges: 4 };
      const args = input(plan);
      const handle = await start(scope, args);
      expect(await handle.result()).toBe('completed');

      const due = [`${year}-01-30`, `${year}-02-${leap ? 28 : 27}`, `${year}-03-30`, `${year}-04-29`].map(
        (d) => `${d}T15:30:00.000Z`,
      );
      expect(charges(stubs).map((c) => [c.period, c.attempt, c.dueAt, c.nextDueAt])).toEqual([
        [1, 1, due[0], due[1]],
        [2, 1, due[1], due[2]],
        [3, 1, due[2], due[3]],
        // the 4th is the last (max_charges): no next due time
        [4, 1, due[3], null],
      ]);
      for (const c of charges(stubs)) {
        // charged when due, as a local activity in the task the timer woke
        expect(c.workflowTimeMs).toBeGreaterThanOrEqual(Date.parse(c.dueAt));
        expect(c.workflowTimeMs).toBeLessThan(Date.parse(c.dueAt) + 60_000);
        expect(c).toMatchObject({ scheduleId: args.scheduleId, onExhausted: 'pause' });
        // where a decline of this first attempt would be retried: the first dunning delay on
        expect(Date.parse(c.retryAt!) - c.workflowTimeMs!).toBe(DAY);
      }
      expect(stubs.calls.filter((c) => c.name === 'chargePeriod').every((c) => c.local)).toBe(true);
      expect(stubs.names().at(-1)).toBe('completeSchedule');
      expect(stubs.inputsOf('completeSchedule')).toEqual([{ scheduleId: args.scheduleId }]);
    });
  });

  it(`continues as new after ${RUN_PERIODS} periods (the next run goes on from period 13); end_at completes it`, async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const startAt = await inAnHour();
      // every 2 days; end_at falls just after the 15th period's due time
      const endAt = new Date(Date.parse(startAt) + 14 * 2 * DAY + HOUR).toISOString();
      const args = input({ startAt, interval: 'day', intervalCount: 2, endAt });
      const handle = await start(scope, args);
      expect(await handle.result()).toBe('completed');
      expect(charges(stubs).map((c) => c.period)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
      expect(charges(stubs).map((c) => Date.parse(c.dueAt) - Date.parse(startAt))).toEqual(
        Array.from({ length: 15 }, (_, i) => i * 2 * DAY),
      );
      expect(charges(stubs)[14]?.nextDueAt).toBeNull();
      const last = await handle.describe();
      expect(last.runId).not.toBe(handle.firstExecutionRunId);
      expect(await handle.query(scheduleStateQuery)).toEqual({ status: 'completed', period: 16, attempts: 0, runPeriods: 3 });
    });
  });

  it('a decline goes past_due and is retried after each delay; the last attempt pauses it, and a paused schedule charges nothing', async () => {
    const stubs = stubsWith(() => 'declined');
    await t.withWorker(stubs, async (scope) => {
      const startAt = await inAnHour();
      const args = input({ startAt, interval: 'week', intervalCount: 1 });
      const handle = await start(scope, args);
      await t.skipTime(HOUR + 60_000);
      expect(await handle.query(scheduleStateQuery)).toMatchObject({ status: 'past_due', period: 1, attempts: 1 });
      await t.skipTime(DAY);
      expect(await handle.query(scheduleStateQuery)).toMatchObject({ status: 'past_due', period: 1, attempts: 2 });
      await t.skipTime(3 * DAY);
      expect(await handle.query(scheduleStateQuery)).toMatchObject({ status: 'paused', period: 2, attempts: 0 });

      const [first, second, third] = charges(stubs);
      const due = Date.parse(startAt);
      expect(charges(stubs)).toHaveLength(3);
      expect([first!.period, second!.period, third!.period]).toEqual([1, 1, 1]);
      expect([first!.attempt, second!.attempt, third!.attempt]).toEqual([1, 2, 3]);
      // each attempt names when the next one would come; the last one none (its decline is final)
      expect(Date.parse(first!.retryAt!) - first!.workflowTimeMs!).toBe(DAY);
      expect(Date.parse(second!.retryAt!) - second!.workflowTimeMs!).toBe(3 * DAY);
      expect(third).not.toHaveProperty('retryAt');
      // the retries came when they were announced; every attempt charges the period's own due time
      expect(second!.workflowTimeMs! - Date.parse(first!.retryAt!)).toBeGreaterThanOrEqual(0);
      expect(second!.workflowTimeMs! - Date.parse(first!.retryAt!)).toBeLessThan(60_000);
      expect(third!.workflowTimeMs! - Date.parse(second!.retryAt!)).toBeGreaterThanOrEqual(0);
      expect(third!.workflowTimeMs! - Date.parse(second!.retryAt!)).toBeLessThan(60_000);
      expect(new Set(charges(stubs).map((c) => Date.parse(c.dueAt)))).toEqual(new Set([due]));

      await t.skipTime(5 * 7 * DAY);
      expect(charges(stubs)).toHaveLength(3);
      expect((await handle.describe()).status.name).toBe('RUNNING');
    });
  });

  it('with on_exhausted cancel, the last declined attempt cancels it and the run ends', async () => {
    const stubs = stubsWith(() => 'declined');
    await t.withWorker(stubs, async (scope) => {
      const args = input({ startAt: await inAnHour(), interval: 'day', intervalCount: 1 }, { onExhausted: 'cancel' });
      const handle = await start(scope, args);
      expect(await handle.result()).toBe('cancelled');
      expect(charges(stubs).map((c) => [c.period, c.attempt, c.onExhausted])).toEqual([
        [1, 1, 'cancel'],
        [1, 2, 'cancel'],
        [1, 3, 'cancel'],
      ]);
    });
  });

  it('a dunning retry that pays brings it back to active; the next period starts at attempt 1 on its own due time', async () => {
    const stubs = stubsWith((c) => (c.period === 1 && c.attempt === 1 ? 'declined' : 'paid'));
    await t.withWorker(stubs, async (scope) => {
      const startAt = await inAnHour();
      const args = input({ startAt, interval: 'week', intervalCount: 1, maxCharges: 2 });
      const handle = await start(scope, args);
      await t.skipTime(HOUR + DAY + 60_000);
      expect(await handle.query(scheduleStateQuery)).toMatchObject({ status: 'active', period: 2, attempts: 0 });
      expect(await handle.result()).toBe('completed');
      expect(charges(stubs).map((c) => [c.period, c.attempt, c.dueAt])).toEqual([
        [1, 1, new Date(startAt).toISOString()],
        [1, 2, new Date(startAt).toISOString()],
        [2, 1, new Date(Date.parse(startAt) + 7 * DAY).toISOString()],
      ]);
    });
  });

  it('a billing key gone ends the period and the schedule (cancelled by the charge)', async () => {
    const stubs = stubsWith(() => 'ended');
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ startAt: await inAnHour(), interval: 'day', intervalCount: 1 }));
      expect(await handle.result()).toBe('cancelled');
      expect(charges(stubs).map((c) => [c.period, c.attempt])).toEqual([[1, 1]]);
      expect(stubs.names()).toEqual(['chargePeriod']);
    });
  });

  it('pause stops the charges; resume skips to the period the store names; patch changes no state; cancel ends it', async () => {
    const stubs = stubsWith(() => 'paid', {
      // the store skips the periods missed while paused
      resumeSchedule: async ({ fromPeriod }) => ({ period: fromPeriod + 2, status: 'active' }),
    });
    await t.withWorker(stubs, async (scope) => {
      const startAt = await inAnHour();
      const args = input({ startAt, interval: 'day', intervalCount: 1 });
      const handle = await start(scope, args);
      const runId = handle.firstExecutionRunId;
      const proof = () => ({ nonce: randomUUID(), runId });
      await t.skipTime(HOUR + 60_000);
      expect(charges(stubs).map((c) => c.period)).toEqual([1]);

      const pauseProof = proof();
      expect(await handle.executeUpdate(pauseScheduleUpdate, { args: [pauseProof] })).toBe('paused');
      expect(stubs.inputsOf('pauseSchedule')).toEqual([{ scheduleId: args.scheduleId, nonce: pauseProof.nonce }]);
      const again = await refusal(handle.executeUpdate(pauseScheduleUpdate, { args: [proof()] }));
      expect(again.type).toBe('SCHEDULE_STATE_INVALID');
      expect(again.message).toBe('the schedule is already paused');
      await t.skipTime(3 * DAY);
      expect(charges(stubs).map((c) => c.period)).toEqual([1]);

      expect(await handle.executeUpdate(resumeScheduleUpdate, { args: [proof()] })).toBe('active');
      expect(stubs.inputsOf('resumeSchedule')).toEqual([
        { scheduleId: args.scheduleId, plan: args.plan, fromPeriod: 2, chargesMade: 1 },
      ]);
      expect((await refusal(handle.executeUpdate(resumeScheduleUpdate, { args: [proof()] }))).message).toBe(
        'only a paused schedule resumes (it is active)',
      );
      // period 4 is due 3 days after the start: it was missed as well, and is charged at once
      await t.skipTime(60_000);
      expect(charges(stubs).map((c) => c.period)).toEqual([1, 4]);

      expect(await handle.executeUpdate(patchScheduleUpdate, { args: [proof(), { price: 9_900, orderName: 'Pro plan' }] })).toBe(
        'active',
      );
      expect(stubs.inputsOf('patchSchedule')).toEqual([
        { scheduleId: args.scheduleId, patch: { price: 9_900, orderName: 'Pro plan' } },
      ]);

      const cancelProof = proof();
      expect(await handle.executeUpdate(cancelScheduleUpdate, { args: [cancelProof] })).toBe('cancelled');
      expect(await handle.result()).toBe('cancelled');
      expect(stubs.inputsOf('cancelSchedule')).toEqual([{ scheduleId: args.scheduleId, nonce: cancelProof.nonce }]);
      await t.skipTime(5 * DAY);
      expect(charges(stubs).map((c) => c.period)).toEqual([1, 4]);
    });
  });

  it('a paused schedule can be cancelled; once cancelled, pause, patch and another cancel are refused (9451)', async () => {
    let written!: () => void;
    const writing = new Promise<void>((resolve) => {
      written = resolve;
    });
    const stubs = stubsWith(() => 'paid', {
      cancelSchedule: async () => {
        await writing;
      },
    });
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ startAt: await inAnHour(), interval: 'month', intervalCount: 1 }));
      const proof = () => ({ nonce: randomUUID(), runId: handle.firstExecutionRunId });
      await handle.executeUpdate(pauseScheduleUpdate, { args: [proof()] });
      // the cancel is accepted while the run waits paused; its write is still in flight
      const cancelled = handle.executeUpdate(cancelScheduleUpdate, { args: [proof()] });
      await stubs.called('cancelSchedule');
      for (const refused of [
        await refusal(handle.executeUpdate(pauseScheduleUpdate, { args: [proof()] })),
        await refusal(handle.executeUpdate(patchScheduleUpdate, { args: [proof(), { price: 1 }] })),
        await refusal(handle.executeUpdate(cancelScheduleUpdate, { args: [proof()] })),
      ]) {
        expect(refused.type).toBe('SCHEDULE_STATE_INVALID');
        expect(refused.message).toBe('the schedule is cancelled');
      }
      written();
      expect(await cancelled).toBe('cancelled');
      expect(await handle.result()).toBe('cancelled');
      expect(stubs.names()).toEqual(['pauseSchedule', 'cancelSchedule']);
    });
  });

  it('updates need a fresh proof made for this run: a short nonce, a spent one, or another run id is refused untried', async () => {
    const stubs = stubsWith();
    await t.withWorker(stubs, async (scope) => {
      const handle = await start(scope, input({ startAt: await inAnHour(), interval: 'day', intervalCount: 1 }));
      const runId = handle.firstExecutionRunId;
      const notAuthorized = async (call: Promise<unknown>) => expect((await refusal(call)).type).toBe(UPDATE_NOT_AUTHORIZED);
      await notAuthorized(handle.executeUpdate(pauseScheduleUpdate, { args: [{ nonce: 'short', runId }] }));
      await notAuthorized(handle.executeUpdate(cancelScheduleUpdate, { args: [{ nonce: randomUUID(), runId: randomUUID() }] }));
      const nonce = randomUUID();
      await handle.executeUpdate(patchScheduleUpdate, { args: [{ nonce, runId }, { price: 1_000 }] });
      await notAuthorized(handle.executeUpdate(cancelScheduleUpdate, { args: [{ nonce, runId }] }));
      expect(stubs.names()).toEqual(['patchSchedule']);
      expect(await handle.query(scheduleStateQuery)).toMatchObject({ status: 'active', period: 1 });
    });
  });
});

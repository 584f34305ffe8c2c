import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ScheduleActivities } from '../activities/schedules.js';
import {
  cancelScheduleUpdate,
  type ScheduleErrorName,
  type ScheduleInput,
  pauseScheduleUpdate,
  patchScheduleUpdate,
  resumeScheduleUpdate,
  type ScheduleUpdateProof,
  scheduleStateQuery,
  type ScheduleWorkflow,
} from '../schedules/contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../platform/temporal/messages.js';
import { dueAt, isPastEnd, type ScheduleStatus } from '../schedules/calendar-rules.js';

// One subscription schedule: sleep to each period's due time, charge it once through the charge service
// (order_id <schedule_id>-<period> for every attempt, chosen by the activity), walk the dunning ladder on a decline (past_due, retried after each delay,
// then paused or cancelled), complete at max_charges / end_at. Pause, resume, cancel and patch are updates whose
// validators refuse what the status does not allow (9451) before anything reaches the history. The run
// continues as new every RUN_PERIODS periods, and also while it waits (for a due time, or paused) once the
// engine suggests it or the run reaches MAX_RUN_EVENTS: the updates a merchant sends within one period can no
// longer grow one run's history until the engine's limit terminates the schedule.

// Charges and status writes must happen: retried without a cap (a PG or database outage delays them, and is
// never a dunning attempt; the order_id claim makes a retry re-drive the same charge, never a second one).
const durable = proxyActivities<ScheduleActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

// A period's charge runs as a local activity, in the workflow task its timer woke: one task and no activity task
// per charge instead of two tasks and one, and no second task queued behind a billing day's burst of timers (by
// the time it came, the run had left the worker's cache and was replayed again). The same retry policy; a worker
// that dies mid charge leaves no marker, so the next worker re-runs it and the order_id claim re-drives the same
// charge, as a retried activity did.
const local = proxyLocalActivities<ScheduleActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});
/** Runs recorded before the local-activity charge replay their activity tasks (the marker is in the histories after). */
const LOCAL_CHARGE = 'schedule-charge-local-activity';

/** Periods handled by one run before it continues as new. */
export const RUN_PERIODS = 12;
/**
 * A run continues as new at this many events even when the cluster suggests it later than Temporal's default
 * (4,096 events / 4 MiB): well below the 10,240-event warning and the 51,200-event termination.
 */
export const MAX_RUN_EVENTS = 8_000;
/** Runs recorded before the idle continue-as-new replay without it (the marker is in the histories after). */
const IDLE_CONTINUE_AS_NEW = 'schedule-idle-continue-as-new';
const MIN_NONCE_LENGTH = 16;
const ENDED: readonly ScheduleStatus[] = ['cancelled', 'completed'];

function refuse(name: ScheduleErrorName, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: name, message, nonRetryable: true });
}

export async function scheduleWorkflow(input: ScheduleInput): Promise<ScheduleStatus> {
  const { scheduleId, plan } = input;
  let status: ScheduleStatus = input.status;
  let period = input.period;
  let chargesMade = input.chargesMade;
  let attempts = input.attempts;
  let retryAt = input.retryAt;
  let runPeriods = 0;
  // bumped by every update that changes what the main loop waits for
  let version = 0;
  // Only this run's nonces: a proof names the run it was made for (ScheduleUpdateProof), so one taken by an
  // earlier run is refused by its run id and nothing is carried across continue-as-new.
  const spentNonces = new Set<string>();

  const checkProof = (proof: Partial<ScheduleUpdateProof> | undefined) => {
    const nonce = proof?.nonce;
    if (
      typeof nonce !== 'string' ||
      nonce.length < MIN_NONCE_LENGTH ||
      spentNonces.has(nonce) ||
      proof?.runId !== workflowInfo().runId
    ) {
      throw ApplicationFailure.create({
        type: UPDATE_NOT_AUTHORIZED,
        message: 'the update carries no fresh proof from paygate',
        nonRetryable: true,
      });
    }
  };
  const notEnded = () => {
    if (ENDED.includes(status)) throw refuse('SCHEDULE_STATE_INVALID', `the schedule is ${status}`);
  };

  setHandler(scheduleStateQuery, () => ({ status, period, attempts, runPeriods }));
  setHandler(
    pauseScheduleUpdate,
    async (proof) => {
      spentNonces.add(proof.nonce);
      status = 'paused';
      version++;
      await durable.pauseSchedule({ scheduleId, nonce: proof.nonce });
      return status;
    },
    {
      validator: (proof) => {
        checkProof(proof);
        notEnded();
        if (status === 'paused') throw refuse('SCHEDULE_STATE_INVALID', 'the schedule is already paused');
      },
    },
  );
  setHandler(
    resumeScheduleUpdate,
    async (proof) => {
      spentNonces.add(proof.nonce);
      // missed periods are skipped, never charged late in a burst; a period left in dunning ends failed
      const resumed = await durable.resumeSchedule({ scheduleId, plan, fromPeriod: period, chargesMade });
      period = resumed.period;
      attempts = 0;
      retryAt = undefined;
      if (status === 'paused') status = resumed.status;
      version++;
      return status;
    },
    {
      validator: (proof) => {
        checkProof(proof);
        if (status !== 'paused') throw refuse('SCHEDULE_STATE_INVALID', `only a paused schedule resumes (it is ${status})`);
      },
    },
  );
  setHandler(
    cancelScheduleUpdate,
    async (proof) => {
      spentNonces.add(proof.nonce);
      // at once, so the loop charges nothing more; a charge already in flight finishes
      status = 'cancelled';
      version++;
      await durable.cancelSchedule({ scheduleId, nonce: proof.nonce });
      return status;
    },
    {
      validator: (proof) => {
        checkProof(proof);
        notEnded();
      },
    },
  );
  setHandler(
    patchScheduleUpdate,
    async (proof, patch) => {
      spentNonces.add(proof.nonce);
      await durable.patchSchedule({ scheduleId, patch });
      return status;
    },
    {
      validator: (proof, _patch) => {
        checkProof(proof);
        notEnded();
      },
    },
  );

  const carryOn = () => {
    const { retryAt: _previous, spentNonces: _spent, ...carried } = input;
    return continueAsNew<typeof scheduleWorkflow>({
      ...carried,
      period,
      status,
      chargesMade,
      attempts,
      ...(retryAt !== undefined ? { retryAt } : {}),
    });
  };
  // Read in condition predicates (each activation): patched() is asked only once the history is long, so a
  // history recorded before this check replays unchanged (no marker there: false), and a run that reaches it
  // live records the marker in the task that continues it.
  const historyLong = (): boolean => {
    const info = workflowInfo();
    return (info.continueAsNewSuggested || info.historyLength >= MAX_RUN_EVENTS) && patched(IDLE_CONTINUE_AS_NEW);
  };

  // read through a function: the handlers change it between awaits, which narrowing cannot see
  const current = (): ScheduleStatus => status;
  while (!ENDED.includes(status)) {
    if (historyLong()) {
      // the updates in flight finish here; their state is what the next run starts from
      await condition(allHandlersFinished);
      if (ENDED.includes(current())) break;
      return carryOn();
    }
    if (status === 'paused') {
      const v = version;
      await condition(() => version !== v || historyLong());
      continue;
    }
    if (isPastEnd(plan, period, chargesMade)) {
      status = await durable.completeSchedule({ scheduleId });
      break;
    }
    const due = dueAt(plan, period);
    const at = attempts > 0 && retryAt !== undefined ? Date.parse(retryAt) : due.getTime();
    const waitMs = at - Date.now();
    if (waitMs > 0) {
      const v = version;
      if (await condition(() => version !== v || historyLong(), waitMs)) continue;
    }
    const attempt = attempts + 1;
    const final = attempt > input.retryDelaysSeconds.length;
    const nextDelay = final ? undefined : input.retryDelaysSeconds[attempt - 1];
    const retryAtNext = nextDelay === undefined ? undefined : new Date(Date.now() + nextDelay * 1000).toISOString();
    const charge = patched(LOCAL_CHARGE) ? local.chargePeriod : durable.chargePeriod;
    const result = await charge({
      scheduleId,
      period,
      attempt,
      dueAt: due.toISOString(),
      nextDueAt: isPastEnd(plan, period + 1, chargesMade + 1) ? null : dueAt(plan, period + 1).toISOString(),
      ...(retryAtNext !== undefined ? { retryAt: retryAtNext } : {}),
      onExhausted: input.onExhausted,
      workflowTimeMs: Date.now(),
    });
    chargesMade = result.chargesMade;
    if (result.outcome === 'paid') {
      period++;
      attempts = 0;
      retryAt = undefined;
      runPeriods++;
    } else if (result.outcome === 'declined' && !final) {
      attempts = attempt;
      retryAt = retryAtNext;
    } else {
      // exhausted (or the key is gone): the period is over, the schedule paused or cancelled by the activity
      period++;
      attempts = 0;
      retryAt = undefined;
      runPeriods++;
    }
    // an update (pause, cancel) that landed during the charge wins over the charge's own outcome
    if (!ENDED.includes(current()) && current() !== 'paused') status = result.status;
    if (!ENDED.includes(status) && (runPeriods >= RUN_PERIODS || workflowInfo().continueAsNewSuggested)) {
      await condition(allHandlersFinished);
      return carryOn();
    }
  }
  await condition(allHandlersFinished);
  return status;
}

// the signature the services start it by (src/schedules/contract.ts) is this function's
scheduleWorkflow satisfies ScheduleWorkflow;

// The delivery dispatcher: the worker process's loop that sends webhook deliveries. The delivery row is the job
// (an outbox): `deliver` saves it due now and wakes the dispatcher of its process, or on Postgres, where this process
// runs none (an API process of a split deployment), notifies the worker's; the dispatcher claims due rows
// (FOR UPDATE SKIP LOCKED, so dispatchers of several workers on one database never claim one row at once), makes each
// attempt, and a failed attempt only writes when the next is due on the ladder. No workflow, no timer per delivery:
// a waiting retry is a row and nothing else. A poll every `pollMs` is the safety net (a row saved by another process,
// a retry come due); a claim whose dispatcher died is taken again when its lease lapses, and the attempt number is
// recorded once, so a crash sends an attempt at most once more under the same webhook-id (Standard Webhooks' at least
// once). The sweep also adopts rows of an earlier release's `delivery:<id>` workflows that were left without a run.
// A round (claim, attempt, claim again while more may be due) is in dispatcher-rounds.ts.
import type { DatabaseNotifications } from '../platform/db/notifications.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { OperationLog } from '../platform/operation-log.js';
import { createDeliveryAttempts, type WebhookAttemptOptions } from './attempt.js';
import { type DispatcherState, requestRound, runDueDeliveries } from './dispatcher-rounds.js';
import type { WebhookStore } from './store.js';

/** How often a running dispatcher looks for due rows when nothing woke it. */
export const DISPATCH_POLL_MS = 1_000;
/**
 * A claim's lease: past it, another dispatcher takes the row again. Well over an attempt (15 s at most) and the
 * writes around it, so a live dispatcher's attempt is not sent twice.
 */
export const CLAIM_LEASE_MS = 60_000;
/** How often the sweep looks for an earlier release's rows left without a run (the first look is at start). */
export const ORPHAN_SWEEP_MS = 5 * 60_000;
/** An earlier release's row saved at least this long ago without an attempt may have no run. */
export const ORPHAN_AFTER_MS = 60_000;
/** 'doing' this long means the earlier release's run that made the attempt is gone (an attempt takes 15 s at most). */
export const STUCK_DOING_AFTER_MS = 10 * 60_000;
const MAX_ORPHANS_PER_SWEEP = 500;

export interface DeliveryDispatcher {
  /** Starts the loop in this process: a round now, then on every wake and poll, and the orphan sweep. */
  start(): void;
  /** Stops claiming and waits for the attempts in flight. */
  stop(): Promise<void>;
  /**
   * A delivery was saved or reopened, or the business clock moved: a round soon; where it is not started, the
   * started one of another process is told through the database's notifications (Postgres).
   */
  wake(): void;
  /**
   * Claims everything due now and waits until those attempts are recorded; how many it sent. The sandbox clock's
   * advance waits on it (retries it made due are sent before the advance answers); tests call it too.
   */
  runDue(): Promise<number>;
  /** Hands an earlier release's rows left without a run to the dispatcher (see WebhookStore.adoptOrphans). */
  adoptOrphans(): Promise<number>;
}

export interface DispatcherDeps {
  readonly store: WebhookStore;
  readonly attempts: WebhookAttemptOptions;
  /**
   * The ladder's time (Clocks.businessClock): when a retry is due. The sandbox clock in `npm start`'s sandbox mode, so
   * an advance brings retries forward as it fired the workflows' timers; tests pass the engine-following test clock.
   * Attempts and their signatures stay on `attempts.clock` (the wall clock).
   */
  readonly businessClock: () => Date;
  readonly metrics?: Pick<Metrics, 'webhookAttempt' | 'webhookEndpointAutoDisabled'>;
  readonly logger?: Pick<OperationLog, 'warn'>;
  readonly pollMs?: number;
  readonly leaseMs?: number;
  /**
   * The database's notifications (Postgres): a process that saves a delivery without running the dispatcher (an API
   * process of a split deployment) tells the worker's at once instead of leaving the row to its next poll.
   */
  readonly notifications?: DatabaseNotifications;
}

/** The notification channel of due deliveries. */
export const DELIVERY_DUE_CHANNEL = 'paygate_delivery_due';

export function createDeliveryDispatcher(deps: DispatcherDeps): DeliveryDispatcher {
  const { store, businessClock, logger, notifications } = deps;
  const attempts = createDeliveryAttempts({ store, options: deps.attempts, metrics: deps.metrics });
  const pollMs = deps.pollMs ?? DISPATCH_POLL_MS;
  const wallClock = attempts.clock;
  const state: DispatcherState = {
    store,
    attempts,
    businessClock,
    wallClock,
    leaseMs: deps.leaseMs ?? CLAIM_LEASE_MS,
    logger,
    inFlight: new Set<Promise<void>>(),
    started: false,
    stopped: false,
    round: undefined,
    again: false,
    poll: undefined,
    sweep: undefined,
    listening: undefined,
  };

  const wake = (): void => {
    if (!state.started) {
      // saved here, sent by the dispatcher of another process: tell it (its poll finds the row if this fails)
      notifications?.notify(DELIVERY_DUE_CHANNEL).catch((err: unknown) => {
        logger?.warn({ err }, 'the worker could not be told of a due webhook delivery; its next poll sends it');
      });
      return;
    }
    requestRound(state);
  };

  const adoptOrphans = async (): Promise<number> => {
    // created_at is the wall clock's, updated_at the database's now(): each compared with the clock that wrote it
    return store.adoptOrphans(
      new Date(wallClock().getTime() - ORPHAN_AFTER_MS),
      new Date(Date.now() - STUCK_DOING_AFTER_MS),
      businessClock(),
      MAX_ORPHANS_PER_SWEEP,
    );
  };

  const sweepOrphans = () =>
    void adoptOrphans().then(
      (n) => {
        if (n === 0) return;
        logger?.warn({ deliveries: n }, 'webhook deliveries of an earlier release without a run were handed to the dispatcher');
        wake();
      },
      (err: unknown) => logger?.warn({ err }, 'the webhook orphan sweep failed; it runs again later'),
    );

  return {
    start() {
      if (state.started) return;
      state.started = true;
      state.poll = setInterval(wake, pollMs);
      state.poll.unref();
      state.sweep = setInterval(sweepOrphans, ORPHAN_SWEEP_MS);
      state.sweep.unref();
      sweepOrphans();
      wake();
      state.listening = notifications?.listen(DELIVERY_DUE_CHANNEL, wake).catch((err: unknown) => {
        logger?.warn({ err }, 'the webhook dispatcher cannot listen for due deliveries; it polls every second');
        return undefined;
      });
    },

    async stop() {
      state.stopped = true;
      clearInterval(state.poll);
      clearInterval(state.sweep);
      await (await state.listening)?.close();
      await state.round;
      await Promise.all([...state.inFlight]);
    },

    wake,

    runDue: () => runDueDeliveries(state),

    adoptOrphans,
  };
}

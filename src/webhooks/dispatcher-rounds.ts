// The dispatcher's rounds: a round claims the deliveries due (up to the free slots), starts their attempts and claims
// again while more may be due. DispatcherState is the one object the dispatcher (dispatcher.ts) and its rounds share.
import type { OperationLog } from '../platform/operation-log.js';
import type { DeliveryAttempts } from './attempt.js';
import type { DueDelivery } from './records.js';
import { retryDelayMs } from './retry-ladder.js';
import type { WebhookStore } from './store.js';

/** attempts in flight at once, per dispatcher */
const MAX_IN_FLIGHT = 64;

/** The dispatcher's collaborators, its settings and its mutable state (rounds, attempts in flight, timers). */
export interface DispatcherState {
  readonly store: WebhookStore;
  readonly attempts: DeliveryAttempts;
  /** the ladder's time (DispatcherDeps.businessClock): what is due, when a retry is due */
  readonly businessClock: () => Date;
  /** the attempts' clock */
  readonly wallClock: () => Date;
  readonly leaseMs: number;
  readonly logger: Pick<OperationLog, 'warn'> | undefined;
  readonly inFlight: Set<Promise<void>>;
  /** start() was called: this process runs the loop */
  started: boolean;
  /** stop() was called: no round starts any more */
  stopped: boolean;
  /** the round under way */
  round: Promise<void> | undefined;
  /** the round under way claims once more (more may be due, or a wake came meanwhile) */
  again: boolean;
  poll: NodeJS.Timeout | undefined;
  sweep: NodeJS.Timeout | undefined;
  listening: Promise<{ close(): Promise<void> } | undefined> | undefined;
}

/** One claimed delivery: the checks of its endpoint, then its attempt. Never throws. */
async function attemptClaimed(state: DispatcherState, { delivery, endpoint }: DueDelivery): Promise<void> {
  const { store, attempts } = state;
  const deliveryId = delivery.delivery_id;
  try {
    // a charge's feedback_url, a test send and a manual retry are sent whatever the endpoint's switch says
    const stoppedByEndpoint = delivery.destination === 'endpoint' && !delivery.sends_when_disabled;
    const secrets = endpoint ? attempts.signingSecrets(endpoint, state.wallClock()) : undefined;
    // no endpoint (its project is gone), a disabled one, or no secret (nothing unsigned ever leaves): it ends failed
    if (!endpoint || (!endpoint.enabled && stoppedByEndpoint) || secrets === undefined) {
      await store.markFailed(deliveryId);
      return;
    }
    const number = delivery.retry_count + 1;
    await attempts.send({
      delivery,
      secrets,
      attempt: number,
      lastAttempt: Math.max(delivery.last_attempt ?? delivery.max_retry, number),
      nextAttempt: (retryAfterMs) => {
        const inMs = retryDelayMs(number + 1, Math.random(), retryAfterMs);
        return { at: new Date(state.businessClock().getTime() + inMs), inMs };
      },
    });
  } catch (err) {
    // the row stays claimed: it is taken again when the lease lapses (the same attempt number, the same webhook-id)
    state.logger?.warn({ err, delivery_id: deliveryId }, 'a webhook attempt could not be completed; it is made again later');
  }
}

/** Claims what is due (up to the free slots) and starts each attempt; true when more may be due. */
async function claimOnce(state: DispatcherState): Promise<boolean> {
  const { inFlight } = state;
  const free = MAX_IN_FLIGHT - inFlight.size;
  if (free <= 0) return false;
  const due = await state.store.claimDue(state.businessClock(), free, state.leaseMs);
  for (const d of due) {
    const running: Promise<void> = attemptClaimed(state, d).finally(() => {
      inFlight.delete(running);
      // a slot freed while rows may still be waiting for one
      if (due.length === free) requestRound(state);
    });
    inFlight.add(running);
  }
  return due.length === free;
}

async function runRound(state: DispatcherState): Promise<void> {
  do {
    state.again = false;
    try {
      if (await claimOnce(state)) state.again = true;
    } catch (err) {
      state.logger?.warn({ err }, 'the webhook dispatcher could not claim deliveries; it tries again shortly');
      return;
    }
  } while (state.again && !state.stopped);
}

/**
 * A round soon, in a started dispatcher: the round under way claims once more, else one starts on the next turn of the
 * event loop; none once stopped.
 */
export function requestRound(state: DispatcherState): void {
  if (state.stopped) return;
  if (state.round) {
    state.again = true;
    return;
  }
  state.round = new Promise<void>((resolve) => setImmediate(resolve))
    .then(() => runRound(state))
    .finally(() => {
      state.round = undefined;
    });
}

/** DeliveryDispatcher.runDue: everything due now claimed and attempted, then the attempts in flight awaited. */
export async function runDueDeliveries(state: DispatcherState): Promise<number> {
  let sent = 0;
  for (;;) {
    const due = await state.store.claimDue(state.businessClock(), MAX_IN_FLIGHT, state.leaseMs);
    await Promise.all(due.map((d) => attemptClaimed(state, d)));
    sent += due.length;
    if (due.length < MAX_IN_FLIGHT || state.stopped) break;
  }
  // and what the loop already has in flight
  await Promise.all([...state.inFlight]);
  return sent;
}

import {
  type ActivityOptions,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  type LocalActivityOptions,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { EscrowActivities } from '../activities/escrow.js';
import { declinedBy, GATEWAY_DECLINED, outageFailure, outageOf } from '../gateways/declined.js';
import type { ShipmentTracking } from '../gateways/rules.js';
import {
  type EscrowErrorName,
  type EscrowFailureDetails,
  type EscrowInput,
  MAX_SHIPPING_ATTEMPTS,
  type PgNotification,
  type ShippingStartArgs,
  type ShippingStartResult,
  escrowStatusQuery,
  pgNotificationSignal,
  providerFollowUpSignal,
  shippingStartUpdate,
  type EscrowWorkflow,
} from '../escrow/contract.js';
import { UPDATE_NOT_AUTHORIZED } from '../platform/temporal/messages.js';
import {
  type BuyerEvent,
  type EscrowEventSource,
  EscrowStatus,
  awaitsBuyer,
  eventsTowards,
  isFinalEscrowStatus,
  nextEscrowStatus,
} from '../escrow/status.js';

// One escrow order, from the payment to its end (confirmed, refunded, held):
//   0 --shipping start (update)--> 3 --PG notifications (signals)--> 1 | -2 --> -3 (refund) ; 3 | -2 --> -1.
// In 3 and -2, a silence of the project's reconcile hours makes the workflow ask the PG (with backoff), so a
// lost notification never strands the order; an upstream provider's notification that paygate could not ask the
// provider about then (providerFollowUpSignal) makes it ask at once, and again within minutes until it answers. Every event, applied or ignored, is recorded by an activity.
// An order can wait weeks for its buyer: once the engine suggests it (or at MAX_RUN_EVENTS) the run continues
// as new between events, carrying its state. What others can make it do is capped: shipping starts (at most
// MAX_SHIPPING_ATTEMPTS accepted), and a notification's redeliveries (the service keeps an id's copies out of
// the workflow once the order's events hold it twice; `recorded` marks a redelivery the run no longer remembers).

const GATEWAY_CALL = {
  startToCloseTimeout: '15 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes: [GATEWAY_DECLINED],
  },
} satisfies ActivityOptions & LocalActivityOptions;
const gateway = proxyActivities<EscrowActivities>(GATEWAY_CALL);

// Recording and refunding must happen: retried without a cap (a database or PG outage delays, never loses them).
const DURABLE = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
} satisfies ActivityOptions & LocalActivityOptions;
const durable = proxyActivities<EscrowActivities>(DURABLE);

// A shipping start (the PG's registration, then its record) runs as local activities in the workflow task of the
// update, in runs that reach one since SHIPPING_IN_TASK: the update is answered from that one task instead of three
// (its acceptance, then one after each activity task). The same timeouts and retries, inside the task (the SDK
// heartbeats it; the record's waits past a minute become timers): a PG that hangs or refuses ends in the same
// catalog error. A worker that dies mid-call leaves no marker, so the call runs again under the same idempotency key
// (the attempt's, replayed from the history) and the record under the same sequence number: nothing twice.
const gatewayInTask = proxyLocalActivities<EscrowActivities>(GATEWAY_CALL);
const durableInTask = proxyLocalActivities<EscrowActivities>(DURABLE);
/** Shipping starts recorded before it replay as the activity tasks they were (the marker is in the histories after). */
const SHIPPING_IN_TASK = 'escrow-shipping-local-activities';
/** Shipping starts that met an outage before it replay without asking the PG first (see shipmentInDoubt). */
const SHIPPING_IN_DOUBT = 'escrow-shipping-in-doubt';

const MIN_NONCE_LENGTH = 16;

/** What a shipping start that met an outage tells the merchant: the order stays waiting until the PG answers one. */
const SHIPPING_OUTAGE = {
  unreachable:
    'The escrow PG could not be reached; the shipping start may not have been registered. Retry the same shipping start: one the PG already registered is recognised, never registered twice.',
  timeout:
    'The escrow PG did not answer in time; the shipping start may have been registered. Retry the same shipping start to learn its outcome: one the PG already registered is recognised, never registered twice.',
};
const HOUR_MS = 60 * 60 * 1000;
/** A run continues as new at this many events even if the cluster suggests it later than Temporal's 4,096. */
export const MAX_RUN_EVENTS = 8_000;
/** Notification ids handed to the next run: a redelivery racing a continue-as-new is still a duplicate. */
const CARRIED_NOTIFICATIONS = 100;
/** Runs recorded before the continue-as-new replay without it (the marker is in the histories after). */
const ESCROW_CONTINUE_AS_NEW = 'escrow-continue-as-new';
/**
 * A provider follow-up that arrives while the PG is being asked (for an earlier one) is about a later change: it
 * stays, and the PG is asked again. Asked only when that happens, so histories recorded before replay unchanged.
 */
const FOLLOW_UP_DURING_ASK = 'escrow-follow-up-during-ask';
/** A follow-up the provider did not answer is asked again after this, doubling up to MAX_FOLLOW_UP_WAIT_MS. */
const FIRST_FOLLOW_UP_WAIT_MS = 5_000;
// at most a minute: only an order the provider said changed waits like this, and a provider back from an outage is
// asked within a minute
const MAX_FOLLOW_UP_WAIT_MS = 60 * 1000;
/** the reconcile wait doubles after each inquiry that found nothing new, up to this many times the setting */
const MAX_BACKOFF_FACTOR = 8;

function failure(name: EscrowErrorName, message: string, details: EscrowFailureDetails = {}): ApplicationFailure {
  return ApplicationFailure.create({ type: name, message, nonRetryable: true, details: [details] });
}

export async function escrowWorkflow(input: EscrowInput): Promise<void> {
  const { receiptId, carried } = input;
  let status: number = carried?.status ?? EscrowStatus.Waiting;
  let seq = carried?.seq ?? 0;
  let shipping = false;
  /** shipping starts sent to the PG: each has its own key, a refused one does not block a corrected one */
  let shippingAttempts = carried?.shippingAttempts ?? 0;
  /**
   * A shipping start that met an outage past its retries: the PG may have registered it. The next start asks the PG
   * first, so a start registered under a lost answer is recorded (and answered) instead of sent again and refused
   * as a repeat (a PG's "already registered" is its refusal).
   */
  let shipmentInDoubt: ShippingStartArgs['shipment'] | undefined = carried?.shipmentInDoubt;
  /** the provider notified a change that could not be asked about then: ask it until it answers (see the loop) */
  let followUp = carried?.followUp === true;
  /** how many follow-ups have arrived: one that arrives while the PG is asked is not answered by that ask */
  let followUpsReceived = 0;
  const spentNonces = new Set<string>(carried?.spentNonces);
  const seenNotifications = new Set<string>(carried?.recentNotifications);
  const inbox: PgNotification[] = [...(carried?.inbox ?? [])];
  const reconcileMs = Math.max(1, input.reconcileAfterHours) * HOUR_MS;

  const assertReady = (): void => {
    if (status !== EscrowStatus.Waiting) {
      throw failure('RC_ESCROW_NOT_READY', `the escrow is not waiting for shipping (status ${status})`);
    }
    // another start is at the PG now: its outcome is not known yet (2700 would say the order shipped)
    if (shipping) {
      throw failure(
        'IDEMPOTENCY_IN_PROGRESS',
        'A shipping start of this order is still in progress. Retry the same shipping start in a moment to get its answer.',
      );
    }
  };
  const assertFreshProof = (args: Partial<ShippingStartArgs> | undefined): void => {
    const nonce = args?.nonce;
    if (typeof nonce !== 'string' || nonce.length < MIN_NONCE_LENGTH || spentNonces.has(nonce)) {
      throw ApplicationFailure.create({
        type: UPDATE_NOT_AUTHORIZED,
        message: 'the update carries no fresh proof from paygate',
        nonRetryable: true,
      });
    }
  };

  const record = async (
    event: string,
    source: EscrowEventSource,
    toStatus: number | undefined,
    occurredAt: string,
    extra: { note?: string; notificationId?: string; confirmUrl?: string } = {},
    tracking?: ShipmentTracking,
    via: typeof durable = durable,
  ): Promise<void> => {
    const fromStatus = status;
    await via.recordEscrowEvent({
      // a local attempt's info carries the worker's clock: the sandbox clock follows the workflow's (followEngineTime)
      ...(via === durable ? {} : { workflowTimeMs: Date.now() }),
      transition: {
        receiptId,
        seq: ++seq,
        event,
        source,
        fromStatus,
        ...(toStatus !== undefined ? { toStatus } : {}),
        occurredAt,
        ...extra,
      },
      ...(tracking ? { tracking } : {}),
    });
    if (toStatus !== undefined) status = toStatus;
  };

  /** Moves the order; a rejection approval refunds the payment first, so its webhook shows the refund. */
  const transition = async (
    event: BuyerEvent,
    source: EscrowEventSource,
    to: number,
    occurredAt: string,
    notificationId?: string,
  ): Promise<void> => {
    let note: string | undefined;
    if (to === EscrowStatus.RejectionApproved) {
      const { refunded } = await durable.refundEscrowPayment({ receiptId, applicationId: input.applicationId });
      if (!refunded) note = 'the payment was already refunded in full';
    }
    await record(event, source, to, occurredAt, {
      ...(note !== undefined ? { note } : {}),
      ...(notificationId !== undefined ? { notificationId } : {}),
    });
  };

  /** Records the order shipped (0 -> 3) with its tracking, as the shipping start's update answers it. */
  const shippingStarted = async (
    shipment: ShippingStartArgs['shipment'],
    extra: { note?: string; confirmUrl?: string },
    inTask: boolean,
  ): Promise<ShippingStartResult> => {
    const at = new Date().toISOString();
    await record(
      'shipping_started',
      'api',
      EscrowStatus.ShippingStarted,
      at,
      extra,
      { trackingNumber: shipment.trackingNumber, deliveryCorp: shipment.deliveryCorp },
      inTask ? durableInTask : durable,
    );
    return { shippingStartedAt: at };
  };

  setHandler(escrowStatusQuery, () => status);
  setHandler(pgNotificationSignal, (notification) => {
    inbox.push(notification);
  });
  setHandler(providerFollowUpSignal, () => {
    followUp = true;
    followUpsReceived++;
  });
  /** Whether a follow-up came in since `before` (the count when the PG was asked) and is therefore still open. */
  const laterFollowUp = (before: number): boolean => followUpsReceived !== before && patched(FOLLOW_UP_DURING_ASK);

  setHandler(
    shippingStartUpdate,
    async (args): Promise<ShippingStartResult> => {
      assertFreshProof(args);
      spentNonces.add(args.nonce);
      assertReady();
      shipping = true;
      const inTask = patched(SHIPPING_IN_TASK);
      try {
        if (shipmentInDoubt !== undefined) {
          let pgStatus: number;
          try {
            pgStatus = await (inTask ? gatewayInTask : gateway).inquireEscrowStatus({
              receiptId,
              pg: input.pg,
              gatewayTid: input.gatewayTid,
            });
          } catch (err) {
            throw outageFailure(outageOf(err) ?? { kind: 'unreachable' }, SHIPPING_OUTAGE);
          }
          const doubted = shipmentInDoubt;
          shipmentInDoubt = undefined;
          if (pgStatus !== EscrowStatus.Waiting) {
            // registered by the start whose answer was lost: recorded as that start (later statuses follow by reconcile)
            return shippingStarted(
              doubted,
              { note: 'registered at the PG by an earlier shipping start whose answer was lost' },
              inTask,
            );
          }
        }
        let confirmUrl: string | undefined;
        try {
          ({ confirmUrl } = await (inTask ? gatewayInTask : gateway).startEscrowShipping({
            ...(inTask ? { workflowTimeMs: Date.now() } : {}),
            receiptId,
            attempt: ++shippingAttempts,
            pg: input.pg,
            gatewayTid: input.gatewayTid,
            shipment: args.shipment,
          }));
        } catch (err) {
          const declined = declinedBy(err);
          if (declined)
            throw failure('RC_ESCROW_SHIPPING_START_FAILED', declined.pgMessage, { pgErrorCode: declined.pgErrorCode });
          // an outage is not the PG's refusal (2701): the order stays waiting, the merchant sends the start again
          const outage = outageOf(err)!;
          // the provider's circuit was open: nothing was sent, so the attempt does not count towards the cap
          if (outage.kind === 'circuit') shippingAttempts--;
          else if (patched(SHIPPING_IN_DOUBT)) shipmentInDoubt = args.shipment;
          throw outageFailure(outage, SHIPPING_OUTAGE);
        }
        return shippingStarted(args.shipment, confirmUrl !== undefined ? { confirmUrl } : {}, inTask);
      } finally {
        shipping = false;
      }
    },
    {
      validator: (args) => {
        assertFreshProof(args);
        assertReady();
        if (shippingAttempts >= MAX_SHIPPING_ATTEMPTS) {
          throw failure(
            'RC_ESCROW_SHIPPING_START_FAILED',
            `At most ${MAX_SHIPPING_ATTEMPTS} shipping starts per order were sent to the PG; contact support.`,
          );
        }
      },
    },
  );

  const handle = async (n: PgNotification): Promise<void> => {
    if (seenNotifications.has(n.notificationId) || n.recorded === true) {
      await record(n.event, 'pg_notification', undefined, n.occurredAt, {
        note: 'duplicate notification',
        notificationId: n.notificationId,
      });
      return;
    }
    seenNotifications.add(n.notificationId);
    const next = nextEscrowStatus(status, n.event);
    if (next === undefined) {
      await record(n.event, 'pg_notification', undefined, n.occurredAt, {
        note: `does not fit escrow status ${status}`,
        notificationId: n.notificationId,
      });
      return;
    }
    await transition(n.event, 'pg_notification', next, n.occurredAt, n.notificationId);
  };

  /**
   * Asks the PG and applies what it learns, through the intermediate state when two notifications were lost:
   * whether it changed the order, or the PG could not be asked.
   */
  const reconcile = async (): Promise<'changed' | 'unchanged' | 'unanswered'> => {
    let pgStatus: number;
    try {
      pgStatus = await gateway.inquireEscrowStatus({ receiptId, pg: input.pg, gatewayTid: input.gatewayTid });
    } catch {
      return 'unanswered';
    }
    let changed = false;
    for (const { event, to } of eventsTowards(status, pgStatus)) {
      await transition(event, 'reconcile', to, new Date().toISOString());
      changed = true;
    }
    return changed ? 'changed' : 'unchanged';
  };

  // Read in condition predicates (each activation): patched() is asked only once the history is long, so a
  // history recorded before this check replays unchanged, and a run that reaches it live records the marker.
  const historyLong = (): boolean => {
    const info = workflowInfo();
    return (info.continueAsNewSuggested || info.historyLength >= MAX_RUN_EVENTS) && patched(ESCROW_CONTINUE_AS_NEW);
  };

  let waitMs = carried?.waitMs ?? reconcileMs;
  let followUpWaitMs = FIRST_FOLLOW_UP_WAIT_MS;
  while (!isFinalEscrowStatus(status)) {
    if (historyLong()) {
      // a shipping start in flight finishes first; notifications that arrive meanwhile are carried unhandled
      await condition(allHandlersFinished);
      return continueAsNew<typeof escrowWorkflow>({
        ...input,
        carried: {
          status,
          seq,
          shippingAttempts,
          spentNonces: [...spentNonces],
          recentNotifications: [...seenNotifications].slice(-CARRIED_NOTIFICATIONS),
          inbox: [...inbox],
          waitMs,
          ...(shipmentInDoubt !== undefined ? { shipmentInDoubt } : {}),
          ...(followUp ? { followUp } : {}),
        },
      });
    }
    if (awaitsBuyer(status)) {
      const heard = await condition(() => inbox.length > 0 || followUp || historyLong(), waitMs);
      if (!heard) {
        waitMs = (await reconcile()) === 'changed' ? reconcileMs : Math.min(waitMs * 2, reconcileMs * MAX_BACKOFF_FACTOR);
        continue;
      }
      if (followUp && inbox.length === 0 && !historyLong()) {
        // the provider said something changed and could not be asked then: ask now, and again after a short
        // doubling wait while it does not answer (a notification or the history's length cuts the wait short)
        const before = followUpsReceived;
        if ((await reconcile()) === 'unanswered') {
          await condition(() => inbox.length > 0 || historyLong(), followUpWaitMs);
          followUpWaitMs = Math.min(followUpWaitMs * 2, MAX_FOLLOW_UP_WAIT_MS);
        } else {
          followUp = laterFollowUp(before);
          followUpWaitMs = FIRST_FOLLOW_UP_WAIT_MS;
          waitMs = reconcileMs;
        }
        continue;
      }
    } else {
      // waiting for shipping: notifications are recorded (and ignored) as they come
      await condition(() => inbox.length > 0 || followUp || status !== EscrowStatus.Waiting || historyLong());
      if (followUp && status === EscrowStatus.Waiting && !shipping && !historyLong()) {
        // the provider says the order moved on, and a start of ours met an outage: it was registered (or not)
        const doubted = shipmentInDoubt;
        if (doubted === undefined) followUp = false;
        else {
          const before = followUpsReceived;
          let pgStatus: number | undefined;
          try {
            pgStatus = await gateway.inquireEscrowStatus({ receiptId, pg: input.pg, gatewayTid: input.gatewayTid });
          } catch {
            await condition(() => inbox.length > 0 || historyLong() || status !== EscrowStatus.Waiting, followUpWaitMs);
            followUpWaitMs = Math.min(followUpWaitMs * 2, MAX_FOLLOW_UP_WAIT_MS);
            continue;
          }
          if (pgStatus === EscrowStatus.Waiting) followUp = laterFollowUp(before);
          else if (!shipping && status === EscrowStatus.Waiting) {
            shipmentInDoubt = undefined;
            // recorded as the start whose answer was lost; followUp stays: the order then asks where the buyer is
            await shippingStarted(
              doubted,
              { note: 'registered at the PG by an earlier shipping start whose answer was lost' },
              false,
            );
          }
          continue;
        }
      }
    }
    await condition(() => !shipping);
    while (inbox.length > 0) {
      await handle(inbox.shift()!);
      waitMs = reconcileMs;
    }
  }

  // notifications that arrived together with the last one
  while (inbox.length > 0) await handle(inbox.shift()!);
  await condition(allHandlersFinished);
}

// the signature the services start it by (src/escrow/contract.ts) is this function's
escrowWorkflow satisfies EscrowWorkflow;

// The Temporal floor's workflows (bench/floor.ts; their own bundle, so nothing of paygate's is evaluated per run):
// each performs exactly the Temporal actions one paygate flow of `npm run bench:flows` performs — the same workflow
// types, ids, starts and conflict policies, updates, patch markers, local activities (names, order, options),
// timers and payload shapes of the same lengths — and nothing else: no envelope check, no proof, no state machine.
//
// What one paygate flow does in Temporal, read from the code (bench/floor.ts sends the client's half):
//
// verification (POST request, POST realarm, GET sandbox SMS inbox, POST confirm, GET certificate;
// src/verification/request.ts and otp-steps.ts, src/workflows/verification.ts):
//   request  executeUpdateWithStart('otpSent', args [envelope of no args]) starting `verificationWorkflow`
//            (id verification:<receipt>, conflict policy FAIL, task queue paygate, input: the run's ids, PG, type,
//            requestedAt, client IP, the person, the caps, oneActivityPerStep), under a 60 s deadline
//            -> the run's first task: patch marker paygate-bound-messages (the workflows' interceptors), patch
//            marker verification-local-steps, local activity sendVerificationOtp -> { tid, recorded }; the
//            update answers { tid }; the confirm window's timer starts (30 min, a condition's timeout)
//   resend   executeUpdate('resendOtp', [envelope of { nonce }]) under a 60 s deadline
//            -> local activity resendVerificationOtp -> { recorded }; the update answers { numberOfRealarms }
//   inbox    no Temporal action (the sandbox PGs' process and the database)
//   confirm  executeUpdate('confirmOtp', [envelope of { nonce, otp }]) under a 60 s deadline
//            -> local activity confirmVerificationOtp -> { authenticatedAt, recorded }; the update answers
//            { authenticatedAt }; the confirm window's timer is cancelled and the lookup window's starts (30 min)
//   lookup   no Temporal action (the database)
// The run stays open on its timer, as paygate's does.
//
// shipping (PUT /v2/escrow/shipping/start/<receipt>; src/escrow/shipping.ts, src/workflows/escrow.ts), on an
// order whose run the escrow payment started (the unmeasured preparation: workflow.start of `escrowWorkflow`, id
// escrow:<receipt>, conflict policy USE_EXISTING; its first task records the paygate-bound-messages marker and
// waits for shipping):
//   executeUpdateWithStart('shippingStart', [envelope of { nonce, shipment }]) with the same start operation
//   (conflict policy USE_EXISTING: the running order takes the update), under a 60 s deadline
//   -> patch marker escrow-shipping-local-activities, local activity startEscrowShipping -> {}, local activity
//   recordEscrowEvent (the shipping_started transition and its tracking) -> {} (bench:flows's project has no
//   webhook_url, so no ESCROW_STATUS_CHANGED delivery id); the update answers { shippingStartedAt }; the run
//   waits for the buyer on a timer of the project's reconcile hours (72 h)
//
// charge and cancel: no Temporal action on their path (src/payments: a reconcile workflow starts only for a call
// that lost its PG answer); webhook (the test send): none either (deliveries are rows the dispatcher sends since
// they stopped being workflows). They have no floor.
//
// Each patch marker's first record also upserts the TemporalChangeVersion search attribute (the SDK does it, on
// both sides). No flow sets a memo or search attributes of its own, sends a signal or a query, or schedules an
// activity task: every step is a local activity, answered within the update's workflow task. Checked against the engine's histories of one paygate flow and one floor flow: the same events in the same
// order, every payload of the same size.
//
// Left out as paygate's own cost: the envelope's opening and the refusal checks (src/workflows/interceptors.ts,
// the sinks they report to), the update proofs' checks, the workflows' state machines, the client's metrics interceptor, the activities' wrappers
// (sandbox clock, refused inputs). The payloads still carry the envelope and the nonces: the same bytes are sealed.
import {
  allHandlersFinished,
  condition,
  defineUpdate,
  type LocalActivityOptions,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { FloorActivities, FloorPerson, FloorShipment } from './floor-activities.js';

/** paygate's envelope of every update argument (src/platform/temporal/messages.ts): the message's name and args. */
export interface FloorEnvelope {
  readonly paygateMessage: string;
  readonly args: readonly unknown[];
}

export const otpSentUpdate = defineUpdate<{ tid: string }, [FloorEnvelope]>('otpSent');
export const resendOtpUpdate = defineUpdate<{ numberOfRealarms: number }, [FloorEnvelope]>('resendOtp');
export const confirmOtpUpdate = defineUpdate<{ authenticatedAt: string }, [FloorEnvelope]>('confirmOtp');
export const shippingStartUpdate = defineUpdate<{ shippingStartedAt: string }, [FloorEnvelope]>('shippingStart');

/** The patch markers paygate's runs record on these paths (their names, so the markers are as long). */
const BOUND_MESSAGES_PATCH = 'paygate-bound-messages';
const LOCAL_STEPS = 'verification-local-steps';
const SHIPPING_IN_TASK = 'escrow-shipping-local-activities';

/** The options of the local activities, as paygate's workflows give them (retries never run here). */
const VERIFICATION_GATEWAY_CALL: LocalActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '5 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['GatewayDeclined'],
  },
};
const ESCROW_GATEWAY_CALL: LocalActivityOptions = { ...VERIFICATION_GATEWAY_CALL, startToCloseTimeout: '15 seconds' };
const ESCROW_DURABLE: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
};
const verificationInTask = proxyLocalActivities<FloorActivities>(VERIFICATION_GATEWAY_CALL);
const escrowGatewayInTask = proxyLocalActivities<FloorActivities>(ESCROW_GATEWAY_CALL);
const escrowDurableInTask = proxyLocalActivities<FloorActivities>(ESCROW_DURABLE);

const VERIFICATION_WINDOW_MS = 30 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;
const ESCROW_WAITING = 0;
const ESCROW_SHIPPING_STARTED = 3;

export interface FloorVerificationInput {
  readonly receiptId: string;
  readonly merchantId: string;
  readonly pg: string;
  readonly type: 'sms' | 'pass';
  readonly requestedAt: string;
  readonly clientIp: string;
  readonly siteUrl?: string;
  readonly person: FloorPerson;
  readonly caps: { readonly maxWrongOtps: number; readonly maxResends: number };
  readonly oneActivityPerStep: true;
}

export interface FloorEscrowInput {
  readonly receiptId: string;
  readonly applicationId: string;
  readonly pg: string;
  readonly gatewayTid: string;
  readonly reconcileAfterHours: number;
}

/** A validator that accepts: paygate's updates have one each (the interceptors check there). */
const accept = { validator: (_envelope: FloorEnvelope) => undefined };

export async function verificationWorkflow(input: FloorVerificationInput): Promise<void> {
  patched(BOUND_MESSAGES_PATCH);
  const { receiptId, pg } = input;
  const confirmDeadline = Date.parse(input.requestedAt) + VERIFICATION_WINDOW_MS;
  const stamp = () => ({ workflowTimeMs: Date.now() });
  let tid: string | undefined;
  let realarms = 0;
  let authenticatedAt: number | undefined;

  setHandler(
    otpSentUpdate,
    async () => {
      await condition(() => tid !== undefined);
      return { tid: tid! };
    },
    accept,
  );
  setHandler(
    resendOtpUpdate,
    async () => {
      patched(LOCAL_STEPS);
      const attempt = ++realarms;
      await verificationInTask.resendVerificationOtp({
        pg,
        tid: tid!,
        idempotencyKey: `verification:${receiptId}:resend:${attempt}`,
        receiptId,
        numberOfRealarms: attempt,
        ...stamp(),
      });
      return { numberOfRealarms: attempt };
    },
    accept,
  );
  setHandler(
    confirmOtpUpdate,
    async (envelope) => {
      patched(LOCAL_STEPS);
      const { otp } = envelope.args[0] as { otp: string };
      const confirmed = await verificationInTask.confirmVerificationOtp({ receiptId, pg, tid: tid!, otp, ...stamp() });
      authenticatedAt = Date.parse(confirmed.authenticatedAt);
      return { authenticatedAt: confirmed.authenticatedAt };
    },
    accept,
  );

  patched(LOCAL_STEPS);
  const sent = await verificationInTask.sendVerificationOtp({
    receiptId,
    merchantId: input.merchantId,
    pg,
    type: input.type,
    person: input.person,
    clientIp: input.clientIp,
    ...(input.siteUrl !== undefined ? { siteUrl: input.siteUrl } : {}),
    ...stamp(),
  });
  tid = sent.tid;
  // the confirm window, then the lookup window: one timer each
  const verified = await condition(() => authenticatedAt !== undefined, Math.max(confirmDeadline - Date.now(), 1));
  if (verified) await sleep(Math.max(authenticatedAt! + VERIFICATION_WINDOW_MS - Date.now(), 1));
  await condition(allHandlersFinished);
}

export async function escrowWorkflow(input: FloorEscrowInput): Promise<void> {
  patched(BOUND_MESSAGES_PATCH);
  const { receiptId } = input;
  let status = ESCROW_WAITING;
  let seq = 0;
  let shippingAttempts = 0;
  let shipping = false;

  setHandler(
    shippingStartUpdate,
    async (envelope) => {
      shipping = true;
      patched(SHIPPING_IN_TASK);
      const { shipment } = envelope.args[0] as { shipment: FloorShipment };
      try {
        await escrowGatewayInTask.startEscrowShipping({
          workflowTimeMs: Date.now(),
          receiptId,
          attempt: ++shippingAttempts,
          pg: input.pg,
          gatewayTid: input.gatewayTid,
          shipment,
        });
        const at = new Date().toISOString();
        await escrowDurableInTask.recordEscrowEvent({
          workflowTimeMs: Date.now(),
          transition: {
            receiptId,
            seq: ++seq,
            event: 'shipping_started',
            source: 'api',
            fromStatus: status,
            toStatus: ESCROW_SHIPPING_STARTED,
            occurredAt: at,
          },
          tracking: { trackingNumber: shipment.trackingNumber, deliveryCorp: shipment.deliveryCorp },
        });
        status = ESCROW_SHIPPING_STARTED;
        return { shippingStartedAt: at };
      } finally {
        shipping = false;
      }
    },
    accept,
  );

  await condition(() => status !== ESCROW_WAITING);
  await condition(() => !shipping);
  // waiting for the buyer: paygate asks the PG after the project's reconcile hours of silence (a timer)
  await condition(() => false, Math.max(1, input.reconcileAfterHours) * HOUR_MS);
  await condition(allHandlersFinished);
}

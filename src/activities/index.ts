// Every activity the worker registers, from one factory with injected dependencies. The worker,
// `npm start` and the test helpers all register exactly this set.
import type { EscrowStore } from '../escrow/index.js';
import type { GatewayRegistry } from '../gateways/index.js';
import type { BillingKeyStore, CancelService, ChargeService, ReceiptService, ReceiptStore } from '../payments/index.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { ProjectStore } from '../projects/index.js';
import type { ReserveStore } from '../reserves/index.js';
import type { ScheduleStore } from '../schedules/index.js';
import type { UpstreamService } from '../upstream/index.js';
import type { VerificationStore } from '../verification/index.js';
import type { WebhookService, WebhookStore } from '../webhooks/index.js';
import { createEscrowActivities } from './escrow.js';
import { waitingForProvider } from './failures.js';
import { createReconcileActivities } from './payments.js';
import { createReserveActivities } from './reserves.js';
import { createScheduleActivities } from './schedules.js';
import { createVerificationActivities } from './verification.js';
import { createWebhookActivities, type WebhookActivityOptions } from './webhooks.js';

/**
 * What the worker's activities and its delivery recovery use where they have always been built differently from the
 * API's use cases. Built here once like every other service; kept as they were so the worker behaves as it did.
 */
export interface WorkerServices {
  /**
   * A reserve's or a schedule period's charge. Temporal retries the activity when a PG call ends without a final
   * answer, and the retry re-drives the call under the same PG key: nothing is handed to a reconcile workflow and
   * nothing is logged. Its PG call window is written on the business clock, which the worker's reconcile sweep reads.
   */
  readonly charges: Pick<ChargeService, 'chargeKey'>;
  /** An escrow rejection's refund, retried by Temporal likewise: no reconcile hand-over, nothing logged. */
  readonly cancels: Pick<CancelService, 'cancel'>;
}

/** What the activities are built from: the areas' repositories and use cases, as the composition root builds them. */
export interface ActivityDeps {
  readonly stores: {
    readonly verifications: VerificationStore;
    readonly webhooks: WebhookStore;
    readonly escrow: EscrowStore;
    readonly receipts: ReceiptStore;
    readonly projects: ProjectStore;
    readonly reserves: ReserveStore;
    readonly billingKeys: BillingKeyStore;
    readonly schedules: ScheduleStore;
  };
  /**
   * The process's use cases, built once by the composition root (createServices) before the activities: an activity
   * calls them and never builds a service or a client of its own.
   */
  readonly services: {
    readonly charges: ChargeService;
    readonly cancels: CancelService;
    readonly webhooks: WebhookService;
    readonly worker: WorkerServices;
    readonly upstream?: UpstreamService;
    readonly receipts?: ReceiptService;
  };
  /** the identity and escrow PGs the activities call directly */
  readonly gateways: GatewayRegistry;
  /** how webhook attempts reach receivers; without it, production rules (https, global addresses only) */
  readonly webhooks?: WebhookActivityOptions;
  /**
   * The durable processes' time (Clocks.businessClock): the verification, escrow, reserve and schedule activities
   * stamp their rows with it; the host's clock when absent. Webhook attempts take `webhooks.clock` (the wall clock).
   */
  readonly businessClock?: () => Date;
  /** the worker process's metrics (webhook attempts, schedule charges); uncounted without it */
  readonly metrics?: Metrics;
}

export function createActivities(deps: ActivityDeps) {
  const { services } = deps;
  const metrics = deps.metrics ? { metrics: deps.metrics } : {};
  const clock = deps.businessClock ? { clock: deps.businessClock } : {};
  const activities = {
    ...createVerificationActivities({
      gateways: deps.gateways,
      verifications: deps.stores.verifications,
      ...(services.upstream ? { upstream: services.upstream } : {}),
      ...clock,
    }),
    ...createWebhookActivities({ webhooks: deps.stores.webhooks, options: deps.webhooks ?? { sandbox: false }, ...metrics }),
    ...createEscrowActivities({
      stores: deps.stores,
      gateways: deps.gateways,
      cancels: services.worker.cancels,
      webhooks: services.webhooks,
      ...(services.upstream ? { upstream: services.upstream } : {}),
      ...(services.receipts ? { receipts: services.receipts } : {}),
      ...clock,
    }),
    ...createReserveActivities({ stores: deps.stores, charges: services.worker.charges, webhooks: services.webhooks, ...clock }),
    ...createReconcileActivities({ charges: services.charges, cancels: services.cancels, webhooks: services.webhooks }),
    ...createScheduleActivities({
      stores: deps.stores,
      charges: services.worker.charges,
      webhooks: services.webhooks,
      ...clock,
      ...metrics,
    }),
  };
  // the activities retried without a cap wait for an upstream provider's open circuit; the merchant-facing calls
  // with a few attempts (verification steps, a shipping start, the escrow inquiry) end at once with 9481 instead
  return {
    ...activities,
    executeReserve: waitingForProvider(activities.executeReserve),
    chargePeriod: waitingForProvider(activities.chargePeriod),
    settleCharge: waitingForProvider(activities.settleCharge),
    settleCancel: waitingForProvider(activities.settleCancel),
    refundEscrowPayment: waitingForProvider(activities.refundEscrowPayment),
  };
}

export type Activities = ReturnType<typeof createActivities>;

// Every activity the worker registers, from one factory with injected dependencies. The worker,
// `npm start` and the test helpers all register exactly this set.
import type { GatewayRegistry } from '../gateways/index.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { Services } from '../composition/services.js';
import type { Stores } from '../composition/stores.js';
import { createEscrowActivities } from './escrow.js';
import { waitingForProvider } from './failures.js';
import { createReconcileActivities } from './payments.js';
import { createReserveActivities } from './reserves.js';
import { createScheduleActivities } from './schedules.js';
import { createVerificationActivities } from './verification.js';
import { createWebhookActivities, type WebhookActivityOptions } from './webhooks.js';

export interface ActivityDeps {
  readonly stores: Pick<
    Stores,
    'verifications' | 'webhooks' | 'escrow' | 'receipts' | 'projects' | 'reserves' | 'billingKeys' | 'schedules'
  >;
  /**
   * The process's use cases, built once by the composition root (createServices) before the activities: an activity
   * calls them and never builds a service or a client of its own.
   */
  readonly services: Pick<Services, 'charges' | 'cancels' | 'webhooks' | 'worker'> &
    Partial<Pick<Services, 'upstream' | 'receipts'>>;
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

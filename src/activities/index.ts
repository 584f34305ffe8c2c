// Every activity the worker registers, from one factory with injected dependencies. The worker,
// `npm start` and the test helpers all register exactly this set.
import type { GatewayRegistry } from '../gateways/types.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { Stores } from '../composition/stores.js';
import { createEscrowActivities } from './escrow.js';
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
  readonly gateways: GatewayRegistry;
  /** how webhook attempts reach receivers; without it, production rules (https, global addresses only) */
  readonly webhooks?: WebhookActivityOptions;
  /** the worker process's metrics (webhook attempts, schedule and reserve charges); uncounted without it */
  readonly metrics?: Metrics;
}

export function createActivities(deps: ActivityDeps) {
  const metrics = deps.metrics ? { metrics: deps.metrics } : {};
  return {
    ...createVerificationActivities({
      gateways: deps.gateways,
      verifications: deps.stores.verifications,
      ...(deps.webhooks?.clock ? { clock: deps.webhooks.clock } : {}),
    }),
    ...createWebhookActivities({ webhooks: deps.stores.webhooks, options: deps.webhooks ?? { sandbox: false }, ...metrics }),
    ...createEscrowActivities({
      stores: deps.stores,
      gateways: deps.gateways,
      sandbox: deps.webhooks?.sandbox ?? false,
      ...(deps.webhooks?.clock ? { clock: deps.webhooks.clock } : {}),
    }),
    ...createReserveActivities({
      stores: deps.stores,
      gateways: deps.gateways,
      sandbox: deps.webhooks?.sandbox ?? false,
      ...(deps.webhooks?.clock ? { clock: deps.webhooks.clock } : {}),
      ...metrics,
    }),
    ...createReconcileActivities({
      stores: deps.stores,
      gateways: deps.gateways,
      sandbox: deps.webhooks?.sandbox ?? false,
      ...(deps.webhooks?.clock ? { clock: deps.webhooks.clock } : {}),
    }),
    ...createScheduleActivities({
      stores: deps.stores,
      gateways: deps.gateways,
      sandbox: deps.webhooks?.sandbox ?? false,
      ...(deps.webhooks?.clock ? { clock: deps.webhooks.clock } : {}),
      ...metrics,
    }),
  };
}

export type Activities = ReturnType<typeof createActivities>;

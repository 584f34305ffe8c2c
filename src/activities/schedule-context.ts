// What every schedule activity stands on: the dependencies the worker hands them, the schedule's row, and the
// SUBSCRIPTION_* webhooks to the project's webhook_url, each with a delivery id derived from (schedule, period, event).
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { renderSchedule, renderScheduleCharge, SUBSCRIPTION_EVENTS, type SubscriptionEvent } from '../schedules/rules.js';
import {
  type BillingKeyStore,
  type ReceiptStore,
  type ChargeService,
  receiptResponse,
  type ReceiptRow,
  chargeProject,
} from '../payments/index.js';
import type { WebhookService } from '../webhooks/index.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { ProjectStore } from '../projects/index.js';
import type { ScheduleChargeRow, ScheduleRow, ScheduleStore } from '../schedules/index.js';

export interface ScheduleActivityDeps {
  readonly stores: {
    readonly schedules: ScheduleStore;
    readonly receipts: ReceiptStore;
    readonly billingKeys: BillingKeyStore;
    readonly projects: ProjectStore;
  };
  /** a period's charge: the worker's charge service (Temporal retries it; no reconcile hand-over) */
  readonly charges: Pick<ChargeService, 'chargeKey'>;
  /** the SUBSCRIPTION_* deliveries to the project's webhook_url */
  readonly webhooks: Pick<WebhookService, 'deliverToProject'>;
  readonly clock?: () => Date;
  readonly metrics?: Pick<Metrics, 'scheduleCharge'>;
}

/** The activities' time: the clock handed in, else the host's. */
export function nowOf(deps: ScheduleActivityDeps): Date {
  const clock = deps.clock ?? (() => new Date());
  return clock();
}

/** A schedule webhook's delivery id: 24 hex characters, the same on every retry of the activity that sends it. */
export function scheduleDeliveryId(scheduleId: string, period: number | string, event: SubscriptionEvent): string {
  return createHash('sha256').update(`schedule\u0000${scheduleId}\u0000${period}\u0000${event}`).digest('hex').slice(0, 24);
}

/** The schedule's row; a schedule that no longer exists fails the activity for good. */
export async function scheduleRow(deps: ScheduleActivityDeps, scheduleId: string): Promise<ScheduleRow> {
  const row = await deps.stores.schedules.find(scheduleId);
  if (!row) throw ApplicationFailure.nonRetryable(`schedule ${scheduleId} no longer exists`, 'ScheduleNotFound');
  return row;
}

/** One SUBSCRIPTION_* event to the project's webhook_url (nothing without one), saved once under its derived id. */
export async function notify(
  deps: ScheduleActivityDeps,
  event: SubscriptionEvent,
  schedule: ScheduleRow,
  deliveryKey: number | string,
  extra: { charge?: ScheduleChargeRow; receipt?: ReceiptRow } = {},
): Promise<void> {
  const { stores } = deps;
  const owner = await chargeProject(stores, schedule.application_id);
  await deps.webhooks.deliverToProject(
    schedule.application_id,
    {
      event: event.toLowerCase().replace('_', '.'),
      eventCode: SUBSCRIPTION_EVENTS[event],
      tags: [schedule.schedule_id, String(extra.charge?.period ?? '')],
      payload: {
        webhook_type: event,
        schedule: renderSchedule(stores.schedules.view(schedule)),
        ...(extra.charge ? { charge: renderScheduleCharge(stores.schedules.chargeView(extra.charge)) } : {}),
        ...(extra.receipt ? { receipt: receiptResponse(extra.receipt, owner) } : {}),
      },
    },
    scheduleDeliveryId(schedule.schedule_id, deliveryKey, event),
  );
}

// The subscription schedule workflow's activities: a period's charge through the charge service (order_id
// <schedule_id>-<period>, every dunning attempt on its own PG key), the status changes of pause / resume / cancel / complete, the patch, and the
// SUBSCRIPTION_* webhooks to the project's webhook_url. Each is safe to run again: the period's row and the
// schedule's status guard every write, the charge service's order_id claim makes a retried charge re-drive
// (never repeat) the PG call, and each webhook has a delivery id derived from (schedule, period, event).
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { ScheduleChargeResult, SchedulePatchArgs } from '../schedules/contract.js';
import type { ChargeParams } from '../payments/billing-rules.js';
import {
  dueAt,
  firstPeriodAfter,
  type OnExhausted,
  renderSchedule,
  renderScheduleCharge,
  type SchedulePlan,
  type ScheduleStatus,
  SUBSCRIPTION_EVENTS,
  type SubscriptionEvent,
  scheduleOrderId,
  separateRetryOrderId,
} from '../schedules/rules.js';
import {
  type BillingKeyStore,
  type ReceiptStore,
  findUsableBillingKey,
  type ChargeService,
  receiptResponse,
  type ReceiptRow,
  adoptableReceipt,
  chargeProject,
  chargeRefusal,
  merchantReceiptId,
} from '../payments/index.js';
import type { WebhookService } from '../webhooks/index.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { Project, ProjectStore } from '../projects/index.js';
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

/** A schedule webhook's delivery id: 24 hex characters, the same on every retry of the activity that sends it. */
export function scheduleDeliveryId(scheduleId: string, period: number | string, event: SubscriptionEvent): string {
  return createHash('sha256').update(`schedule\u0000${scheduleId}\u0000${period}\u0000${event}`).digest('hex').slice(0, 24);
}

export function createScheduleActivities(deps: ScheduleActivityDeps) {
  const clock = deps.clock ?? (() => new Date());
  const { stores, charges, webhooks } = deps;
  const project = (applicationId: string): Promise<Project> => chargeProject(stores, applicationId);
  const scheduleRow = async (scheduleId: string): Promise<ScheduleRow> => {
    const row = await stores.schedules.find(scheduleId);
    if (!row) throw ApplicationFailure.nonRetryable(`schedule ${scheduleId} no longer exists`, 'ScheduleNotFound');
    return row;
  };

  /** One SUBSCRIPTION_* event to the project's webhook_url (nothing without one), saved once under its derived id. */
  const notify = async (
    event: SubscriptionEvent,
    schedule: ScheduleRow,
    deliveryKey: number | string,
    extra: { charge?: ScheduleChargeRow; receipt?: ReceiptRow } = {},
  ): Promise<void> => {
    const owner = await project(schedule.application_id);
    await webhooks.deliverToProject(
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
  };

  /**
   * The order_id an attempt charges under: the period's for every attempt. A dunning retry that an earlier version
   * started under its own order_id and that lost the PG's answer keeps that one: its retry re-drives (or adopts)
   * that charge instead of making a second under the period's order_id. Asked of retries only (attempt 2 and on).
   */
  const attemptOrderId = async (schedule: ScheduleRow, period: number, attempt: number): Promise<string> => {
    const orderId = scheduleOrderId(schedule.schedule_id, period);
    if (attempt <= 1) return orderId;
    const separate = separateRetryOrderId(schedule.schedule_id, period, attempt);
    return (await stores.receipts.findByOrder(schedule.application_id, separate)) ? separate : orderId;
  };

  return {
    async chargePeriod(input: {
      scheduleId: string;
      period: number;
      attempt: number;
      dueAt: string;
      nextDueAt: string | null;
      retryAt?: string;
      onExhausted: OnExhausted;
      /** the sandbox clock's hint (a local activity: see followEngineTime) */
      workflowTimeMs?: number;
    }): Promise<ScheduleChargeResult> {
      let schedule = await scheduleRow(input.scheduleId);
      const orderId = await attemptOrderId(schedule, input.period, input.attempt);
      const ended = (): ScheduleChargeResult => {
        deps.metrics?.scheduleCharge('ended');
        return { outcome: 'ended', status: schedule.status as ScheduleStatus, chargesMade: schedule.charges_made };
      };
      const alreadyPaid = (): ScheduleChargeResult => ({
        outcome: 'paid',
        status: schedule.status as ScheduleStatus,
        chargesMade: schedule.charges_made,
      });
      let charge: ScheduleChargeRow;
      let claimed: ReceiptRow | undefined;
      if (schedule.status === 'cancelled' || schedule.status === 'completed') {
        // a cancelled schedule charges nothing new, but a charge already claimed (in flight when it was cancelled)
        // finishes
        const existing = await stores.schedules.findCharge(schedule.schedule_id, input.period);
        if (existing?.status === 'paid') return alreadyPaid();
        claimed = await stores.receipts.findByOrder(schedule.application_id, orderId);
        if (claimed === undefined) return ended();
        charge = existing ?? (await stores.schedules.openCharge(schedule, input.period, new Date(input.dueAt), orderId)).charge;
      } else {
        const opened = await stores.schedules.openCharge(schedule, input.period, new Date(input.dueAt), orderId);
        charge = opened.charge;
        if (charge.status === 'paid') return alreadyPaid();
        // the order's receipt comes only from the charge below, after the row was opened: a row this attempt
        // created has none (the common case: one statement less per period)
        claimed = opened.opened ? undefined : await stores.receipts.findByOrder(schedule.application_id, orderId);
      }
      const owner = await project(schedule.application_id);
      const params: ChargeParams = {
        billingKey: schedule.billing_key,
        orderName: charge.order_name,
        orderId,
        price: Number(charge.price),
        taxFree: Number(charge.tax_free),
        quota: 0,
        metadata: { schedule_id: schedule.schedule_id, period: input.period },
      };
      const paid = async (receipt: ReceiptRow): Promise<ScheduleChargeResult> => {
        const recorded = await stores.schedules.recordPaid(
          charge,
          {
            attempt: input.attempt,
            orderId,
            receiptId: merchantReceiptId(receipt),
            chargedAt: receipt.purchased_at ?? clock(),
            nextChargeAt: input.nextDueAt === null ? null : new Date(input.nextDueAt),
          },
          clock(),
        );
        deps.metrics?.scheduleCharge('paid');
        await notify('SUBSCRIPTION_CHARGED', recorded.schedule, input.period, { charge: recorded.charge, receipt });
        return {
          outcome: 'paid',
          status: recorded.schedule.status as ScheduleStatus,
          chargesMade: recorded.schedule.charges_made,
        };
      };

      // a run that charged and died before recording it: the completed receipt is this period's charge
      const adopted = adoptableReceipt(claimed, params);
      if (adopted) return paid(adopted);
      try {
        const key = await findUsableBillingKey(stores, owner, schedule.billing_key);
        return await paid(await charges.chargeKey(owner, key, params, clock()));
      } catch (err) {
        const refusal = chargeRefusal(err);
        if (!refusal) {
          deps.metrics?.scheduleCharge('failed');
          throw err; // an outage: the activity's retry, not dunning
        }
        if (refusal.errorCode === 'BILLING_KEY_DESTROYED' || refusal.errorCode === 'SUBSCRIBE_BK_NOT_FOUND') {
          await stores.schedules.recordDeclined(schedule.schedule_id, input.period, {
            attempt: input.attempt,
            orderId,
            pgErrorCode: null,
            final: true,
          });
          schedule = await stores.schedules.setStatus(schedule.schedule_id, 'cancelled', clock(), { nextChargeAt: null });
          await notify('SUBSCRIPTION_CANCELLED', schedule, input.period);
          return ended();
        }
        const final = input.retryAt === undefined;
        const declined = await stores.schedules.recordDeclined(schedule.schedule_id, input.period, {
          attempt: input.attempt,
          orderId,
          pgErrorCode: refusal.pgErrorCode ?? null,
          final,
        });
        await notify('SUBSCRIPTION_CHARGE_FAILED', schedule, `${input.period}:${input.attempt}`, { charge: declined });
        if (!final) {
          schedule = await stores.schedules.setStatus(schedule.schedule_id, 'past_due', clock(), {
            from: ['active', 'past_due'],
            nextChargeAt: new Date(input.retryAt as string),
          });
          if (input.attempt === 1) await notify('SUBSCRIPTION_PAST_DUE', schedule, input.period, { charge: declined });
        } else {
          const to: ScheduleStatus = input.onExhausted === 'cancel' ? 'cancelled' : 'paused';
          schedule = await stores.schedules.setStatus(schedule.schedule_id, to, clock(), {
            from: ['active', 'past_due'],
            nextChargeAt: null,
          });
          if (schedule.status === to) {
            await notify(to === 'paused' ? 'SUBSCRIPTION_PAUSED' : 'SUBSCRIPTION_CANCELLED', schedule, input.period, {
              charge: declined,
            });
          }
        }
        deps.metrics?.scheduleCharge('declined');
        return { outcome: 'declined', status: schedule.status as ScheduleStatus, chargesMade: schedule.charges_made };
      }
    },

    async pauseSchedule(input: { scheduleId: string; nonce: string }): Promise<void> {
      const row = await stores.schedules.setStatus(input.scheduleId, 'paused', clock(), {
        from: ['active', 'past_due'],
        nextChargeAt: null,
      });
      if (row.status === 'paused') await notify('SUBSCRIPTION_PAUSED', row, `pause:${input.nonce}`);
    },

    async resumeSchedule(input: {
      scheduleId: string;
      plan: SchedulePlan;
      fromPeriod: number;
      chargesMade: number;
    }): Promise<{ period: number; status: ScheduleStatus }> {
      const row = await scheduleRow(input.scheduleId);
      const now = clock();
      const period = firstPeriodAfter(input.plan, now, input.fromPeriod);
      const missed = [];
      for (let p = input.fromPeriod; p < period; p++) {
        missed.push({ period: p, dueAt: dueAt(input.plan, p), orderId: scheduleOrderId(row.schedule_id, p) });
      }
      await stores.schedules.skipPeriods(row, missed);
      const resumed = await stores.schedules.setStatus(input.scheduleId, 'active', now, {
        from: ['paused'],
        nextChargeAt: dueAt(input.plan, period),
      });
      return { period, status: resumed.status as ScheduleStatus };
    },

    async cancelSchedule(input: { scheduleId: string; nonce: string }): Promise<void> {
      const row = await stores.schedules.setStatus(input.scheduleId, 'cancelled', clock(), { nextChargeAt: null });
      if (row.status === 'cancelled') await notify('SUBSCRIPTION_CANCELLED', row, `cancel:${input.nonce}`);
    },

    async patchSchedule(input: { scheduleId: string; patch: SchedulePatchArgs }): Promise<void> {
      await stores.schedules.patch(input.scheduleId, input.patch, clock());
    },

    async completeSchedule(input: { scheduleId: string }): Promise<ScheduleStatus> {
      const row = await stores.schedules.setStatus(input.scheduleId, 'completed', clock(), {
        from: ['active', 'past_due'],
        nextChargeAt: null,
      });
      if (row.status === 'completed') await notify('SUBSCRIPTION_COMPLETED', row, 'completed');
      return row.status as ScheduleStatus;
    },
  };
}

export type ScheduleActivities = ReturnType<typeof createScheduleActivities>;

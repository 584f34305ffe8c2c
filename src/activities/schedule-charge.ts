// The chargePeriod activity: a period's charge through the charge service (order_id <schedule_id>-<period>, every
// dunning attempt on its own PG key), recorded paid or declined on the period's row, with the status the outcome
// leaves (past_due, or paused / cancelled when the retries are exhausted) and its SUBSCRIPTION_* webhooks.
import type { ScheduleChargeResult } from '../schedules/contract.js';
import type { ChargeParams } from '../payments/billing-rules.js';
import { type OnExhausted, type ScheduleStatus, scheduleOrderId, separateRetryOrderId } from '../schedules/rules.js';
import {
  findUsableBillingKey,
  type ReceiptRow,
  adoptableReceipt,
  chargeProject,
  chargeRefusal,
  merchantReceiptId,
} from '../payments/index.js';
import type { ScheduleChargeRow, ScheduleRow } from '../schedules/index.js';

import { notify, nowOf, type ScheduleActivityDeps, scheduleRow } from './schedule-context.js';

export interface ChargePeriodInput {
  scheduleId: string;
  period: number;
  attempt: number;
  dueAt: string;
  nextDueAt: string | null;
  retryAt?: string;
  onExhausted: OnExhausted;
  /** the sandbox clock's hint (a local activity: see followEngineTime) */
  workflowTimeMs?: number;
}

/** The period's outcome, with the schedule as it stands after it. */
const outcomeOf = (outcome: ScheduleChargeResult['outcome'], schedule: ScheduleRow): ScheduleChargeResult => ({
  outcome,
  status: schedule.status as ScheduleStatus,
  chargesMade: schedule.charges_made,
});

/** The schedule ended before the period was charged: nothing is charged for it. */
function ended(deps: ScheduleActivityDeps, schedule: ScheduleRow): ScheduleChargeResult {
  deps.metrics?.scheduleCharge('ended');
  return outcomeOf('ended', schedule);
}

/**
 * The order_id an attempt charges under: the period's for every attempt. A dunning retry that an earlier version
 * started under its own order_id and that lost the PG's answer keeps that one: its retry re-drives (or adopts)
 * that charge instead of making a second under the period's order_id. Asked of retries only (attempt 2 and on).
 */
async function attemptOrderId(
  deps: ScheduleActivityDeps,
  schedule: ScheduleRow,
  period: number,
  attempt: number,
): Promise<string> {
  const orderId = scheduleOrderId(schedule.schedule_id, period);
  if (attempt <= 1) return orderId;
  const separate = separateRetryOrderId(schedule.schedule_id, period, attempt);
  return (await deps.stores.receipts.findByOrder(schedule.application_id, separate)) ? separate : orderId;
}

/**
 * The period's row to charge and the receipt its order_id already claimed, if any; 'paid' when the period was paid
 * already, 'ended' when the schedule ended with nothing claimed for it.
 */
async function periodToCharge(
  deps: ScheduleActivityDeps,
  schedule: ScheduleRow,
  input: ChargePeriodInput,
  orderId: string,
): Promise<{ charge: ScheduleChargeRow; claimed: ReceiptRow | undefined } | 'paid' | 'ended'> {
  const { stores } = deps;
  if (schedule.status === 'cancelled' || schedule.status === 'completed') {
    // a cancelled schedule charges nothing new, but a charge already claimed (in flight when it was cancelled)
    // finishes
    const existing = await stores.schedules.findCharge(schedule.schedule_id, input.period);
    if (existing?.status === 'paid') return 'paid';
    const claimed = await stores.receipts.findByOrder(schedule.application_id, orderId);
    if (claimed === undefined) return 'ended';
    const charge = existing ?? (await stores.schedules.openCharge(schedule, input.period, new Date(input.dueAt), orderId)).charge;
    return { charge, claimed };
  }
  const opened = await stores.schedules.openCharge(schedule, input.period, new Date(input.dueAt), orderId);
  if (opened.charge.status === 'paid') return 'paid';
  // the order's receipt comes only from the charge below, after the row was opened: a row this attempt
  // created has none (the common case: one statement less per period)
  const claimed = opened.opened ? undefined : await stores.receipts.findByOrder(schedule.application_id, orderId);
  return { charge: opened.charge, claimed };
}

/** The period paid by `receipt`: recorded once, with its SUBSCRIPTION_CHARGED webhook. */
async function recordPaidPeriod(
  deps: ScheduleActivityDeps,
  input: ChargePeriodInput,
  charge: ScheduleChargeRow,
  orderId: string,
  receipt: ReceiptRow,
): Promise<ScheduleChargeResult> {
  const recorded = await deps.stores.schedules.recordPaid(
    charge,
    {
      attempt: input.attempt,
      orderId,
      receiptId: merchantReceiptId(receipt),
      chargedAt: receipt.purchased_at ?? nowOf(deps),
      nextChargeAt: input.nextDueAt === null ? null : new Date(input.nextDueAt),
    },
    nowOf(deps),
  );
  deps.metrics?.scheduleCharge('paid');
  await notify(deps, 'SUBSCRIPTION_CHARGED', recorded.schedule, input.period, { charge: recorded.charge, receipt });
  return outcomeOf('paid', recorded.schedule);
}

/**
 * A final refusal of the attempt: a destroyed key cancels the schedule; any other is dunning, the schedule past due
 * until its last attempt, then paused or cancelled as `onExhausted` says.
 */
async function recordRefusal(
  deps: ScheduleActivityDeps,
  schedule: ScheduleRow,
  input: ChargePeriodInput,
  orderId: string,
  refusal: NonNullable<ReturnType<typeof chargeRefusal>>,
): Promise<ScheduleChargeResult> {
  const { stores } = deps;
  if (refusal.errorCode === 'BILLING_KEY_DESTROYED' || refusal.errorCode === 'SUBSCRIBE_BK_NOT_FOUND') {
    await stores.schedules.recordDeclined(schedule.schedule_id, input.period, {
      attempt: input.attempt,
      orderId,
      pgErrorCode: null,
      final: true,
    });
    const cancelled = await stores.schedules.setStatus(schedule.schedule_id, 'cancelled', nowOf(deps), { nextChargeAt: null });
    await notify(deps, 'SUBSCRIPTION_CANCELLED', cancelled, input.period);
    return ended(deps, cancelled);
  }
  const final = input.retryAt === undefined;
  const declined = await stores.schedules.recordDeclined(schedule.schedule_id, input.period, {
    attempt: input.attempt,
    orderId,
    pgErrorCode: refusal.pgErrorCode ?? null,
    final,
  });
  await notify(deps, 'SUBSCRIPTION_CHARGE_FAILED', schedule, `${input.period}:${input.attempt}`, { charge: declined });
  let updated: ScheduleRow;
  if (!final) {
    updated = await stores.schedules.setStatus(schedule.schedule_id, 'past_due', nowOf(deps), {
      from: ['active', 'past_due'],
      nextChargeAt: new Date(input.retryAt as string),
    });
    if (input.attempt === 1) await notify(deps, 'SUBSCRIPTION_PAST_DUE', updated, input.period, { charge: declined });
  } else {
    const to: ScheduleStatus = input.onExhausted === 'cancel' ? 'cancelled' : 'paused';
    updated = await stores.schedules.setStatus(schedule.schedule_id, to, nowOf(deps), {
      from: ['active', 'past_due'],
      nextChargeAt: null,
    });
    if (updated.status === to) {
      await notify(deps, to === 'paused' ? 'SUBSCRIPTION_PAUSED' : 'SUBSCRIPTION_CANCELLED', updated, input.period, {
        charge: declined,
      });
    }
  }
  deps.metrics?.scheduleCharge('declined');
  return outcomeOf('declined', updated);
}

export async function chargePeriod(deps: ScheduleActivityDeps, input: ChargePeriodInput): Promise<ScheduleChargeResult> {
  const schedule = await scheduleRow(deps, input.scheduleId);
  const orderId = await attemptOrderId(deps, schedule, input.period, input.attempt);
  const toCharge = await periodToCharge(deps, schedule, input, orderId);
  if (toCharge === 'paid') return outcomeOf('paid', schedule);
  if (toCharge === 'ended') return ended(deps, schedule);
  const { charge, claimed } = toCharge;
  const owner = await chargeProject(deps.stores, schedule.application_id);
  const params: ChargeParams = {
    billingKey: schedule.billing_key,
    orderName: charge.order_name,
    orderId,
    price: Number(charge.price),
    taxFree: Number(charge.tax_free),
    quota: 0,
    metadata: { schedule_id: schedule.schedule_id, period: input.period },
  };

  // a run that charged and died before recording it: the completed receipt is this period's charge
  const adopted = adoptableReceipt(claimed, params);
  if (adopted) return recordPaidPeriod(deps, input, charge, orderId, adopted);
  try {
    const key = await findUsableBillingKey(deps.stores, owner, schedule.billing_key);
    return await recordPaidPeriod(deps, input, charge, orderId, await deps.charges.chargeKey(owner, key, params, nowOf(deps)));
  } catch (err) {
    const refusal = chargeRefusal(err);
    if (!refusal) {
      deps.metrics?.scheduleCharge('failed');
      throw err; // an outage: the activity's retry, not dunning
    }
    return recordRefusal(deps, schedule, input, orderId, refusal);
  }
}

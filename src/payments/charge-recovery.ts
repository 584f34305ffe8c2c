// What the reserve and schedule activities share around a charge through the charge service: the project it is
// made for, and adopting the charge a run made before it died without recording it. The order_id's receipt,
// complete and of the same charge (billing key, amounts, quota, name), is that charge: recorded instead of charging
// again.
import { ApplicationFailure } from '@temporalio/common';
import { type ChargeParams, chargeHash } from './billing-rules.js';
import { PAYMENT_COMPLETE } from './receipt-rules.js';
import { type Project, toProject, type ProjectStore } from '../projects/index.js';
import type { ReceiptRow } from './receipts-store.js';

/** The project a charge is made for; gone is final (the activity is not retried). */
export async function chargeProject(stores: { readonly projects: ProjectStore }, applicationId: string): Promise<Project> {
  const row = await stores.projects.findById(applicationId);
  if (!row) throw ApplicationFailure.nonRetryable(`project ${applicationId} no longer exists`, 'ProjectNotFound');
  return toProject(row);
}

/** The order_id's receipt when it is this charge, completed: the one to record instead of charging again. */
export function adoptableReceipt(receipt: ReceiptRow | undefined, params: ChargeParams): ReceiptRow | undefined {
  if (receipt?.status !== PAYMENT_COMPLETE) return undefined;
  return receipt.billing_key === params.billingKey && receipt.charge_hash === chargeHash(params) ? receipt : undefined;
}

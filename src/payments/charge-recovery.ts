// What the reserve and schedule activities share around a charge through the charge service: the project it is
// made for, and adopting the charge a run made before it died without recording it. The order_id's receipt,
// complete and of the same charge (billing key, amounts, quota, name), is that charge: recorded instead of charging
// again.
import { ApplicationFailure } from '@temporalio/common';
import { ApiError, RelayedApiError } from '../platform/errors.js';
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
  // the hash covers the billing key as the charge named it (the merchant's id; the receipt keeps paygate's own)
  return receipt.billing_key !== null && receipt.charge_hash === chargeHash(params) ? receipt : undefined;
}

/** A charge that ended without charging for good: what the reserve or the schedule period records. */
export interface ChargeRefusal {
  /** the catalog name: paygate's, or an upstream provider's own as it sent it */
  readonly errorCode: string;
  readonly pgErrorCode: string | undefined;
}

/**
 * The final refusal a charge failed with (the PG's or the provider's answer, a rule such as a destroyed key or a
 * taken order_id), or undefined for an outage, which the activity's retry re-drives under the same key.
 */
export function chargeRefusal(err: unknown): ChargeRefusal | undefined {
  // an upstream provider's own catalog error is its final answer, whatever its HTTP status
  if (err instanceof RelayedApiError) {
    return {
      errorCode: err.body.error_code,
      pgErrorCode: err.body.pg_error_code ?? String(err.body.code ?? err.body.error_code),
    };
  }
  // the provider's circuit is open (9481): an outage, never a decline; the activity waits for it
  if (err instanceof ApiError && err.errorCode === 'UPSTREAM_UNAVAILABLE') return undefined;
  if (err instanceof ApiError && err.statusCode < 500) return { errorCode: err.errorCode, pgErrorCode: err.pgErrorCode };
  return undefined;
}

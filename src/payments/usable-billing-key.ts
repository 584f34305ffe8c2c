// Which billing key a charge, a lookup or a destroy may use: shared by the billing-key and charge use cases, so
// neither imports the other for it.
import { ApiError } from '../platform/errors.js';
import { assertOwnedBy } from '../projects/access.js';
import type { Project } from '../projects/index.js';
import type { BillingKeyRow, BillingKeyStore } from './billing-keys-store.js';
import { isResourceId } from './receipt-rules.js';

/** A billing key of this project that can still be used; 2309 unknown, 1225 another project's, 9423 destroyed. */
export async function findUsableBillingKey(
  stores: { readonly billingKeys: BillingKeyStore },
  project: Project,
  billingKey: string,
): Promise<BillingKeyRow> {
  if (!isResourceId(billingKey)) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
  const row = await stores.billingKeys.findNamed(project.application_id, billingKey);
  if (!row) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
  assertOwnedBy(project, row.application_id);
  if (row.destroyed_at !== null) throw new ApiError('BILLING_KEY_DESTROYED');
  return row;
}

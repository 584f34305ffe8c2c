// Billing keys: issuance from card data (with the optional verification charge), lookup, destroy.
// Raw card data lives only in the issuance call's arguments and the adapter call.
// Issuance is a file of its own (billing-key-issuance.ts, with what it shares in billing-key-context.ts).
import { assertOwnedBy } from '../projects/access.js';
import { renderBillingKey, type BillingKeyRequest, type BillingKeyResponse } from './billing-rules.js';
import { ApiError } from '../platform/errors.js';
import { isResourceId } from './receipt-rules.js';
import { issuingCardGateway } from './card-gateways.js';
import { billingKeyView, merchantBillingKey } from './billing-keys-store.js';
import { findUsableBillingKey } from './usable-billing-key.js';
import type { Project } from '../projects/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import { type BillingKeyDeps, destroyKey } from './billing-key-context.js';
import { issueBillingKey } from './billing-key-issuance.js';

export interface BillingKeyService {
  /** Step 1 of issuance, before the card fields are read: the project's PG with billing keys (2001, 2057). */
  checkIssuingPg(project: Project, pg: string): Promise<void>;
  /** Issues a billing key at `pg` (already checked) and stores it; with a verification charge, receipt_data is its refunded receipt. */
  issue(
    project: Project,
    pg: string,
    request: BillingKeyRequest,
    requestedAt: Date,
    log: OperationLog,
  ): Promise<BillingKeyResponse>;
  lookupByReceipt(project: Project, receiptId: string): Promise<BillingKeyResponse>;
  lookup(project: Project, billingKey: string): Promise<BillingKeyResponse>;
  /** The project's billing keys newest first, destroyed ones included (the dashboard). */
  list(project: Project, limit: number): Promise<{ key: BillingKeyResponse; destroyedAt: Date | null }[]>;
  /** Revokes the key at its PG, then marks it destroyed. A PG refusal (already revoked, expired) still destroys it. */
  destroy(project: Project, billingKey: string, log: OperationLog): Promise<{ billing_key: string }>;
}

export function createBillingKeyService(deps: BillingKeyDeps): BillingKeyService {
  const { billingKeys } = deps.stores;

  return {
    async checkIssuingPg(project, pg) {
      await issuingCardGateway(deps, project, pg);
    },

    issue: (project, pg, request, requestedAt, log) => issueBillingKey(deps, project, pg, request, requestedAt, log),

    async lookupByReceipt(project, receiptId) {
      const row = isResourceId(receiptId) ? await billingKeys.findByReceipt(project.application_id, receiptId) : undefined;
      if (!row) throw new ApiError('SUBSCRIBE_BK_NOT_FOUND');
      assertOwnedBy(project, row.application_id);
      if (row.destroyed_at !== null) throw new ApiError('BILLING_KEY_DESTROYED');
      return renderBillingKey(billingKeyView(row));
    },

    async lookup(project, billingKey) {
      return renderBillingKey(billingKeyView(await findUsableBillingKey(deps.stores, project, billingKey)));
    },

    async list(project, limit) {
      const rows = await deps.stores.billingKeys.listOf(project.application_id, limit);
      return rows.map((row) => ({ key: renderBillingKey(billingKeyView(row)), destroyedAt: row.destroyed_at }));
    },

    async destroy(project, billingKey, log) {
      const key = await findUsableBillingKey(deps.stores, project, billingKey);
      await destroyKey(deps, key, log);
      return { billing_key: merchantBillingKey(key) };
    },
  };
}

// What every cancel use case stands on: the deps the cancel service is built from, the PG capability a receipt is
// refunded by, and what counts as the PG's final refusal of a cancel.
import { ApiError, RelayedApiError } from '../platform/errors.js';
import type { UpstreamGateways } from '../upstream/index.js';
import type { Gateway, GatewayRegistry } from '../gateways/index.js';
import type { ProjectStore } from '../projects/index.js';
import type { OperationLog } from '../platform/operation-log.js';
import type { ReconcileStarter } from './receipts.js';
import type { ReceiptRow, ReceiptStore } from './receipts-store.js';

/** What the cancel service is built from (the composition root fills it). */
export interface CancelDeps {
  readonly stores: { readonly receipts: ReceiptStore } & Partial<{ readonly projects: ProjectStore }>;
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers: a payment made at one is refunded there */
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  /** starts the reconcile workflow of a cancel that lost its answer; without it, the worker's sweep does */
  readonly reconcile?: ReconcileStarter;
  readonly logger?: Pick<OperationLog, 'warn'>;
}

/** a billing payment is refunded by the card capability, a one-off (escrow) payment by its payment capability */
export function cancelGatewayOf(pg: Gateway | undefined, receipt: ReceiptRow) {
  return receipt.billing_key !== null ? pg?.card : (pg?.payments ?? pg?.card);
}

/** A final refusal of a cancel: the PG's (9425), an upstream provider's own (relayed), or the provider refusing the keys. */
export function isCancelRefusal(failure: unknown): failure is ApiError | RelayedApiError {
  return (
    failure instanceof RelayedApiError ||
    (failure instanceof ApiError &&
      (failure.errorCode === 'RECEIPT_NOT_CANCELLABLE' ||
        failure.errorCode === 'UPSTREAM_KEYS_REFUSED' ||
        failure.errorCode === 'UPSTREAM_NOT_CONFIGURED'))
  );
}

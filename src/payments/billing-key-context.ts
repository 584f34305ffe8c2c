// What every billing-key use case stands on: the deps the billing-key service is built from, and a key's destroy
// (revoked at its PG, then marked destroyed), which a destroy request and a failed verification charge both make.
import { gatewayDecline, type GatewayRegistry, gatewayFailure } from '../gateways/index.js';
import type { UpstreamGateways } from '../upstream/index.js';
import { storedGateway } from './card-gateways.js';
import type { BillingKeyRow, BillingKeyStore } from './billing-keys-store.js';
import type { CancelService } from './cancels.js';
import type { ChargeService } from './charges.js';
import type { OperationLog } from '../platform/operation-log.js';

/** What the billing-key service is built from (the composition root fills it). */
export interface BillingKeyDeps {
  readonly stores: { readonly billingKeys: BillingKeyStore };
  readonly gateways: GatewayRegistry;
  readonly upstream?: UpstreamGateways;
  readonly clock: () => Date;
  readonly charges: ChargeService;
  readonly cancels: CancelService;
}

/** Revokes the key at its PG, then marks it destroyed; a PG refusal (already revoked, expired) still destroys it. */
export async function destroyKey(deps: BillingKeyDeps, key: BillingKeyRow, log: OperationLog): Promise<void> {
  const { billingKeys } = deps.stores;
  const gateway = (await storedGateway(deps, key))?.card;
  if (gateway) {
    try {
      await gateway.destroyBillingKey({ gatewayBillingKey: billingKeys.openGatewayKey(key) });
    } catch (err) {
      const decline = gatewayDecline(err);
      if (!decline) throw gatewayFailure('destroy', err);
      log.info({ pg_error_code: decline.pgErrorCode }, 'PG refused the billing key revoke; destroying locally');
    }
  }
  await billingKeys.markDestroyed(key.billing_key, deps.clock());
}

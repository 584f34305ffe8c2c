// Which gateway a billing key, a charge or a cancel goes to: a local PG, or the project's upstream provider when it
// serves the PG's name for the project. Decided at issuance and kept on the row (`via_upstream`): a key issued at
// the provider is charged there even while a local PG has the same name, and nowhere once the provider is removed.
import { type CardBillingGateway, cardGatewayFor, type Gateway, type GatewayRegistry } from '../gateways/index.js';
import { ApiError } from '../platform/errors.js';
import type { Project } from '../projects/index.js';
import type { UpstreamGateways } from '../upstream/index.js';

export interface GatewayDeps {
  readonly gateways: GatewayRegistry;
  /** the projects' upstream providers; absent where none is configured (tests of local PGs only) */
  readonly upstream?: UpstreamGateways;
}

/** A new billing key's PG: the provider's when it serves `pg` for the project, else the local one (2001, 2057). */
export async function issuingCardGateway(
  deps: GatewayDeps,
  project: Project,
  pg: string,
): Promise<{ readonly card: CardBillingGateway; readonly viaUpstream: boolean }> {
  const routed = await deps.upstream?.gateway(project.application_id, pg);
  if (routed) {
    if (!routed.card) throw new ApiError('RC_NOT_SUBSCRIBE');
    return { card: routed.card, viaUpstream: true };
  }
  return { card: cardGatewayFor(deps.gateways, project, pg), viaUpstream: false };
}

/** Where a stored key or receipt lives; undefined when that PG is gone (a provider removed, a PG unconfigured). */
export async function storedGateway(
  deps: GatewayDeps,
  row: { readonly application_id: string; readonly pg: string; readonly via_upstream: boolean },
): Promise<Gateway | undefined> {
  return row.via_upstream ? deps.upstream?.gateway(row.application_id, row.pg) : deps.gateways.get(row.pg);
}

/** The PG a new charge of `key` goes to: a local one must still be enabled for the project (2001, 2057). */
export async function chargingCardGateway(
  deps: GatewayDeps,
  project: Project,
  key: { readonly application_id: string; readonly pg: string; readonly via_upstream: boolean },
): Promise<CardBillingGateway> {
  if (!key.via_upstream) return cardGatewayFor(deps.gateways, project, key.pg);
  // a provider whose circuit is open: 9481 before the charge claims its order_id (nothing to release)
  deps.upstream?.assertAvailable?.(key.application_id);
  const gateway = await storedGateway(deps, key);
  if (!gateway) throw new ApiError('RC_PG_NOT_FOUND', { message: "The project's upstream provider no longer serves this PG." });
  if (!gateway.card) throw new ApiError('RC_NOT_SUBSCRIBE');
  return gateway.card;
}

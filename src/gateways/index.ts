// The gateways area's public module: the PG adapter contract (types.ts), the registry, the one place a PG's
// answer becomes a catalog error (failures.ts) and the clients of the sandbox's control routes, for the other
// areas and the layers above. declined.ts (a contract) is imported where it stands: it is workflow-safe, and
// this module pulls in the adapters' HTTP client.
export { cardGatewayFor, gatewayFailure, isFinalRefusal } from './failures.js';
export { gatewaysHttp, PG_CALL_ERRORS } from './http.js';
export { createOutboundHttp, OutboundFailure, type OutboundHttp } from './outbound-http.js';
export { createGatewayRegistry } from './registry.js';
export { fetchSandboxPgRequests, sendSandboxBuyerEvent } from './sandbox-escrow-control.js';
export { createSandboxFaultService, type FaultSpec, parseFault, type SandboxFaultService } from './sandbox-faults.js';
export { fetchSandboxSms, type SandboxSms } from './sandbox-inbox.js';
export {
  type ChargeResult,
  type EscrowGateway,
  type Gateway,
  type GatewayCancelResult,
  GatewayDeclinedError,
  GatewayKeyReusedError,
  gatewayDecline,
  type GatewayInquiry,
  type GatewayRegistry,
  GatewayUnavailableError,
  type IdentityGateway,
  type CardBillingGateway,
  type ChargeRequest,
  type GatewayCancelRequest,
  type IssuedBillingKey,
} from './types.js';

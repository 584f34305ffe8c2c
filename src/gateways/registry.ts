// The configured PGs. Every sandbox PG shares one HTTP client (one dedicated undici Agent).
import { createGatewayHttpClient } from './http-client.js';
import { createSandboxCardGateway } from './sandbox-card.js';
import { createSandboxIdentityGateway } from './sandbox-identity.js';
import type { Gateway, GatewayRegistry } from './types.js';

export const DEFAULT_GATEWAY_TIMEOUT_MS = 10_000;

export interface ClosableGatewayRegistry extends GatewayRegistry {
  /** closes the outbound connections; the registry must not be used afterwards */
  close(): Promise<void>;
}

export function createGatewayRegistry(opts: { sandboxUrl: string; timeoutMs?: number }): ClosableGatewayRegistry {
  const http = createGatewayHttpClient({
    baseUrl: opts.sandboxUrl,
    timeoutMs: opts.timeoutMs ?? DEFAULT_GATEWAY_TIMEOUT_MS,
    gatewayName: 'sandbox',
  });
  const gateways: readonly Gateway[] = [
    { name: 'sandbox_card', card: createSandboxCardGateway(http) },
    // A card PG that supports only payment-window payments: no billing keys, hence no `card`.
    { name: 'sandbox_noauto' },
    { name: 'sandbox_identity', identity: createSandboxIdentityGateway(http) },
  ];
  const byName = new Map(gateways.map((g) => [g.name, g]));
  return {
    get: (name) => byName.get(name),
    names: gateways.map((g) => g.name),
    close: () => http.close(),
  };
}

// The configured PGs. Every sandbox PG shares one HTTP client (one dedicated undici Agent).
import { createGatewayHttpClient } from './http-client.js';
import { createSandboxCardGateway } from './sandbox-card.js';
import { createSandboxEscrowAGateway } from './sandbox-escrow-a.js';
import { createSandboxEscrowBGateway } from './sandbox-escrow-b.js';
import { createSandboxIdentityGateway } from './sandbox-identity.js';
import { createSandboxPaymentGateway } from './sandbox-payments.js';
import type { Gateway, GatewayRegistry } from './types.js';

export const DEFAULT_GATEWAY_TIMEOUT_MS = 10_000;

export interface ClosableGatewayRegistry extends GatewayRegistry {
  /** closes the outbound connections; the registry must not be used afterwards */
  close(): Promise<void>;
}

export function createGatewayRegistry(opts: {
  sandboxUrl: string;
  timeoutMs?: number;
  /** the token shared with the sandbox: its escrow notifications are signed with a subkey of it */
  sandboxToken?: string;
}): ClosableGatewayRegistry {
  const http = createGatewayHttpClient({
    baseUrl: opts.sandboxUrl,
    timeoutMs: opts.timeoutMs ?? DEFAULT_GATEWAY_TIMEOUT_MS,
    gatewayName: 'sandbox',
  });
  const gateways: readonly Gateway[] = [
    { name: 'sandbox_card', card: createSandboxCardGateway(http), payments: createSandboxPaymentGateway(http, 'sandbox_card') },
    // A card PG that supports only payment-window payments: no billing keys, hence no `card`.
    { name: 'sandbox_noauto' },
    { name: 'sandbox_identity', identity: createSandboxIdentityGateway(http) },
    // escrow PGs: one-off payments (escrow or not) and shipping start, each with its own wire format
    {
      name: 'sandbox_escrow_a',
      payments: createSandboxPaymentGateway(http, 'sandbox_escrow_a'),
      escrow: createSandboxEscrowAGateway(http, opts.sandboxToken),
    },
    {
      name: 'sandbox_escrow_b',
      payments: createSandboxPaymentGateway(http, 'sandbox_escrow_b'),
      escrow: createSandboxEscrowBGateway(http, opts.sandboxToken),
    },
  ];
  const byName = new Map(gateways.map((g) => [g.name, g]));
  return {
    get: (name) => byName.get(name),
    names: gateways.map((g) => g.name),
    close: () => http.close(),
  };
}

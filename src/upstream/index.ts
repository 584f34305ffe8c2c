// The upstream connector's public module: what other areas, routes, the dashboard, the CLI and the composition
// root use of it (its rules stand where they are).
export { createProviderClient, providerOperation, ProviderRefusedError, type ProviderClient } from './client.js';
export { type CircuitSettings, DEFAULT_CIRCUIT_SETTINGS } from './circuit.js';
export { upstreamHttp } from './http.js';
export { createUpstreamService, type UpstreamGateways, type UpstreamService } from './service.js';
export { createUpstreamStore, type UpstreamCredentials, type UpstreamStore } from './store.js';

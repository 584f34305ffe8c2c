// The escrow area's public module: what the layers above (activities, the composition root, the API: its routes'
// HTTP contract) may use of it. Its pure rules (rules.ts, status.ts) and workflow contract (contract.ts) are
// imported where they stand: they are workflow-safe, and this module pulls in the store and the service.
export { escrowHttp } from './http.js';
export { createEscrowService, type EscrowService, escrowDataLookup } from './service.js';
export { createEscrowStore, type EscrowStore } from './store.js';

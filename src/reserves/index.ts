// The reserves area's public module: what the layers above (activities, the composition root, the API: its routes'
// HTTP contract) may use of it. Its pure rules (rules.ts) and workflow contract (contract.ts) are imported where
// they stand: they are workflow-safe, and this module pulls in the store and the service.
export { reservesHttp } from './http.js';
export { createReserveService, type ReserveService } from './service.js';
export { createReserveStore, type ReserveRow, type ReserveStore } from './store.js';

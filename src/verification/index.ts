// The verification area's public module: what the layers above (activities, the composition root, the API: its
// routes' HTTP contract) may use of it. Its pure rules (rules.ts) and workflow contract (contract.ts) are imported
// where they stand: they are workflow-safe, and this module pulls in the store and the service.
export { verificationHttp } from './http.js';
export { countVerificationOutcomes } from './metrics.js';
export { createVerificationService, type VerificationService } from './service.js';
export { createVerificationStore, type VerificationStore } from './store.js';
export { createVerificationSendStore, type VerificationSendStore } from './sends-store.js';

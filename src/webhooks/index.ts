// The webhooks area's public module: what other areas and the layers above (activities, the API app, the
// composition root) may use of it. Its pure rules (rules.ts, retry-ladder.ts) and workflow contract
// (contract.ts) are imported where they stand: they are workflow-safe, and this module pulls in the stores,
// the services and the HTTP client.
export { createDeliveryAttempts, type DeliveryAttempts, type WebhookAttemptOptions } from './attempt.js';
export { createDeliveryDispatcher, type DeliveryDispatcher } from './dispatcher.js';
export { checkHostAddresses, createGuardedLookup, createWebhookHttpClient, type Resolver } from './http-client.js';
export { webhooksHttp } from './http.js';
export { createMessageService, type MessageService } from './messages.js';
export { createMessageStore, type MessageStore } from './messages-store.js';
export { countPendingDeliveries } from './pending-deliveries.js';
export { createWebhookService, type OutboxTransaction, type WebhookService } from './service.js';
export { signedHeaders } from './signing.js';
export { createWebhookStore, type DeliveryRow, type SigningSecrets, type WebhookStore } from './store.js';

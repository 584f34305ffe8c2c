// What the webhook service's use cases share: the store, the URL policy and its DNS lookup, the wall clock and the
// delivery engine (service.ts builds it and binds the use cases over it), and the endpoint kinds they address.
import type { DeliveryEngine } from './delivery-engine.js';
import type { Resolver } from './http-client.js';
import type { UrlPolicy } from './rules.js';
import type { EndpointKind, WebhookStore } from './store.js';

export interface WebhookServiceContext {
  readonly store: WebhookStore;
  readonly policy: UrlPolicy;
  /** the save-time DNS lookup (tests inject one) */
  readonly resolve?: Resolver;
  /** the wall clock: secrets' overlap */
  readonly clock: () => Date;
  readonly engine: DeliveryEngine;
}

export const MESSAGE: EndpointKind = 'message';
export const PROJECT: EndpointKind = 'project';
export const MAX_DELIVERY_ID_LENGTH = 100;

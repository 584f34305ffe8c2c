// Webhook endpoints, deliveries and attempts: one store over three concerns (endpoints-store.ts,
// deliveries-store.ts, attempts-store.ts), their rows and shapes in records.ts. Signing secrets and delivery bodies
// are sealed (bound to their row); an attempt is recorded once per (delivery, attempt number), together with the
// delivery's new state and the endpoint's health — so a retried attempt activity changes nothing twice.
import type { Kysely } from 'kysely';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import { type AttemptStore, createAttemptStore } from './attempts-store.js';
import { createDeliveryStore, type DeliveryStore } from './deliveries-store.js';
import { createEndpointStore, type EndpointStore } from './endpoints-store.js';

export type {
  AttemptResult,
  AttemptRow,
  ClaimedDelivery,
  DeliveryRow,
  EndpointChange,
  EndpointKind,
  EndpointRow,
  NewDelivery,
  RecordedAttempt,
  SigningColumns,
  SigningSecrets,
} from './records.js';

export interface WebhookStore extends EndpointStore, DeliveryStore, AttemptStore {}

export function createWebhookStore(db: Kysely<Tables>, cipher: FieldCipher): WebhookStore {
  return { ...createEndpointStore(db, cipher), ...createDeliveryStore(db, cipher), ...createAttemptStore(db) };
}

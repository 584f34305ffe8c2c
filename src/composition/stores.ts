// Every repository over one database, built once per process. Repositories are object factories over
// a Kysely handle (and a field cipher where a column is sealed); nothing above the store sees SQL.
import type { Kysely } from 'kysely';
import { createFieldCipher, type FieldCipher } from '../platform/security/field-cipher.js';
import type { Keyring } from '../platform/security/keyring.js';
import { createAccessTokenStore, type AccessTokenStore, createProjectStore, type ProjectStore } from '../projects/index.js';
import { createBillingKeyStore, type BillingKeyStore, createReceiptStore, type ReceiptStore } from '../payments/index.js';
import type { Tables } from '../platform/db/db.js';
import { createEscrowStore, type EscrowStore } from '../escrow/index.js';
import { createIdempotencyStore, type IdempotencyStore } from '../platform/idempotency.js';
import { createDashboardSessionStore, type DashboardSessionStore } from '../platform/dashboard-sessions.js';
import { createMessageStore, type MessageStore, createWebhookStore, type WebhookStore } from '../webhooks/index.js';
import { createReserveStore, type ReserveStore } from '../reserves/index.js';
import { createScheduleStore, type ScheduleStore } from '../schedules/index.js';
import {
  createVerificationSendStore,
  type VerificationSendStore,
  createVerificationStore,
  type VerificationStore,
} from '../verification/index.js';
import { createUpstreamStore, type UpstreamStore } from '../upstream/index.js';

export interface Stores {
  readonly projects: ProjectStore;
  readonly accessTokens: AccessTokenStore;
  readonly idempotency: IdempotencyStore;
  readonly billingKeys: BillingKeyStore;
  readonly receipts: ReceiptStore;
  readonly verifications: VerificationStore;
  /** the verification sends counted against the caps (phones by keyed hash) */
  readonly verificationSends: VerificationSendStore;
  readonly webhooks: WebhookStore;
  readonly messages: MessageStore;
  readonly escrow: EscrowStore;
  readonly reserves: ReserveStore;
  readonly schedules: ScheduleStore;
  readonly upstreams: UpstreamStore;
  /** the sandbox dashboard's sessions (the dashboard signs in through it; key rotations end them through the projects' port) */
  readonly dashboardSessions: DashboardSessionStore;
  /**
   * One unit of work: `work` gets these repositories over one transaction, committed when it resolves and rolled back
   * when it throws. Inside one already, `work` joins it. Where a change and the event that tells of it must be written
   * together (a charge's completion and its feedback delivery: the outbox), the producer writes both through it.
   */
  transaction<T>(work: (tx: Stores) => Promise<T>): Promise<T>;
}

export function createStores(db: Kysely<Tables>, keyring: Keyring): Stores {
  return storesOver(db, keyring, createFieldCipher(keyring));
}

function storesOver(db: Kysely<Tables>, keyring: Keyring, cipher: FieldCipher): Stores {
  const stores: Stores = {
    projects: createProjectStore(db),
    accessTokens: createAccessTokenStore(db),
    idempotency: createIdempotencyStore(db),
    billingKeys: createBillingKeyStore(db, cipher),
    receipts: createReceiptStore(db),
    verifications: createVerificationStore(db, cipher),
    verificationSends: createVerificationSendStore(db, keyring),
    webhooks: createWebhookStore(db, cipher),
    messages: createMessageStore(db, cipher),
    escrow: createEscrowStore(db, cipher),
    reserves: createReserveStore(db, cipher),
    schedules: createScheduleStore(db),
    upstreams: createUpstreamStore(db, cipher),
    dashboardSessions: createDashboardSessionStore(db, keyring),
    transaction: (work) =>
      db.isTransaction ? work(stores) : db.transaction().execute((trx) => work(storesOver(trx, keyring, cipher))),
  };
  return stores;
}

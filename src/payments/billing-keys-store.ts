// Billing keys: paygate's id, the masked card, and the gateway's key (kept server-side only).
import type { Kysely, Selectable } from 'kysely';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { MaskedCard } from './card.js';
import type { BillingKeyView } from './billing-rules.js';
import type { Tables } from '../platform/db/db.js';

export type BillingKeyRow = Selectable<Tables['billing_keys']>;

// The gateway's billing key is the credential that charges the card: stored sealed, bound to its row.
const gatewayKeyContext = (billingKey: string) => `billing-key:${billingKey}:gateway`;

export interface NewBillingKey {
  readonly billingKey: string;
  readonly applicationId: string;
  readonly receiptId: string;
  readonly subscriptionId: string;
  readonly orderName: string;
  readonly pg: string;
  /** the gateway's own key: sealed before it is written */
  readonly gatewayBillingKey: string;
  readonly card: MaskedCard;
  readonly expiresAt: Date;
  readonly publishedAt: Date;
  readonly requestedAt: Date;
  /** issued at the project's upstream provider (its billing_key and receipt_id are this key's) */
  readonly viaUpstream?: boolean;
}

export interface BillingKeyStore {
  insert(key: NewBillingKey): Promise<BillingKeyRow>;
  /** Any project's key: callers check ownership (1225) with the row's application_id. */
  find(billingKey: string): Promise<BillingKeyRow | undefined>;
  /** The project's newest first, at most `limit` (the dashboard's lists). */
  listOf(applicationId: string, limit: number): Promise<BillingKeyRow[]>;
  findByReceipt(receiptId: string): Promise<BillingKeyRow | undefined>;
  /** Marks the key destroyed; false when it was already destroyed. */
  markDestroyed(billingKey: string, at: Date): Promise<boolean>;
  /** The gateway's key of a row, opened for the one adapter call that needs it. */
  openGatewayKey(row: Pick<BillingKeyRow, 'billing_key' | 'gateway_billing_key'>): string;
}

export function createBillingKeyStore(db: Kysely<Tables>, cipher: FieldCipher): BillingKeyStore {
  return {
    async insert(key) {
      return db
        .insertInto('billing_keys')
        .values({
          billing_key: key.billingKey,
          application_id: key.applicationId,
          receipt_id: key.receiptId,
          subscription_id: key.subscriptionId,
          order_name: key.orderName,
          pg: key.pg,
          gateway_billing_key: cipher.seal(key.gatewayBillingKey, gatewayKeyContext(key.billingKey)),
          via_upstream: key.viaUpstream ?? false,
          card_masked_number: key.card.maskedNumber,
          card_company: key.card.cardCompany,
          card_company_code: key.card.cardCompanyCode,
          card_type: key.card.cardType,
          expires_at: key.expiresAt,
          published_at: key.publishedAt,
          requested_at: key.requestedAt,
          destroyed_at: null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },

    async find(billingKey) {
      return db.selectFrom('billing_keys').selectAll().where('billing_key', '=', billingKey).executeTakeFirst();
    },

    async listOf(applicationId, limit) {
      return db
        .selectFrom('billing_keys')
        .selectAll()
        .where('application_id', '=', applicationId)
        .orderBy('published_at', 'desc')
        .orderBy('billing_key', 'desc')
        .limit(limit)
        .execute();
    },

    async findByReceipt(receiptId) {
      return db.selectFrom('billing_keys').selectAll().where('receipt_id', '=', receiptId).executeTakeFirst();
    },

    async markDestroyed(billingKey, at) {
      const result = await db
        .updateTable('billing_keys')
        .set({ destroyed_at: at })
        .where('billing_key', '=', billingKey)
        .where('destroyed_at', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    openGatewayKey(row) {
      return cipher.open(row.gateway_billing_key, gatewayKeyContext(row.billing_key));
    },
  };
}

function maskedCardOf(row: BillingKeyRow): MaskedCard {
  return {
    maskedNumber: row.card_masked_number,
    cardCompany: row.card_company,
    cardCompanyCode: row.card_company_code,
    cardType: row.card_type,
  };
}

export function billingKeyView(row: BillingKeyRow): BillingKeyView {
  return {
    billingKey: row.billing_key,
    receiptId: row.receipt_id,
    subscriptionId: row.subscription_id,
    pg: row.pg,
    card: maskedCardOf(row),
    expiresAt: row.expires_at,
    publishedAt: row.published_at,
    requestedAt: row.requested_at,
  };
}

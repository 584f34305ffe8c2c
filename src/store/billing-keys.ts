// Billing keys: paygate's id, the masked card, and the gateway's key (kept server-side only).
import type { Kysely, Selectable } from 'kysely';
import type { MaskedCard } from '../gateways/types.js';
import type { BillingKeyView } from '../domain/billing.js';
import type { Tables } from './db.js';
import type { BillingKeysTable } from './migrations/0002_billing.js';

export type BillingKeyRow = Selectable<BillingKeysTable>;

export interface NewBillingKey {
  readonly billingKey: string;
  readonly applicationId: string;
  readonly receiptId: string;
  readonly subscriptionId: string;
  readonly orderName: string;
  readonly pg: string;
  readonly gatewayBillingKey: string;
  readonly card: MaskedCard;
  readonly expiresAt: Date;
  readonly publishedAt: Date;
  readonly requestedAt: Date;
}

export async function insertBillingKey(db: Kysely<Tables>, key: NewBillingKey): Promise<BillingKeyRow> {
  return db
    .insertInto('billing_keys')
    .values({
      billing_key: key.billingKey,
      application_id: key.applicationId,
      receipt_id: key.receiptId,
      subscription_id: key.subscriptionId,
      order_name: key.orderName,
      pg: key.pg,
      gateway_billing_key: key.gatewayBillingKey,
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
}

/** Any project's key: callers check ownership (1225) with the row's application_id. */
export async function findBillingKey(db: Kysely<Tables>, billingKey: string): Promise<BillingKeyRow | undefined> {
  return db.selectFrom('billing_keys').selectAll().where('billing_key', '=', billingKey).executeTakeFirst();
}

export async function findBillingKeyByReceipt(db: Kysely<Tables>, receiptId: string): Promise<BillingKeyRow | undefined> {
  return db.selectFrom('billing_keys').selectAll().where('receipt_id', '=', receiptId).executeTakeFirst();
}

/** Marks the key destroyed; false when it was already destroyed. */
export async function markBillingKeyDestroyed(db: Kysely<Tables>, billingKey: string, at: Date): Promise<boolean> {
  const result = await db
    .updateTable('billing_keys')
    .set({ destroyed_at: at })
    .where('billing_key', '=', billingKey)
    .where('destroyed_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
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

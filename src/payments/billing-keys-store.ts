// Billing keys: paygate's id, the masked card, and the gateway's key (kept server-side only).
import { type ExpressionBuilder, type Kysely, type Selectable, sql } from 'kysely';
import { ApiError } from '../platform/errors.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { MaskedCard } from '../gateways/card-rules.js';
import type { BillingKeyView } from './billing-rules.js';
import type { Tables } from '../platform/db/db.js';

export type BillingKeyRow = Selectable<Tables['billing_keys']>;

/**
 * The billing_key the merchant sees and names: the upstream provider's for a key issued there (unique at the provider
 * for the project's account only, so kept beside paygate's own id, which receipts, the sealed gateway key and every
 * internal reference use), else paygate's own. The same for the issuance's receipt_id (`merchantIssuanceReceiptId`).
 */
export const merchantBillingKey = (row: Pick<BillingKeyRow, 'billing_key' | 'provider_billing_key'>): string =>
  row.provider_billing_key ?? row.billing_key;
export const merchantIssuanceReceiptId = (row: Pick<BillingKeyRow, 'receipt_id' | 'provider_receipt_id'>): string =>
  row.provider_receipt_id ?? row.receipt_id;

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
  /** issued at the project's upstream provider */
  readonly viaUpstream?: boolean;
  /** the provider's billing_key and receipt_id of the issuance, which the merchant is shown */
  readonly providerIds?: { readonly billingKey: string; readonly receiptId: string } | undefined;
}

export interface BillingKeyStore {
  /** 9482 UPSTREAM_ID_REUSED, storing nothing, when the project already has a key with the provider's ids. */
  insert(key: NewBillingKey): Promise<BillingKeyRow>;
  /** By paygate's own id (a receipt's billing_key). */
  find(billingKey: string): Promise<BillingKeyRow | undefined>;
  /**
   * By the billing_key the merchant names (`merchantBillingKey`): the project's key of that id, else any project's
   * (callers check ownership, 1225, with the row's application_id).
   */
  findNamed(applicationId: string, billingKey: string): Promise<BillingKeyRow | undefined>;
  /** The project's newest first, at most `limit` (the dashboard's lists). */
  listOf(applicationId: string, limit: number): Promise<BillingKeyRow[]>;
  /** By the issuance's receipt_id the merchant names: the project's first, else any project's (as findNamed). */
  findByReceipt(applicationId: string, receiptId: string): Promise<BillingKeyRow | undefined>;
  /** Marks the key destroyed; false when it was already destroyed. */
  markDestroyed(billingKey: string, at: Date): Promise<boolean>;
  /** The gateway's key of a row, opened for the one adapter call that needs it. */
  openGatewayKey(row: Pick<BillingKeyRow, 'billing_key' | 'gateway_billing_key'>): string;
}

export function createBillingKeyStore(db: Kysely<Tables>, cipher: FieldCipher): BillingKeyStore {
  /** the row the merchant names `id` in `column`: a relayed key by the provider's id, any other by its own */
  const named = (applicationId: string, own: 'billing_key' | 'receipt_id', id: string) => {
    const provider = own === 'billing_key' ? 'provider_billing_key' : 'provider_receipt_id';
    return db
      .selectFrom('billing_keys')
      .selectAll()
      .where((eb: ExpressionBuilder<Tables, 'billing_keys'>) =>
        eb.or([eb(provider, '=', id), eb.and([eb(own, '=', id), eb(provider, 'is', null)])]),
      )
      .orderBy(sql`application_id = ${applicationId}`, 'desc')
      .limit(1)
      .executeTakeFirst();
  };
  return {
    async insert(key) {
      const inserted = await db
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
          provider_billing_key: key.providerIds?.billingKey ?? null,
          provider_receipt_id: key.providerIds?.receiptId ?? null,
          card_masked_number: key.card.maskedNumber,
          card_company: key.card.cardCompany,
          card_company_code: key.card.cardCompanyCode,
          card_type: key.card.cardType,
          expires_at: key.expiresAt,
          published_at: key.publishedAt,
          requested_at: key.requestedAt,
          destroyed_at: null,
        })
        // paygate's own ids are new: only the provider's can be taken (the provider repeated itself)
        .onConflict((oc) => oc.doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!inserted) {
        throw new ApiError('UPSTREAM_ID_REUSED', {
          message:
            'The upstream provider issued a billing_key or receipt_id that another billing key of this project already has.',
        });
      }
      return inserted;
    },

    async findNamed(applicationId, billingKey) {
      return named(applicationId, 'billing_key', billingKey);
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

    async findByReceipt(applicationId, receiptId) {
      return named(applicationId, 'receipt_id', receiptId);
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
    billingKey: merchantBillingKey(row),
    receiptId: merchantIssuanceReceiptId(row),
    subscriptionId: row.subscription_id,
    pg: row.pg,
    card: maskedCardOf(row),
    expiresAt: row.expires_at,
    publishedAt: row.published_at,
    requestedAt: row.requested_at,
  };
}

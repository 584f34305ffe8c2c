// A receipt that needs an operator's attention: an upstream provider answered a charge with something other than
// what was asked (another order_id, price, tax_free, PG or billing key). The receipt records what the provider says
// happened (its receipt is the truth about the money), and this column says what disagreed, so the dashboard shows
// it and a retry of the same order keeps answering 9480 instead of a plain receipt.
import { sql, type ColumnType } from 'kysely';
import { defineMigration } from '../migrate.js';

/** `{ kind, operation, at, fields: { <field>: { asked, answered } } }` (ReceiptAttention in src/payments/receipt-rules.ts) */
type Attention = ColumnType<unknown | null, string | null | undefined, string | null>;

export interface ReceiptAttentionTables {
  receipts: { attention: Attention };
}

export const migration = defineMigration<ReceiptAttentionTables>({
  name: '0021_receipt_attention',
  async up(db) {
    await sql`alter table receipts add column attention jsonb`.execute(db);
  },
});

// Sandbox messages: what POST /sandbox/v1/messages was asked to send, the phone sealed (bound to its row).
import type { Kysely, Selectable } from 'kysely';
import type { MessageOutcome } from './rules.js';
import type { FieldCipher } from '../platform/security/field-cipher.js';
import type { Tables } from '../platform/db/db.js';
import type { MessagesTable } from '../platform/db/migrations/0006_messages.js';

export type MessageRow = Selectable<MessagesTable>;

export interface NewMessage {
  readonly receiptId: string;
  readonly applicationId: string;
  readonly refId: string | null;
  readonly templateCode: string;
  readonly phone: string;
  readonly outcome: MessageOutcome;
  readonly createdAt: Date;
}

export interface MessageStore {
  insert(m: NewMessage): Promise<MessageRow>;
  find(receiptId: string): Promise<MessageRow | undefined>;
  /** The sealed phone opened. */
  phone(row: MessageRow): string;
}

const phoneContext = (receiptId: string) => `message:${receiptId}:phone`;

export function createMessageStore(db: Kysely<Tables>, cipher: FieldCipher): MessageStore {
  return {
    insert(m) {
      return db
        .insertInto('messages')
        .values({
          receipt_id: m.receiptId,
          application_id: m.applicationId,
          ref_id: m.refId,
          template_code: m.templateCode,
          phone_sealed: cipher.seal(m.phone, phoneContext(m.receiptId)),
          outcome: m.outcome,
          created_at: m.createdAt,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    },
    find(receiptId) {
      return db.selectFrom('messages').selectAll().where('receipt_id', '=', receiptId).executeTakeFirst();
    },
    phone(row) {
      return cipher.open(row.phone_sealed, phoneContext(row.receipt_id));
    },
  };
}

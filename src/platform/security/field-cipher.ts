import type { Keyring } from './keyring.js';

// Sensitive columns (CI, DI, names, phones, birth dates) are stored as `v1.<key id>.<base64>`.
// The row's identity is bound in as associated data so a sealed value cannot be moved to another row.

const PREFIX = 'v1';

export interface FieldCipher {
  seal(value: string, context: string): string;
  open(stored: string, context: string): string;
}

export function createFieldCipher(keyring: Keyring): FieldCipher {
  return {
    seal(value, context) {
      const { keyId, sealed } = keyring.seal('db-field', Buffer.from(value, 'utf8'), Buffer.from(context, 'utf8'));
      return `${PREFIX}.${keyId}.${sealed.toString('base64')}`;
    },
    open(stored, context) {
      const [prefix, keyId, body] = stored.split('.');
      if (prefix !== PREFIX || !keyId || body === undefined) throw new Error('not a sealed field value');
      return keyring.open('db-field', keyId, Buffer.from(body, 'base64'), Buffer.from(context, 'utf8')).toString('utf8');
    },
  };
}

import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

// One AES-256-GCM keyring for everything paygate encrypts (Temporal payloads, sensitive columns).
// Every sealed value names the key id that sealed it, so keys rotate: add a new current key, keep the
// old ones for opening until nothing sealed with them is left.

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** 'phone-index': the keyed hash a phone is counted by (verification send caps), never the phone itself. */
export type KeyPurpose =
  | 'temporal-payload'
  | 'db-field'
  | 'request-fingerprint'
  | 'idempotency-key'
  | 'dashboard-session'
  | 'phone-index';

export interface Keyring {
  readonly currentKeyId: string;
  /** Seals with the current key; returns the key id used and iv | ciphertext | tag. */
  seal(purpose: KeyPurpose, plaintext: Uint8Array, aad?: Uint8Array): { keyId: string; sealed: Buffer };
  open(purpose: KeyPurpose, keyId: string, sealed: Uint8Array, aad?: Uint8Array): Buffer;
  /** HMAC-SHA256 under the purpose's subkey of `keyId` (default: the current key). */
  mac(purpose: KeyPurpose, data: string, keyId?: string): { keyId: string; digest: string };
}

export class UnknownKeyError extends Error {
  override readonly name = 'UnknownKeyError';
  constructor(keyId: string) {
    super(`no key with id '${keyId}' in the keyring`);
  }
}

/**
 * Parses `kid:base64key[,kid:base64key...]`; the first key is the current one. Each key is 32 bytes.
 * Throws with a message that never contains key material.
 */
export function parseKeyringSpec(spec: string): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  for (const part of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const colon = part.indexOf(':');
    if (colon <= 0) throw new Error('each key must be written as <key id>:<base64 of 32 bytes>');
    const id = part.slice(0, colon);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) throw new Error(`key id '${id.slice(0, 64)}' must match [A-Za-z0-9._-]{1,64}`);
    const key = Buffer.from(part.slice(colon + 1), 'base64');
    if (key.length !== 32) throw new Error(`key '${id}' must be 32 bytes of base64 (got ${key.length})`);
    if (keys.has(id)) throw new Error(`key id '${id}' appears twice`);
    keys.set(id, key);
  }
  if (keys.size === 0) throw new Error('at least one key is required');
  return keys;
}

export function generateKeyringSpec(keyId = `k${Date.now().toString(36)}`): string {
  return `${keyId}:${randomBytes(32).toString('base64')}`;
}

export function createKeyring(masterKeys: Map<string, Buffer>): Keyring {
  const first = masterKeys.keys().next();
  if (first.done) throw new Error('at least one key is required');
  const currentKeyId = first.value;
  // Purpose-separated subkeys: a payload key can never open a column value and vice versa.
  const derived = new Map<string, Buffer>();
  const subkey = (purpose: KeyPurpose, keyId: string): Buffer => {
    const cacheKey = `${purpose}\u0000${keyId}`;
    let key = derived.get(cacheKey);
    if (!key) {
      const master = masterKeys.get(keyId);
      if (!master) throw new UnknownKeyError(keyId);
      key = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `paygate:${purpose}`, 32));
      derived.set(cacheKey, key);
    }
    return key;
  };

  return {
    currentKeyId,
    seal(purpose, plaintext, aad) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', subkey(purpose, currentKeyId), iv);
      if (aad) cipher.setAAD(aad);
      const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      return { keyId: currentKeyId, sealed: Buffer.concat([iv, body, cipher.getAuthTag()]) };
    },
    open(purpose, keyId, sealed, aad) {
      if (sealed.length < IV_BYTES + TAG_BYTES) throw new Error('sealed value is too short');
      const buf = Buffer.from(sealed);
      const decipher = createDecipheriv('aes-256-gcm', subkey(purpose, keyId), buf.subarray(0, IV_BYTES));
      if (aad) decipher.setAAD(aad);
      decipher.setAuthTag(buf.subarray(buf.length - TAG_BYTES));
      return Buffer.concat([decipher.update(buf.subarray(IV_BYTES, buf.length - TAG_BYTES)), decipher.final()]);
    },
    mac(purpose, data, keyId = currentKeyId) {
      return { keyId, digest: createHmac('sha256', subkey(purpose, keyId)).update(data, 'utf8').digest('hex') };
    },
  };
}

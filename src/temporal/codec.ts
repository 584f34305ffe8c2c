import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Keyring } from '../security/keyring.js';

// Every payload paygate hands to Temporal (workflow inputs, update arguments, activity results) is
// sealed here: the engine's history — embedded or a real cluster — never holds names, phones, OTPs,
// CI or DI in plain text. Used by both the client (API) and the worker.

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const ENCODING_KEY = 'encoding';
const KEY_ID_KEY = 'encryption-key-id';

// @temporalio/proto is CommonJS: its namespaces come through the default export under Node's ESM loader.
const { temporal } = proto;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly keyring: Keyring) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const { keyId, sealed } = this.keyring.seal('temporal-payload', plain);
      return {
        metadata: { [ENCODING_KEY]: utf8.encode(ENCRYPTED_ENCODING), [KEY_ID_KEY]: utf8.encode(keyId) },
        data: new Uint8Array(sealed),
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.[ENCODING_KEY];
      if (!encoding || fromUtf8.decode(encoding) !== ENCRYPTED_ENCODING) return payload;
      const keyIdBytes = payload.metadata?.[KEY_ID_KEY];
      if (!keyIdBytes || !payload.data) throw new Error('encrypted payload without key id or data');
      const plain = this.keyring.open('temporal-payload', fromUtf8.decode(keyIdBytes), payload.data);
      return temporal.api.common.v1.Payload.decode(plain) as Payload;
    });
  }
}

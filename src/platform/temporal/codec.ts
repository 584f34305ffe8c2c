import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Keyring } from '../security/keyring.js';

// Every payload paygate hands to Temporal (workflow inputs, update arguments, activity results) is
// sealed here: the engine's history — embedded or a real cluster — never holds names, phones, OTPs,
// CI or DI in plain text. Used by both the client (API) and the worker. Decoding is also the trust
// check: whoever reaches the Temporal frontend without the keyring cannot feed the workflows data.

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
    return payloads.map((payload) => this.open(payload));
  }

  /**
   * Only a payload sealed under a key of the keyring (current or retired) comes back usable: the GCM
   * tag proves a key holder wrote it. Anything else (plain, tampered, unknown key) becomes a refused
   * payload that no payload converter can read, instead of a thrown error: the SDK then rejects just
   * the carrying update (before it is accepted, nothing written) or fails the workflow task that
   * delivers a forged activity result, while a codec error would fail every activation of the run and
   * keep a forged update re-delivered forever. On the client side the conversion throws likewise.
   */
  private open(payload: Payload): Payload {
    const encoding = payload.metadata?.[ENCODING_KEY];
    if (!encoding || fromUtf8.decode(encoding) !== ENCRYPTED_ENCODING) return refused(REFUSED_UNSEALED);
    const keyIdBytes = payload.metadata?.[KEY_ID_KEY];
    if (!keyIdBytes || !payload.data) return refused(REFUSED_UNOPENABLE);
    let plain: Uint8Array;
    try {
      plain = this.keyring.open('temporal-payload', fromUtf8.decode(keyIdBytes), payload.data);
    } catch {
      return refused(REFUSED_UNOPENABLE);
    }
    return temporal.api.common.v1.Payload.decode(plain) as Payload;
  }
}

/** Encodings of refused payloads: no converter knows them, so reading one fails with this name in the error. */
export const REFUSED_UNSEALED = 'refused/not-sealed-by-paygate';
export const REFUSED_UNOPENABLE = 'refused/tampered-or-unknown-key';

function refused(reason: string): Payload {
  return { metadata: { [ENCODING_KEY]: utf8.encode(reason) }, data: new Uint8Array(0) };
}

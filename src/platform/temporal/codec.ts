import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Keyring } from '../security/keyring.js';
import { type PayloadRefusal, refusedPayloadValue } from './messages.js';

// Every payload paygate hands to Temporal (workflow inputs, update and signal arguments, activity inputs and
// results) is sealed here: the engine's history — embedded or a real cluster — never holds names, phones, OTPs,
// CI or DI in plain text. Used by both the client (API) and the worker. Decoding is also the trust check:
// whoever reaches the Temporal frontend without the keyring cannot feed the workflows data, and a payload copied
// from one workflow's history does not open in another — the seal's associated data names the namespace, the
// workflow id (unique across projects, so it names the project too) and whether the payload belongs to the
// workflow or to one of its activities, as the SDK's serialization context gives them on both sides.

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const ENCODING_KEY = 'encoding';
const KEY_ID_KEY = 'encryption-key-id';
/** Present on payloads sealed for their workflow; a payload without it was sealed before binding existed. */
const BINDING_KEY = 'encryption-binding';
const BINDING_VERSION = 'v2';

// @temporalio/proto is CommonJS: its namespaces come through the default export under Node's ESM loader.
const { temporal } = proto;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/**
 * What a refused payload becomes. `worker`: a plain stand-in value (messages.ts) the workflows' interceptors
 * recognise and drop with a record — never an error, which would fail the workflow task and wedge the run. `client`:
 * a payload of an encoding no converter reads, so the call that carried it fails.
 */
export type RefusalStyle = 'worker' | 'client';

/** The associated data of a payload sealed for `context`: who it was made for. */
export function payloadBinding(context: SerializationContext | undefined): string {
  if (!context) return `paygate/${BINDING_VERSION}\nnone`;
  const workflowId = context.type === 'workflow' ? context.workflowId : (context.workflowId ?? '');
  return `paygate/${BINDING_VERSION}\n${context.type}\n${context.namespace}\n${workflowId}`;
}

export class EncryptionCodec implements PayloadCodec {
  constructor(
    private readonly keyring: Keyring,
    private readonly refusalStyle: RefusalStyle = 'client',
  ) {}

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    const aad = utf8.encode(payloadBinding(context));
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const { keyId, sealed } = this.keyring.seal('temporal-payload', plain, aad);
      return {
        metadata: {
          [ENCODING_KEY]: utf8.encode(ENCRYPTED_ENCODING),
          [KEY_ID_KEY]: utf8.encode(keyId),
          [BINDING_KEY]: utf8.encode(BINDING_VERSION),
        },
        data: new Uint8Array(sealed),
      };
    });
  }

  async decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    return payloads.map((payload) => this.open(payload, context));
  }

  /**
   * Only a payload sealed under a key of the keyring (current or retired) for this very workflow comes back
   * usable: the GCM tag proves a key holder wrote it, for the binding it was opened with. Anything else (plain,
   * tampered, unknown key, made for another workflow) is refused, never thrown: a codec error would fail every
   * activation of the run and keep a forged message re-delivered forever. Payloads sealed before binding existed
   * (no binding mark) still open, so runs started by an earlier version finish.
   */
  private open(payload: Payload, context: SerializationContext | undefined): Payload {
    const encoding = payload.metadata?.[ENCODING_KEY];
    if (!encoding || fromUtf8.decode(encoding) !== ENCRYPTED_ENCODING) return this.refused('not-sealed');
    const keyIdBytes = payload.metadata?.[KEY_ID_KEY];
    if (!keyIdBytes || !payload.data) return this.refused('unopenable');
    const bindingBytes = payload.metadata?.[BINDING_KEY];
    const bound = bindingBytes !== undefined && bindingBytes !== null;
    if (bound && fromUtf8.decode(bindingBytes) !== BINDING_VERSION) return this.refused('unopenable');
    let plain: Uint8Array;
    try {
      plain = this.keyring.open(
        'temporal-payload',
        fromUtf8.decode(keyIdBytes),
        payload.data,
        bound ? utf8.encode(payloadBinding(context)) : undefined,
      );
    } catch {
      return this.refused('unopenable');
    }
    return temporal.api.common.v1.Payload.decode(plain) as Payload;
  }

  private refused(reason: PayloadRefusal): Payload {
    if (this.refusalStyle === 'worker') {
      return {
        metadata: { [ENCODING_KEY]: utf8.encode('json/plain') },
        data: utf8.encode(JSON.stringify(refusedPayloadValue(reason))),
      };
    }
    return refused(reason === 'not-sealed' ? REFUSED_UNSEALED : REFUSED_UNOPENABLE);
  }
}

/** Encodings of refused payloads on a client: no converter knows them, so reading one fails with this name in the error. */
export const REFUSED_UNSEALED = 'refused/not-sealed-by-paygate';
export const REFUSED_UNOPENABLE = 'refused/tampered-or-unknown-key';

function refused(reason: string): Payload {
  return { metadata: { [ENCODING_KEY]: utf8.encode(reason) }, data: new Uint8Array(0) };
}

import type { DataConverter } from '@temporalio/common';
import type { Keyring } from '../security/keyring.js';
import { EncryptionCodec, type RefusalStyle } from './codec.js';

/**
 * The one data converter of every paygate client and worker: payloads sealed with the keyring for the workflow
 * they belong to. `refusals`: how a payload that does not open comes back (EncryptionCodec), `client` unless set.
 */
export function paygateDataConverter(keyring: Keyring, refusals: RefusalStyle = 'client'): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(keyring, refusals)] };
}

import type { DataConverter } from '@temporalio/common';
import type { Keyring } from '../security/keyring.js';
import { EncryptionCodec } from './codec.js';

/** The one data converter of every paygate client and worker: payloads sealed with the keyring. */
export function paygateDataConverter(keyring: Keyring): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(keyring)] };
}

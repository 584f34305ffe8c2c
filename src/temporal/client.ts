import { Client, Connection } from '@temporalio/client';
import type { Keyring } from '../security/keyring.js';
import { paygateDataConverter } from './data-converter.js';

export interface TemporalClientOptions {
  readonly address: string;
  readonly namespace: string;
  readonly keyring: Keyring;
}

export interface TemporalClient {
  readonly client: Client;
  close(): Promise<void>;
}

export async function connectTemporalClient(opts: TemporalClientOptions): Promise<TemporalClient> {
  const connection = await Connection.connect({ address: opts.address, connectTimeout: '10 seconds' });
  const client = new Client({ connection, namespace: opts.namespace, dataConverter: paygateDataConverter(opts.keyring) });
  return { client, close: () => connection.close() };
}

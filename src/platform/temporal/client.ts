import { Client, type ClientOptions, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import type { Keyring } from '../security/keyring.js';
import { paygateDataConverter } from './data-converter.js';
import { messageEnvelopes } from './message-envelopes.js';
import { type TemporalTransport, temporalTransportOptions } from './transport.js';

export interface TemporalClientOptions {
  readonly address: string;
  readonly namespace: string;
  readonly keyring: Keyring;
  /** TLS / mTLS / API key for a production cluster; unset: plain gRPC (the embedded engine on loopback) */
  readonly transport?: TemporalTransport;
  /** seen by every workflow call of this client (metrics, log ids) */
  readonly interceptors?: readonly WorkflowClientInterceptor[];
}

export interface TemporalClient {
  readonly client: Client;
  close(): Promise<void>;
}

/**
 * What makes a Temporal client paygate's: its data converter (payloads sealed for their workflow) and the
 * interceptor that puts each signal's and update's arguments in their envelope, before `interceptors`.
 */
export function paygateClientOptions(
  keyring: Keyring,
  interceptors: readonly WorkflowClientInterceptor[] = [],
): Pick<ClientOptions, 'dataConverter' | 'interceptors'> {
  return { dataConverter: paygateDataConverter(keyring), interceptors: { workflow: [messageEnvelopes, ...interceptors] } };
}

export async function connectTemporalClient(opts: TemporalClientOptions): Promise<TemporalClient> {
  const connection = await Connection.connect({
    address: opts.address,
    connectTimeout: '10 seconds',
    ...temporalTransportOptions(opts.transport),
  });
  const client = new Client({
    connection,
    namespace: opts.namespace,
    ...paygateClientOptions(opts.keyring, opts.interceptors),
  });
  return { client, close: () => connection.close() };
}

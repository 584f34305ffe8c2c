import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';

// How paygate reaches a production Temporal frontend: TLS or mTLS (files named by TEMPORAL_TLS_*) and
// a Temporal Cloud API key. The same options for the client (API) and the worker's native connection.

export interface TemporalTransport {
  readonly tls?: {
    readonly certPath?: string;
    readonly keyPath?: string;
    readonly caPath?: string;
    readonly serverName?: string;
  };
  /** Temporal Cloud API key: always sent over TLS */
  readonly apiKey?: string;
}

export interface TemporalTransportOptions {
  tls?: TLSConfig | true;
  apiKey?: string;
}

/** Connection options for `transport`; reads the certificate files (a missing file fails the start, naming it). */
export function temporalTransportOptions(transport: TemporalTransport | undefined): TemporalTransportOptions {
  if (!transport?.tls && !transport?.apiKey) return {};
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  };
  const t = transport.tls;
  const tls: TLSConfig = {
    ...(t?.serverName ? { serverNameOverride: t.serverName } : {}),
    ...(t?.caPath ? { serverRootCACertificate: read(t.caPath, 'TEMPORAL_TLS_CA') } : {}),
    ...(t?.certPath && t.keyPath
      ? { clientCertPair: { crt: read(t.certPath, 'TEMPORAL_TLS_CERT'), key: read(t.keyPath, 'TEMPORAL_TLS_KEY') } }
      : {}),
  };
  return { tls: Object.keys(tls).length > 0 ? tls : true, ...(transport.apiKey ? { apiKey: transport.apiKey } : {}) };
}

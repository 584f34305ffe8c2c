import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';

// How paygate reaches Temporal, decided here for every connection (the API's client, the worker's native
// connection, the sandbox clock's): a production frontend with TLS or mTLS (files named by TEMPORAL_TLS_*) and a
// Temporal Cloud API key, or the embedded engine on loopback with its per-installation token.

export interface TemporalTransport {
  readonly tls?: {
    readonly certPath?: string;
    readonly keyPath?: string;
    readonly caPath?: string;
    readonly serverName?: string;
  };
  /** Temporal Cloud API key: always sent over TLS */
  readonly apiKey?: string;
  /**
   * The embedded engine's token (src/platform/config/engine-token.ts): every call carries `authorization: Bearer
   * <token>`, the header an API key travels in, but as plain connection metadata — the SDKs' `apiKey` option turns
   * TLS on, and the engine speaks plain gRPC on loopback. Never with `tls` or `apiKey` (a remote cluster).
   */
  readonly engineToken?: string;
}

export interface TemporalTransportOptions {
  tls?: TLSConfig | true;
  apiKey?: string;
  /** gRPC metadata sent with every call (the client's Connection and the worker's NativeConnection alike) */
  metadata?: Record<string, string>;
}

/** Connection options for `transport`; reads the certificate files (a missing file fails the start, naming it). */
export function temporalTransportOptions(transport: TemporalTransport | undefined): TemporalTransportOptions {
  if (transport?.engineToken !== undefined) {
    // a bearer token in plain text belongs on loopback only: never beside the settings of a remote cluster
    if (transport.tls || transport.apiKey) throw new Error('the embedded engine token is not sent to a TLS frontend');
    return { metadata: { authorization: `Bearer ${transport.engineToken}` } };
  }
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

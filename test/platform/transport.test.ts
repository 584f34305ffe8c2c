// Temporal connection options for production: TLS / mTLS from TEMPORAL_TLS_* files, an API key that
// implies TLS; and the embedded engine's token, sent as plain metadata. The options are checked as built, and
// through a real connection: a client asked for TLS does not talk plaintext to the (plaintext, loopback) embedded
// engine, and the engine's token is what gets a plaintext client in.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyring, generateKeyringSpec, parseKeyringSpec } from '../../src/platform/security/keyring.js';
import { connectTemporalClient } from '../../src/platform/temporal/client.js';
import { startEmbeddedEngine, type EmbeddedEngine } from '../../src/platform/temporal/embedded-engine.js';
import { temporalTransportOptions } from '../../src/platform/temporal/transport.js';

let dir: string;
let engine: EmbeddedEngine;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'paygate-tls-'));
  await writeFile(path.join(dir, 'ca.pem'), 'CA-BYTES');
  await writeFile(path.join(dir, 'client.pem'), 'CERT-BYTES');
  await writeFile(path.join(dir, 'client.key'), 'KEY-BYTES');
  engine = await startEmbeddedEngine({
    dataDir: path.join(dir, 'engine'),
    namespace: 'default',
    token: randomBytes(24).toString('base64url'),
  });
});
afterAll(async () => {
  await engine?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('temporalTransportOptions', () => {
  it('plain gRPC when nothing is configured (the embedded engine on loopback)', () => {
    expect(temporalTransportOptions(undefined)).toEqual({});
    expect(temporalTransportOptions({})).toEqual({});
  });

  it('mTLS: client certificate pair, CA and server name read from the files', () => {
    const options = temporalTransportOptions({
      tls: {
        certPath: path.join(dir, 'client.pem'),
        keyPath: path.join(dir, 'client.key'),
        caPath: path.join(dir, 'ca.pem'),
        serverName: 'temporal.internal',
      },
    });
    const tls = options.tls as Exclude<typeof options.tls, true | undefined>;
    expect(tls.serverNameOverride).toBe('temporal.internal');
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toBe('CA-BYTES');
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe('CERT-BYTES');
    expect(Buffer.from(tls.clientCertPair!.key).toString()).toBe('KEY-BYTES');
    expect(options.apiKey).toBeUndefined();
  });

  it('an API key alone turns TLS on (Temporal Cloud)', () => {
    expect(temporalTransportOptions({ apiKey: 'cloud-key' })).toEqual({ tls: true, apiKey: 'cloud-key' });
  });

  it("the embedded engine's token: an authorization header over plain gRPC, never beside a remote cluster's TLS", () => {
    expect(temporalTransportOptions({ engineToken: 'engine-token-0123456789' })).toEqual({
      metadata: { authorization: 'Bearer engine-token-0123456789' },
    });
    expect(() => temporalTransportOptions({ engineToken: 'engine-token-0123456789', apiKey: 'cloud-key' })).toThrow(
      /not sent to a TLS frontend/,
    );
    expect(() => temporalTransportOptions({ engineToken: 'engine-token-0123456789', tls: {} })).toThrow(
      /not sent to a TLS frontend/,
    );
  });

  it('a missing file stops the start naming its variable', () => {
    expect(() => temporalTransportOptions({ tls: { caPath: path.join(dir, 'missing.pem') } })).toThrow(
      /TEMPORAL_TLS_CA .*missing\.pem: ENOENT/,
    );
  });
});

describe('connectTemporalClient', () => {
  const keyring = createKeyring(parseKeyringSpec(generateKeyringSpec('tls')));

  it("talks plaintext to the embedded engine with the engine's transport (its token)", async () => {
    const plain = await connectTemporalClient({
      address: engine.address,
      namespace: 'default',
      keyring,
      transport: engine.transport,
    });
    try {
      await plain.client.connection.workflowService.getSystemInfo({});
    } finally {
      await plain.close();
    }
  });

  it('with an API key (so TLS) it does not fall back to plaintext: the plaintext engine is not reached', async () => {
    await expect(
      (async () => {
        const tls = await connectTemporalClient({
          // by name: TLS to an IP address would send it as the server name, which Node warns about (RFC 6066)
          address: engine.address.replace('127.0.0.1', 'localhost'),
          namespace: 'default',
          keyring,
          transport: { apiKey: 'cloud-key' },
        });
        try {
          await tls.client.connection.workflowService.getSystemInfo({});
        } finally {
          await tls.close();
        }
      })(),
    ).rejects.toThrow();
  });
});

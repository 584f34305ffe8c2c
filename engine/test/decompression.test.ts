// Compressed requests: the Temporal Core SDK gzips every request, and the engine inflates them synchronously
// (see src/grpc-decompression.ts). These tests pin the behaviour of that fast path on the wire.
import http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import { NativeConnection } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncDecompressionInstalled } from '../src/grpc-decompression.js';
import { startDevServer, type DevServer } from '../src/index.js';
import { MAX_REQUEST_BYTES } from '../src/server.js';

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Buffer.from(out);
}

const { GetSystemInfoRequest, GetSystemInfoResponse } = proto.temporal.api.workflowservice.v1;
const PATH = '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo';

interface RawReply {
  status: string | undefined;
  message: string | undefined;
  body: Buffer;
}

/** One unary call over plain HTTP/2 with a hand-built gRPC frame (flag byte + length + payload). */
function rawCall(address: string, payload: Buffer, compressed: boolean): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.on('error', reject);
    const stream = session.request({
      ':method': 'POST',
      ':path': PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(compressed ? { 'grpc-encoding': 'gzip' } : {}),
    });
    const chunks: Buffer[] = [];
    let headers: http2.IncomingHttpHeaders = {};
    stream.on('response', (h) => (headers = h));
    stream.on('trailers', (t) => (headers = { ...headers, ...t }));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', reject);
    stream.on('close', () => {
      session.close();
      resolve({
        status: headers['grpc-status'] as string | undefined,
        message: headers['grpc-message'] as string | undefined,
        body: Buffer.concat(chunks),
      });
    });
    const frame = Buffer.alloc(5 + payload.length);
    frame.writeUInt8(compressed ? 1 : 0, 0);
    frame.writeUInt32BE(payload.length, 1);
    payload.copy(frame, 5);
    stream.end(frame);
  });
}

describe('compressed requests', () => {
  let server: DevServer;

  beforeAll(async () => {
    server = await startDevServer({ timeSkipping: false, port: 0 });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('installs the synchronous inflate on this grpc-js (an upgrade that drops it must be noticed)', () => {
    expect(syncDecompressionInstalled()).toBe(true);
  });

  it('serves gzipped requests from the Core SDK', async () => {
    const connection = await NativeConnection.connect({ address: server.address });
    try {
      const info = await connection.workflowService.getSystemInfo({});
      expect(info.capabilities?.signalAndQueryHeader).toBe(true);
    } finally {
      await connection.close();
    }
  });

  it('answers a hand-gzipped frame like an uncompressed one', async () => {
    const request = Buffer.from(GetSystemInfoRequest.encode({}).finish());
    const plain = await rawCall(server.address, request, false);
    const gzipped = await rawCall(server.address, gzipSync(request), true);
    expect(plain.status).toBe('0');
    expect(gzipped.status).toBe('0');
    expect(gzipped.body.equals(plain.body)).toBe(true);
    const decoded = GetSystemInfoResponse.decode(gzipped.body.subarray(5));
    expect(decoded.capabilities?.sdkMetadata).toBe(true);
  });

  it('answers INTERNAL for a frame that is not valid gzip', async () => {
    const reply = await rawCall(server.address, Buffer.from('definitely not gzip'), true);
    expect(reply.status).toBe(String(13));
    expect(decodeURIComponent(reply.message ?? '')).toBe('Failed to decompress message');
  });

  it('answers RESOURCE_EXHAUSTED for a frame that inflates past the 4 MiB request limit', async () => {
    const bomb = gzipSync(Buffer.alloc(MAX_REQUEST_BYTES + 1));
    const reply = await rawCall(server.address, bomb, true);
    expect(reply.status).toBe(String(8));
    expect(decodeURIComponent(reply.message ?? '')).toMatch(/decompresses to a size larger than 4194304/);
  });

  it('answers RESOURCE_EXHAUSTED for an uncompressed request over 4 MiB, as Temporal (gRPC default) does', async () => {
    // An unknown field (number 1000, bytes) keeps the message a valid GetSystemInfoRequest whatever its size.
    const field = (size: number) => Buffer.concat([Buffer.from([0xc2, 0x3e]), varint(size), Buffer.alloc(size)]);
    const over = await rawCall(server.address, field(MAX_REQUEST_BYTES), false);
    expect(over.status).toBe(String(8));
    const under = await rawCall(server.address, field(MAX_REQUEST_BYTES - 16), false);
    expect(under.status).toBe(String(0));
  });
});

/**
 * A minimal unary gRPC client over node:http2 for the protocol driver: one HTTP/2 session, one stream per
 * call, uncompressed frames, protobufjs's generated WorkflowService on top. A load generator that shares
 * the machine with the server under test should spend as little CPU as it can; @temporalio/client's
 * grpc-js Connection spends ~400 µs per call here and the Core SDK's NativeConnection ~115 µs (it also
 * gzips every request, which the server must then inflate).
 *
 * Only what a benchmark needs: no retries, no TLS, no metadata; deadlines are the caller's business.
 * `withAbortSignal` cancels the calls started by `fn` (RST_STREAM CANCEL), as the SDK connections do.
 */
import http2 from 'node:http2';
import proto from '@temporalio/proto';
import type { WorkflowService } from '@temporalio/client';
import type { DriverConnection } from './protocol-driver.js';

const SERVICE = 'temporal.api.workflowservice.v1.WorkflowService';

interface RpcMethod {
  name: string;
}

export class GrpcError extends Error {
  constructor(
    readonly code: number,
    details: string,
  ) {
    super(details);
    this.name = 'GrpcError';
  }
}

export class H2Connection implements DriverConnection {
  readonly workflowService: WorkflowService;
  private readonly session: http2.ClientHttp2Session;
  /** The signal of the `withAbortSignal` whose `fn` is running (calls start synchronously inside it). */
  private signal: AbortSignal | undefined;

  private constructor(session: http2.ClientHttp2Session) {
    this.session = session;
    this.workflowService = proto.temporal.api.workflowservice.v1.WorkflowService.create(
      (method, request, callback) => this.call((method as RpcMethod).name, request, callback),
      false,
      false,
    ) as unknown as WorkflowService;
  }

  static connect(address: string): Promise<H2Connection> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(`http://${address}`);
      session.once('connect', () => {
        session.off('error', reject);
        session.on('error', () => undefined); // surfaced per call as stream errors
        resolve(new H2Connection(session));
      });
      session.once('error', reject);
    });
  }

  /**
   * Calls started synchronously by `fn` are cancelled when `signal` aborts. protobufjs starts the request
   * inside the service method's call, so a plain variable does what AsyncLocalStorage would, without
   * turning on promise hooks for the whole process.
   */
  withAbortSignal<R>(signal: AbortSignal, fn: () => Promise<R>): Promise<R> {
    const outer = this.signal;
    this.signal = signal;
    try {
      return fn();
    } finally {
      this.signal = outer;
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.session.close(() => resolve()));
  }

  private call(method: string, request: Uint8Array, callback: (err: Error | null, response?: Uint8Array) => void): void {
    const signal = this.signal;
    if (signal?.aborted) {
      callback(new GrpcError(1, 'cancelled'));
      return;
    }
    const stream = this.session.request({
      ':method': 'POST',
      ':path': `/${SERVICE}/${method}`,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let message: string | undefined;
    let settled = false;
    const settle = (err: Error | null, response?: Uint8Array) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      callback(err, response);
    };
    const onAbort = () => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      settle(new GrpcError(1, 'cancelled'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const readStatus = (headers: http2.IncomingHttpHeaders) => {
      if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status']);
      if (headers['grpc-message'] !== undefined) message = decodeURIComponent(String(headers['grpc-message']));
    };
    stream.on('response', readStatus);
    stream.on('trailers', readStatus);
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', (err) => settle(err));
    stream.on('close', () => {
      if (status !== '0') {
        settle(new GrpcError(Number(status ?? 2), message ?? `stream closed (${stream.rstCode})`));
        return;
      }
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (body.length < 5 || body.readUInt8(0) !== 0) {
        settle(new GrpcError(13, 'unexpected response framing'));
        return;
      }
      settle(null, body.subarray(5, 5 + body.readUInt32BE(1)));
    });
    const frame = Buffer.allocUnsafe(5 + request.length);
    frame.writeUInt8(0, 0);
    frame.writeUInt32BE(request.length, 1);
    frame.set(request, 5);
    stream.end(frame);
  }
}

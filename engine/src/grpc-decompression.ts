// Synchronous request decompression for @grpc/grpc-js's server.
//
// The Temporal Core SDK (every worker and NativeConnection) gzips every request. grpc-js inflates each one
// through a fresh zlib stream on the libuv thread pool: ~75 µs of CPU per message, the largest single cost of
// the engine under load (a quarter of its main thread in the benchmark profile). Temporal's messages are small,
// so inflating them synchronously (~15 µs) is cheaper than the hop to the pool, with the same size limit and
// the same status codes. The hook is applied to grpc-js's own call class only if it has the expected shape; with
// any other grpc-js version the stock path is kept and `syncDecompressionInstalled()` reports false (a test
// asserts it, so an upgrade that drops the fast path is noticed rather than silently slow).
import { createRequire } from 'node:module';
import { gunzipSync, inflateSync, type ZlibOptions } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';

type Decompress = (this: { maxReceiveMessageSize: number }, message: Buffer, encoding: string) => unknown;

let installed = false;

export function syncDecompressionInstalled(): boolean {
  return installed;
}

export function installSyncDecompression(): void {
  if (installed) return;
  let target: { decompressMessage?: Decompress } | undefined;
  try {
    const require = createRequire(import.meta.url);
    const mod = require('@grpc/grpc-js/build/src/server-interceptors.js') as {
      BaseServerInterceptingCall?: { prototype: { decompressMessage?: Decompress } };
    };
    target = mod.BaseServerInterceptingCall?.prototype;
  } catch {
    return;
  }
  const stock = target?.decompressMessage;
  if (!target || typeof stock !== 'function' || stock.length !== 2) return;
  target.decompressMessage = function decompressMessage(message, encoding) {
    if (encoding !== 'gzip' && encoding !== 'deflate') return stock.call(this, message, encoding);
    const limit = this.maxReceiveMessageSize;
    const options: ZlibOptions = limit >= 0 ? { maxOutputLength: Math.max(limit, 1) } : {};
    try {
      const contents = message.subarray(5);
      return encoding === 'gzip' ? gunzipSync(contents, options) : inflateSync(contents, options);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        return Promise.reject({
          code: grpc.status.RESOURCE_EXHAUSTED,
          details: `Received message that decompresses to a size larger than ${limit}`,
        });
      }
      return Promise.reject({ code: grpc.status.INTERNAL, details: 'Failed to decompress message' });
    }
  };
  installed = true;
}

// The one outbound HTTP client of paygate's PG calls: the sandbox gateways' adapters (http-client.ts) and the upstream
// connector (src/upstream/client.ts) both send through it. One dedicated undici Agent per client (never the global
// dispatcher), no redirects (undici follows none without an interceptor: a PG cannot bounce a call elsewhere), JSON
// bodies, an optional deadline over the whole call (connect, headers and every byte of the body), and a bounded body.
// What an answer means is the caller's: this module only says what came back, or why nothing usable did.
import type { LookupFunction } from 'node:net';
import { Agent, request, errors as undiciErrors } from 'undici';

/** Cap on a PG's or provider's answer: a runaway or hostile body must not exhaust memory. */
export const MAX_BODY_BYTES = 256 * 1024;

export interface OutboundRequest {
  readonly url: URL;
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** besides accept / content-type / idempotency-key, which the client sets */
  readonly headers?: Readonly<Record<string, string>>;
  /** sent as JSON */
  readonly body?: unknown;
  readonly idempotencyKey?: string;
  /** the whole call's deadline; absent: only the Agent's connect and idle bounds */
  readonly deadlineMs?: number;
}

export interface OutboundAnswer {
  readonly statusCode: number;
  /** the body as text, at most MAX_BODY_BYTES */
  readonly text: string;
}

/** No usable answer: the deadline passed (the PG may have acted: an unknown outcome) or the transport failed. */
export class OutboundFailure extends Error {
  override readonly name = 'OutboundFailure';
  constructor(
    readonly kind: 'deadline' | 'transport',
    /** what happened, without an address: 'connect timeout', 'network error (ECONNRESET)', 'no answer within 15000 ms' */
    readonly description: string,
    options: { cause: unknown },
  ) {
    super(description, options);
  }
}

export interface OutboundHttp {
  send(req: OutboundRequest): Promise<OutboundAnswer>;
  close(): Promise<void>;
}

export function createOutboundHttp(opts: {
  /** connect timeout, and the longest silence while waiting for headers or between body chunks */
  readonly timeoutMs: number;
  readonly connections: number;
  /** the DNS lookup of every connection (the upstream connector's production-mode address guard) */
  readonly lookup?: LookupFunction;
}): OutboundHttp {
  const agent = new Agent({
    connect: { timeout: opts.timeoutMs, ...(opts.lookup ? { lookup: opts.lookup as never } : {}) },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connections: opts.connections,
    keepAliveTimeout: 4_000,
  });
  return {
    async send(req) {
      const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
      if (req.body !== undefined) headers['content-type'] = 'application/json';
      if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey;
      const deadline = req.deadlineMs !== undefined ? new AbortController() : undefined;
      const timer = deadline ? setTimeout(() => deadline.abort(), req.deadlineMs) : undefined;
      try {
        const res = await request(req.url, {
          method: req.method,
          headers,
          body: req.body === undefined ? null : JSON.stringify(req.body),
          dispatcher: agent,
          ...(deadline ? { signal: deadline.signal } : {}),
        });
        return { statusCode: res.statusCode, text: await readBounded(res.body) };
      } catch (err) {
        if (deadline?.signal.aborted)
          throw new OutboundFailure('deadline', `no complete answer within ${req.deadlineMs} ms`, { cause: err });
        throw new OutboundFailure('transport', describeTransportError(err), { cause: err });
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => agent.close(),
  };
}

async function readBounded(body: AsyncIterable<Buffer | Uint8Array> & { destroy?: (err?: Error) => void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      body.destroy?.();
      throw new Error(`response body exceeds ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describeTransportError(err: unknown): string {
  if (err instanceof undiciErrors.ConnectTimeoutError) return 'connect timeout';
  if (err instanceof undiciErrors.HeadersTimeoutError) return 'response timeout';
  if (err instanceof undiciErrors.BodyTimeoutError) return 'response body timeout';
  if (err instanceof undiciErrors.UndiciError) return `transport error (${err.code})`;
  if (err instanceof Error && 'code' in err && typeof err.code === 'string') return `network error (${err.code})`;
  return 'network error';
}

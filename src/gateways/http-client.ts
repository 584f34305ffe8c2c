// The outbound HTTP transport shared by the gateway adapters: one dedicated undici Agent per
// registry (never the global dispatcher), bounded connect / headers / body timeouts, and one
// mapping of transport outcomes onto the adapter contract's two error kinds.
import { Agent, request, errors as undiciErrors } from 'undici';
import { z } from 'zod';
import { GatewayDeclinedError, GatewayUnavailableError } from './types.js';

export interface GatewayHttpClient {
  /**
   * Sends one request and returns the validated `data` of a successful result.
   * A well-formed refusal becomes GatewayDeclinedError; anything else that is not a success
   * (network error, timeout, 5xx, unparsable or unexpected body) becomes GatewayUnavailableError.
   */
  call<T extends z.ZodType>(req: {
    readonly method: 'GET' | 'POST';
    readonly path: string;
    readonly body?: unknown;
    readonly idempotencyKey?: string;
    readonly data: T;
  }): Promise<z.infer<T>>;
  close(): Promise<void>;
}

/** The result envelope every sandbox-style gateway answers with. */
const resultEnvelope = z.object({
  res_cd: z.string().min(1),
  res_msg: z.string(),
  data: z.unknown().optional(),
});

const SUCCESS_CODE = '0000';
/** Cap on a gateway response body: a runaway or hostile body must not exhaust memory. */
export const MAX_BODY_BYTES = 256 * 1024;

export function createGatewayHttpClient(opts: {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** the gateway name, for error messages only */
  readonly gatewayName: string;
}): GatewayHttpClient {
  const agent = new Agent({
    connect: { timeout: opts.timeoutMs },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    // Gateways are called with a bounded rate; a few keep-alive sockets are plenty.
    connections: 16,
    keepAliveTimeout: 4_000,
  });
  const base = new URL(opts.baseUrl);

  const unavailable = (what: string, cause?: unknown): GatewayUnavailableError =>
    new GatewayUnavailableError(`${opts.gatewayName}: ${what}`, cause === undefined ? undefined : { cause });

  async function call<T extends z.ZodType>(req: {
    readonly method: 'GET' | 'POST';
    readonly path: string;
    readonly body?: unknown;
    readonly idempotencyKey?: string;
    readonly data: T;
  }): Promise<z.infer<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey;

    let statusCode: number;
    let text: string;
    try {
      const res = await request(new URL(req.path, base), {
        method: req.method,
        headers,
        body: req.body === undefined ? null : JSON.stringify(req.body),
        // undici 7 follows no redirects unless an interceptor is added: a gateway cannot bounce us.
        dispatcher: agent,
      });
      statusCode = res.statusCode;
      text = await readBounded(res.body);
    } catch (err) {
      throw unavailable(describeTransportError(err), err);
    }

    if (statusCode >= 500) throw unavailable(`HTTP ${statusCode}`);

    let parsedJson: unknown;
    try {
      parsedJson = JSON.parse(text);
    } catch (err) {
      throw unavailable(`unparsable response body (HTTP ${statusCode})`, err);
    }
    const envelope = resultEnvelope.safeParse(parsedJson);
    if (!envelope.success) throw unavailable(`unexpected response shape (HTTP ${statusCode})`);

    const { res_cd: code, res_msg: message } = envelope.data;
    if (code !== SUCCESS_CODE) {
      if (statusCode >= 200 && statusCode < 500) throw new GatewayDeclinedError(code, message);
      throw unavailable(`HTTP ${statusCode}`);
    }
    if (statusCode < 200 || statusCode >= 300) throw unavailable(`success code with HTTP ${statusCode}`);

    const data = req.data.safeParse(envelope.data.data);
    if (!data.success) throw unavailable('unexpected response data');
    return data.data;
  }

  return {
    call,
    async close() {
      await agent.close();
    },
  };
}

export async function readBounded(
  body: AsyncIterable<Buffer | Uint8Array> & { destroy?: (err?: Error) => void },
): Promise<string> {
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

export function describeTransportError(err: unknown): string {
  if (err instanceof undiciErrors.ConnectTimeoutError) return 'connect timeout';
  if (err instanceof undiciErrors.HeadersTimeoutError) return 'response timeout';
  if (err instanceof undiciErrors.BodyTimeoutError) return 'response body timeout';
  if (err instanceof undiciErrors.UndiciError) return `transport error (${err.code})`;
  if (err instanceof Error && 'code' in err && typeof err.code === 'string') return `network error (${err.code})`;
  return 'network error';
}

// The sandbox gateways' client: their result envelope over the one outbound HTTP client (outbound-http.ts), with
// bounded connect / headers / body timeouts, and one mapping of what came back onto the adapter contract's two error
// kinds.
import { z } from 'zod';
import { createOutboundHttp, OutboundFailure } from './outbound-http.js';
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

export function createGatewayHttpClient(opts: {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** the gateway name, for error messages only */
  readonly gatewayName: string;
}): GatewayHttpClient {
  // Gateways are called with a bounded rate; a few keep-alive sockets are plenty.
  const http = createOutboundHttp({ timeoutMs: opts.timeoutMs, connections: 16 });
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
    let statusCode: number;
    let text: string;
    try {
      ({ statusCode, text } = await http.send({
        url: new URL(req.path, base),
        method: req.method,
        ...(req.body !== undefined ? { body: req.body } : {}),
        ...(req.idempotencyKey !== undefined ? { idempotencyKey: req.idempotencyKey } : {}),
      }));
    } catch (err) {
      throw unavailable(err instanceof OutboundFailure ? err.description : 'network error', err);
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

  return { call, close: () => http.close() };
}

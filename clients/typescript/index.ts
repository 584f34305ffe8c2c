// The typed paygate client: openapi-fetch over the types generated from /openapi.json (./schema.d.ts, by
// `npm run client:generate`), with project Basic auth and an Idempotency-Key on every POST, plus the
// Standard Webhooks check of what paygate sends to a webhook_url / feedback_url / messaging webhook.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };
export type PaygateClient = Client<paths>;
/** A schema of the document by name, e.g. `Schema<'Receipt'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

export interface PaygateClientOptions {
  /** where paygate listens, e.g. http://127.0.0.1:8080 */
  readonly baseUrl: string;
  readonly clientKey: string;
  readonly secretKey: string;
  /**
   * Gives every POST without an Idempotency-Key a fresh one (default true). To retry a request safely after a
   * timeout, pass the same key yourself: `params: { header: { 'idempotency-key': key } }` (see idempotencyKey()).
   */
  readonly autoIdempotencyKey?: boolean;
  /** a fetch of your own (tests, proxies); the global fetch otherwise */
  readonly fetch?: (input: Request) => Promise<Response>;
}

/** A new key for the Idempotency-Key header: keep it to retry the same request. */
export function idempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/** The Authorization header value of a project's keys. */
export function basicAuthorization(clientKey: string, secretKey: string): string {
  const bytes = new TextEncoder().encode(`${clientKey}:${secretKey}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

export function createPaygateClient(options: PaygateClientOptions): PaygateClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { authorization: basicAuthorization(options.clientKey, options.secretKey) },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  if (options.autoIdempotencyKey !== false) {
    const idempotency: Middleware = {
      onRequest({ request }) {
        if (request.method === 'POST' && !request.headers.has('idempotency-key')) {
          request.headers.set('idempotency-key', idempotencyKey());
        }
        return request;
      },
    };
    client.use(idempotency);
  }
  return client;
}

/**
 * Checks a delivery's Standard Webhooks signature (webhook-id, webhook-timestamp within 5 minutes,
 * webhook-signature) over the exact body received, with the signing secret (`whsec_...`), and returns the
 * parsed JSON payload. Throws when the signature or the timestamp does not check out. For an
 * application/x-www-form-urlencoded feedback delivery it returns the body's fields.
 */
export function verifyWebhook(
  headers: Headers | Readonly<Record<string, string | string[] | undefined>>,
  body: string,
  secret: string,
): unknown {
  const flat: Record<string, string> = {};
  if (headers instanceof Headers) {
    headers.forEach((value, name) => {
      flat[name.toLowerCase()] = value;
    });
  } else {
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
  }
  new Webhook(secret).verify(body, flat, { jsonParse: false });
  if ((flat['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    return Object.fromEntries(new URLSearchParams(body));
  }
  return body === '' ? undefined : JSON.parse(body);
}

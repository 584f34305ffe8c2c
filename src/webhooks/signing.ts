// Standard Webhooks signing (the `standardwebhooks` library): `webhook-id` is the delivery id (stable
// across retries), `webhook-timestamp` the attempt's unix seconds, `webhook-signature` one `v1,<base64>`
// per secret, space-separated — the current secret first, then the previous one during its 24 hours.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { SECRET_PREFIX } from './rules.js';

/** `whsec_` + base64 of 32 random bytes (the library and the spec accept 24-64). */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

export interface SignedHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

export function signedHeaders(
  secrets: { readonly current: string; readonly previous?: string },
  deliveryId: string,
  at: Date,
  body: string,
): SignedHeaders {
  const signatures = [secrets.current, ...(secrets.previous !== undefined ? [secrets.previous] : [])].map((secret) =>
    new Webhook(secret).sign(deliveryId, at, body),
  );
  return {
    'webhook-id': deliveryId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

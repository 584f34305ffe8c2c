// One attempt of a claimed delivery: sign with the endpoint's current secret(s), POST through the SSRF-safe client,
// record the outcome once (by attempt number) with the delivery's new state and the endpoint's health. The dispatcher
// (dispatcher.ts) makes every attempt of today's deliveries; the `delivery:<id>` workflow's activity of an earlier
// release makes its run's (src/activities/webhooks.ts). Both send through this.
import type { Metrics, WebhookAttemptOutcome } from '../platform/observability/metrics.js';
import { createWebhookHttpClient, type Resolver } from './http-client.js';
import type { DeliveryRow, RecordedAttempt, SigningSecrets } from './records.js';
import { checkWebhookUrl, parseRetryAfter, type UrlPolicy } from './rules.js';
import { signedHeaders } from './signing.js';
import type { WebhookStore } from './store.js';

export interface WebhookAttemptOptions {
  /** sandbox mode: http to loopback receivers is allowed; production: https to global addresses only */
  readonly sandbox: boolean;
  /** the DNS lookup of the connect-time guard (tests inject one) */
  readonly resolve?: Resolver;
  /** one attempt's whole exchange; 15 s unless a test shortens it */
  readonly attemptTimeoutMs?: number;
  /**
   * The time of attempts, of the `webhook-timestamp` header and of the secrets' overlap: the wall clock (Clocks.wallClock),
   * never the sandbox clock, or receivers' timestamp checks refuse real deliveries (tests follow the engine's virtual time)
   */
  readonly clock?: () => Date;
}

export interface AttemptRequest {
  readonly delivery: DeliveryRow;
  readonly secrets: SigningSecrets;
  readonly attempt: number;
  readonly lastAttempt: number;
  /**
   * The dispatcher's: when the next attempt is due if this one leaves the delivery waiting, from the receiver's
   * Retry-After in ms (undefined without one). Absent for a workflow's attempt (its run waits on its own timer).
   */
  readonly nextAttempt?: (retryAfterMs: number | undefined) => { readonly at: Date; readonly inMs: number };
}

export interface DeliveryAttempts {
  /** The attempt made and recorded; a second call for the same attempt number records nothing and reports the state. */
  send(req: AttemptRequest): Promise<RecordedAttempt>;
  /** The endpoint's secrets that sign now (the previous one during its overlap); undefined without a secret. */
  signingSecrets: WebhookStore['signingSecrets'];
  /** the attempts' clock (the wall clock) */
  readonly clock: () => Date;
}

export function createDeliveryAttempts(deps: {
  readonly store: WebhookStore;
  readonly options: WebhookAttemptOptions;
  readonly metrics?: Pick<Metrics, 'webhookAttempt' | 'webhookEndpointAutoDisabled'> | undefined;
}): DeliveryAttempts {
  const { store, options, metrics } = deps;
  const policy: UrlPolicy = { sandbox: options.sandbox };
  const clock = options.clock ?? (() => new Date());
  const http = createWebhookHttpClient({
    policy,
    ...(options.resolve ? { resolve: options.resolve } : {}),
    ...(options.attemptTimeoutMs !== undefined ? { timeoutMs: options.attemptTimeoutMs } : {}),
  });

  return {
    clock,
    signingSecrets: (endpoint, now) => store.signingSecrets(endpoint, now),
    async send({ delivery, secrets, attempt, lastAttempt, nextAttempt }) {
      const deliveryId = delivery.delivery_id;
      const attemptedAt = clock();
      const body = store.deliveryBody(delivery);
      // the rules of the current mode apply at every send, not only when the URL was saved
      const checked = checkWebhookUrl(delivery.url, policy);
      const sent =
        'reason' in checked
          ? { httpStatus: null, responseBody: null, error: `refused: ${checked.reason}`, retryAfter: undefined, durationMs: 0 }
          : await http.post(
              delivery.url,
              { 'content-type': delivery.content_type, ...signedHeaders(secrets, deliveryId, attemptedAt, body) },
              body,
            );
      const retryAfterMs = sent.httpStatus !== null ? parseRetryAfter(sent.retryAfter, attemptedAt) : undefined;
      metrics?.webhookAttempt(attemptOutcome('reason' in checked, sent.httpStatus), sent.durationMs / 1000);
      const result = await store.recordAttempt(deliveryId, {
        attempt,
        lastAttempt,
        attemptedAt,
        durationMs: sent.durationMs,
        httpStatus: sent.httpStatus,
        responseBody: sent.responseBody,
        error: sent.error,
        retryAfterMs: retryAfterMs ?? null,
        ...(nextAttempt ? { next: nextAttempt(retryAfterMs) } : {}),
      });
      if (result.endpointDisabled) metrics?.webhookEndpointAutoDisabled();
      return result;
    },
  };
}

/** How an attempt ended, as the metrics count it. */
function attemptOutcome(refused: boolean, httpStatus: number | null): WebhookAttemptOutcome {
  if (refused) return 'refused';
  if (httpStatus === null) return 'network_error';
  return httpStatus >= 200 && httpStatus < 300 ? 'success' : 'http_error';
}

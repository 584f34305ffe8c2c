import { ApplicationFailure } from '@temporalio/common';
import { type AttemptOutcome, DELIVERY_NOT_FOUND } from '../webhooks/contract.js';
import { checkWebhookUrl, parseRetryAfter, type DeliveryState, type UrlPolicy } from '../webhooks/rules.js';
import {
  type DeliveryRow,
  type SigningSecrets,
  type WebhookStore,
  createWebhookHttpClient,
  type Resolver,
  signedHeaders,
} from '../webhooks/index.js';
import type { Metrics, WebhookAttemptOutcome } from '../platform/observability/metrics.js';

export interface WebhookActivityOptions {
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

export interface WebhookActivityDeps {
  readonly webhooks: WebhookStore;
  readonly options: WebhookActivityOptions;
  readonly metrics?: Pick<Metrics, 'webhookAttempt' | 'webhookEndpointAutoDisabled'>;
}

export function createWebhookActivities({ webhooks, options, metrics }: WebhookActivityDeps) {
  const policy: UrlPolicy = { sandbox: options.sandbox };
  const clock = options.clock ?? (() => new Date());
  const http = createWebhookHttpClient({
    policy,
    ...(options.resolve ? { resolve: options.resolve } : {}),
    ...(options.attemptTimeoutMs !== undefined ? { timeoutMs: options.attemptTimeoutMs } : {}),
  });

  /** The attempt's checks one by one: a recorded attempt, an ended delivery, a disabled endpoint, no secret. */
  const claimSlowly = async (
    deliveryId: string,
    attempt: number,
  ): Promise<AttemptOutcome | { delivery: DeliveryRow; secrets: SigningSecrets }> => {
    const delivery = await webhooks.findDelivery(deliveryId);
    if (!delivery) throw ApplicationFailure.nonRetryable(`delivery ${deliveryId} no longer exists`, DELIVERY_NOT_FOUND);
    const recorded = await webhooks.findAttempt(deliveryId, attempt);
    if (recorded) {
      return {
        state: delivery.status as DeliveryState,
        ...(recorded.retry_after_ms !== null ? { retryAfterMs: Number(recorded.retry_after_ms) } : {}),
      };
    }
    if (delivery.status === 'done' || delivery.status === 'failed') return { state: delivery.status };

    const endpoint = await webhooks.findEndpointById(delivery.endpoint_id);
    // a charge's feedback_url is sent whatever the project's webhook_url endpoint's switch says
    const stoppedByEndpoint = delivery.destination === 'endpoint' && !delivery.sends_when_disabled;
    if (!endpoint || (!endpoint.enabled && stoppedByEndpoint)) {
      await webhooks.markFailed(deliveryId);
      return { state: 'failed' };
    }
    const secrets = webhooks.signingSecrets(endpoint, clock());
    if (secrets === undefined) {
      // a URL is never stored without a secret; nothing unsigned ever leaves
      await webhooks.markFailed(deliveryId);
      return { state: 'failed' };
    }
    if (!(await webhooks.markDoing(deliveryId))) {
      const now = await webhooks.findDelivery(deliveryId);
      return { state: (now?.status as DeliveryState | undefined) ?? 'failed' };
    }

    return { delivery, secrets };
  };

  return {
    /**
     * One attempt of a delivery: checks that it is still waiting and that its endpoint may be sent to,
     * signs with the endpoint's current secret(s), POSTs, and records the outcome once. A retry of this
     * activity after the outcome was recorded sends nothing and reports the recorded outcome.
     */
    async attemptDelivery(input: { deliveryId: string; attempt: number; lastAttempt: number }): Promise<AttemptOutcome> {
      const { deliveryId, attempt, lastAttempt } = input;
      // one statement in the common case; each condition looked at on its own otherwise
      const claimed = await webhooks.claimAttempt(deliveryId, attempt);
      const ready = claimed
        ? { delivery: claimed.delivery, secrets: webhooks.signingSecrets(claimed.signing, clock())! }
        : await claimSlowly(deliveryId, attempt);
      if ('state' in ready) return ready;
      const { delivery, secrets } = ready;

      const attemptedAt = clock();
      const body = webhooks.deliveryBody(delivery);
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
      const result = await webhooks.recordAttempt(deliveryId, {
        attempt,
        lastAttempt,
        attemptedAt,
        durationMs: sent.durationMs,
        httpStatus: sent.httpStatus,
        responseBody: sent.responseBody,
        error: sent.error,
        retryAfterMs: retryAfterMs ?? null,
      });
      if (result.endpointDisabled) metrics?.webhookEndpointAutoDisabled();
      return {
        state: result.state,
        ...(result.retryAfterMs !== null ? { retryAfterMs: result.retryAfterMs } : {}),
        ...(result.stoppedDeliveryIds.length > 0 ? { stoppedDeliveryIds: result.stoppedDeliveryIds } : {}),
      };
    },
  };
}

/** How an attempt ended, as the metrics count it. */
function attemptOutcome(refused: boolean, httpStatus: number | null): WebhookAttemptOutcome {
  if (refused) return 'refused';
  if (httpStatus === null) return 'network_error';
  return httpStatus >= 200 && httpStatus < 300 ? 'success' : 'http_error';
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;

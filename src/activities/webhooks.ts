// The attempt activity of the `delivery:<id>` workflow (src/workflows/webhooks.ts). Deliveries no longer start that
// workflow (the worker's dispatcher sends them: src/webhooks/dispatcher.ts); the workflow and this activity stay
// registered so runs of an earlier release still in flight finish. A row the dispatcher owns (next_attempt_at set:
// adopted as an orphan, or retried by hand) is never sent by a run: the run ends.
import { ApplicationFailure } from '@temporalio/common';
import { type AttemptOutcome, DELIVERY_NOT_FOUND } from '../webhooks/contract.js';
import type { DeliveryState } from '../webhooks/rules.js';
import {
  createDeliveryAttempts,
  type DeliveryRow,
  type SigningSecrets,
  type WebhookAttemptOptions,
  type WebhookStore,
} from '../webhooks/index.js';
import type { Metrics } from '../platform/observability/metrics.js';

/** How attempts reach receivers (the dispatcher's options too: the composition root gives both the same). */
export type WebhookActivityOptions = WebhookAttemptOptions;

export interface WebhookActivityDeps {
  readonly webhooks: WebhookStore;
  readonly options: WebhookActivityOptions;
  readonly metrics?: Pick<Metrics, 'webhookAttempt' | 'webhookEndpointAutoDisabled'>;
}

export function createWebhookActivities({ webhooks, options, metrics }: WebhookActivityDeps) {
  const attempts = createDeliveryAttempts({ store: webhooks, options, metrics });
  const clock = attempts.clock;

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
    // the dispatcher's now: the run ends without sending or writing (the row's state is the dispatcher's to say)
    if (delivery.next_attempt_at !== null) return { state: 'failed' };

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
      // handed to the dispatcher meanwhile: not this run's to send
      if (now && now.next_attempt_at !== null) return { state: 'failed' };
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
      const result = await attempts.send({ delivery: ready.delivery, secrets: ready.secrets, attempt, lastAttempt });
      return {
        state: result.state,
        ...(result.retryAfterMs !== null ? { retryAfterMs: result.retryAfterMs } : {}),
        ...(result.stoppedDeliveryIds.length > 0 ? { stoppedDeliveryIds: result.stoppedDeliveryIds } : {}),
      };
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;

import { condition, getExternalWorkflowHandle, proxyActivities, setHandler } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.js';
import {
  DELIVERY_NOT_FOUND,
  type DeliveryInput,
  deliveryWorkflowId,
  endpointDisabledSignal,
  type DeliveryWorkflow,
} from '../webhooks/contract.js';
import { retryDelayMs } from '../webhooks/retry-ladder.js';
import type { DeliveryState } from '../webhooks/rules.js';

// One webhook delivery: attempt, wait on the ladder (0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, ...
// ±20 %, or the receiver's Retry-After capped at twice the rung), attempt again, until a 2xx, the last
// attempt, or the endpoint is disabled. Each attempt is one activity that signs, sends and records; the
// workflow holds no payload, no URL and no secret.

const attempts = proxyActivities<WebhookActivities>({
  // the HTTP exchange is bounded at 15 s; the rest is database time
  startToCloseTimeout: '1 minute',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    // no attempt cap: the activity is idempotent (an attempt number is recorded once), and a database that
    // is down for an hour must not end the run with its row left 'doing' — it resumes when the database does
    nonRetryableErrorTypes: [DELIVERY_NOT_FOUND],
  },
});

export async function deliveryWorkflow(input: DeliveryInput): Promise<DeliveryState> {
  let endpointDisabled = false;
  setHandler(endpointDisabledSignal, () => {
    endpointDisabled = true;
  });

  let retryAfterMs: number | undefined;
  for (let attempt = input.firstAttempt; attempt <= input.lastAttempt; attempt++) {
    if (attempt > input.firstAttempt) {
      // Math.random is the workflow's seeded generator: the same jitter on every replay
      const delay = retryDelayMs(attempt, Math.random(), retryAfterMs);
      if (delay > 0 && (await condition(() => endpointDisabled, delay))) return 'failed';
      if (endpointDisabled) return 'failed';
    }
    const outcome = await attempts.attemptDelivery({ deliveryId: input.deliveryId, attempt, lastAttempt: input.lastAttempt });
    // the others' rows already say failed; a run that has ended meanwhile needs no signal
    await Promise.all(
      (outcome.stoppedDeliveryIds ?? []).map((id) =>
        getExternalWorkflowHandle(deliveryWorkflowId(id))
          .signal(endpointDisabledSignal)
          .catch(() => undefined),
      ),
    );
    if (outcome.state !== 'ready') return outcome.state;
    retryAfterMs = outcome.retryAfterMs;
  }
  return 'failed';
}

// the signature the services start it by (src/webhooks/contract.ts) is this function's
deliveryWorkflow satisfies DeliveryWorkflow;

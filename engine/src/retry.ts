// Retry policy arithmetic shared by activities and workflow runs, with the server's defaults.
import { RetryState, durationMs, msDuration, type Failure, type RetryPolicy } from './proto.js';
import type { RetrySpec } from './state.js';

/** The policy with the server's defaults filled in (1 s initial interval, coefficient 2, maximum 100x initial). */
export function retrySpec(p: RetryPolicy | null | undefined): RetrySpec {
  const initial = durationMs(p?.initialInterval) || 1000;
  return {
    initialIntervalMs: initial,
    backoffCoefficient: p?.backoffCoefficient && p.backoffCoefficient >= 1 ? p.backoffCoefficient : 2,
    maximumIntervalMs: durationMs(p?.maximumInterval) || initial * 100,
    maximumAttempts: p?.maximumAttempts ?? 0,
    nonRetryableErrorTypes: p?.nonRetryableErrorTypes ?? [],
  };
}

export function retryPolicyOf(spec: RetrySpec): RetryPolicy {
  return {
    initialInterval: msDuration(spec.initialIntervalMs),
    backoffCoefficient: spec.backoffCoefficient,
    maximumInterval: msDuration(spec.maximumIntervalMs),
    maximumAttempts: spec.maximumAttempts,
    nonRetryableErrorTypes: spec.nonRetryableErrorTypes,
  };
}

/** Delay before the next attempt, or the retry state that says why there is none. */
export function nextRetry(
  spec: RetrySpec,
  attempt: number,
  failure: Failure | null,
  now: number,
  expiration: number,
): { delay: number } | { retryState: number } {
  const app = failure?.applicationFailureInfo;
  if (app?.nonRetryable || failure?.serverFailureInfo?.nonRetryable) {
    return { retryState: RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE };
  }
  if (app?.type && spec.nonRetryableErrorTypes.includes(app.type)) {
    return { retryState: RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE };
  }
  if (spec.maximumAttempts > 0 && attempt >= spec.maximumAttempts) {
    return { retryState: RetryState.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED };
  }
  const explicit = durationMs(app?.nextRetryDelay);
  const delay = explicit || Math.min(spec.initialIntervalMs * spec.backoffCoefficient ** (attempt - 1), spec.maximumIntervalMs);
  if (expiration > 0 && now + delay >= expiration) return { retryState: RetryState.RETRY_STATE_TIMEOUT };
  return { delay };
}

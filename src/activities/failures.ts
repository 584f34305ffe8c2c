import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { gatewayDecline, GatewayUnavailableError } from '../gateways/index.js';
import { ApiError } from '../platform/errors.js';

import {
  GATEWAY_DEADLINE_MISSED,
  GATEWAY_DECLINED,
  GATEWAY_UNREACHABLE,
  type GatewayDeclinedDetails,
  UPSTREAM_CIRCUIT_OPEN,
  type UpstreamCircuitOpenDetails,
} from '../gateways/declined.js';

// How gateway outcomes cross the activity boundary (src/gateways/declined.ts): a refusal is final (not retried,
// carried to the workflow with the gateway's code, benign); an unreachable gateway or a missed deadline is retried,
// and says which it was; an upstream provider's open circuit is final (nothing was sent: the merchant retries later).

export async function callGateway<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const decline = gatewayDecline(err);
    if (decline) {
      const details: GatewayDeclinedDetails = { pgErrorCode: decline.pgErrorCode, pgMessage: decline.pgMessage };
      // benign: the PG judged the request (a wrong OTP, a declined card), nothing failed; the SDK logs it at debug
      // instead of a warning with its stack, and leaves it out of its failure metrics
      throw ApplicationFailure.create({
        type: GATEWAY_DECLINED,
        message: decline.pgMessage,
        nonRetryable: true,
        details: [details],
        category: ApplicationFailureCategory.BENIGN,
      });
    }
    if (err instanceof GatewayUnavailableError) {
      // the cause's text (an address, a transport error) stays in the activity's failure, never in an answer
      throw ApplicationFailure.create({
        type: err.deadlineMissed ? GATEWAY_DEADLINE_MISSED : GATEWAY_UNREACHABLE,
        message: err.message,
        cause: err,
      });
    }
    if (err instanceof ApiError && err.errorCode === 'UPSTREAM_UNAVAILABLE') {
      const details: UpstreamCircuitOpenDetails = { retryAfterSeconds: err.retryAfterSeconds ?? 1 };
      throw ApplicationFailure.create({
        type: UPSTREAM_CIRCUIT_OPEN,
        message: err.message,
        nonRetryable: true,
        details: [details],
        category: ApplicationFailureCategory.BENIGN,
      });
    }
    // Anything else is a defect of ours: retrying may help if it was transient, and Temporal records it.
    throw err;
  }
}

/**
 * An activity that must happen (retried without a cap: a reserve's or a period's charge, a reconcile, a refund) and
 * met a provider whose circuit is open (9481, nothing sent): retried when the circuit lets a call through again
 * (nextRetryDelay, the error's Retry-After) instead of on the retry policy's backoff, which would knock at once and
 * then, after a long outage, wait up to its maximum interval after the provider is back. Benign: waiting for a
 * provider is not a failure of the activity.
 */
export function waitingForProvider<A extends unknown[], R>(activity: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await activity(...args);
    } catch (err) {
      if (!(err instanceof ApiError) || err.errorCode !== 'UPSTREAM_UNAVAILABLE') throw err;
      throw ApplicationFailure.create({
        type: err.errorCode,
        message: err.message,
        nextRetryDelay: `${err.retryAfterSeconds ?? 1} seconds`,
        category: ApplicationFailureCategory.BENIGN,
      });
    }
  };
}

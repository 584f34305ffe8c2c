// The one place where a gateway's answer becomes a catalog error, and where a project's PG is resolved.
// Declines are mapped per operation (each area has its code); an unreachable PG is retryable everywhere
// and says how to retry without doing the operation twice.
import { ApiError, type ErrorName, RelayedApiError } from '../platform/errors.js';
import {
  GatewayDeclinedError,
  GatewayKeyReusedError,
  GatewayUnavailableError,
  type CardBillingGateway,
  type GatewayRegistry,
} from './types.js';
import type { Project } from '../projects/index.js';

export type GatewayOperation = 'issue' | 'charge' | 'cancel' | 'destroy';

interface FailureCodes {
  /** the refusal's catalog error and the sentence before the PG's own text; absent: the caller handles declines */
  readonly declined?: { readonly error: ErrorName; readonly refused: string };
  readonly unavailable: { readonly error: ErrorName; readonly message: (cause: string) => string };
  /**
   * a call cut at its deadline (an unknown outcome: the PG may have done it); absent: as `unavailable`. The message
   * says how the merchant learns the outcome.
   */
  readonly deadlineMissed?: { readonly error: ErrorName; readonly message: (cause: string) => string };
}

const FAILURES: Readonly<Record<GatewayOperation, FailureCodes>> = {
  issue: {
    declined: { error: 'SUBSCRIBE_PUBLISH_FAILED', refused: 'The PG refused the billing key issuance' },
    unavailable: { error: 'SUBSCRIBE_REQUEST_FAILED', message: (cause) => `The billing key request failed: ${cause}` },
  },
  charge: {
    declined: { error: 'PAYMENT_DECLINED', refused: 'The PG refused the payment' },
    unavailable: { error: 'GATEWAY_UNAVAILABLE', message: (cause) => `${cause}. Retry with the same order_id.` },
    deadlineMissed: {
      error: 'GATEWAY_TIMEOUT',
      message: (cause) =>
        `${cause}. The charge may have been made; paygate settles it by itself. Retry with the same order_id (and Idempotency-Key) to learn its outcome: it is never charged twice.`,
    },
  },
  cancel: {
    declined: { error: 'RECEIPT_NOT_CANCELLABLE', refused: 'The PG refused the cancel' },
    unavailable: { error: 'GATEWAY_UNAVAILABLE', message: (cause) => `${cause}. Retry the same cancel.` },
    deadlineMissed: {
      error: 'GATEWAY_TIMEOUT',
      message: (cause) =>
        `${cause}. The cancel may have been made; paygate settles it by itself. Look up the receipt, or retry the same cancel (same cancel_id): it is never applied twice.`,
    },
  },
  destroy: {
    unavailable: { error: 'GATEWAY_UNAVAILABLE', message: (cause) => `${cause}. Retry the destroy.` },
  },
};

/** The catalog error for a gateway failure of `operation`; anything else (a defect of ours) is returned as it is. */
export function gatewayFailure(operation: GatewayOperation, err: unknown): unknown {
  // an upstream provider's own answer: the merchant gets it as the provider gave it
  if (err instanceof RelayedApiError) return err;
  const codes = FAILURES[operation];
  if (err instanceof GatewayDeclinedError && codes.declined) {
    return new ApiError(codes.declined.error, {
      message: `${codes.declined.refused}: ${err.pgMessage}`,
      pgErrorCode: err.pgErrorCode,
    });
  }
  // the PG saw our key with another request: never the card's answer, and nothing the merchant did wrong
  if (err instanceof GatewayKeyReusedError) return new ApiError('PG_KEY_REUSED', { cause: err });
  if (err instanceof GatewayUnavailableError) {
    const failure = (err.deadlineMissed ? codes.deadlineMissed : undefined) ?? codes.unavailable;
    return new ApiError(failure.error, { message: failure.message(err.message), cause: err });
  }
  return err;
}

/** The PG's card capability for this project: unknown / not enabled -> 2001, no billing keys -> 2057. */
export function cardGatewayFor(gateways: GatewayRegistry, project: Project, pg: string): CardBillingGateway {
  const gateway = project.pgs.includes(pg) ? gateways.get(pg) : undefined;
  if (!gateway) throw new ApiError('RC_PG_NOT_FOUND');
  if (!gateway.card) throw new ApiError('RC_NOT_SUBSCRIBE');
  return gateway.card;
}

/**
 * Whether a charge's failure (as gatewayFailure made it) is final: the PG or the upstream provider refused, or the
 * provider refused the project's keys there, so nothing was charged and the order_id is free again. Anything else
 * may have charged: the reconcile workflow finds out.
 */
export function isFinalRefusal(failure: unknown): boolean {
  if (failure instanceof RelayedApiError) return true;
  return (
    failure instanceof ApiError &&
    (failure.errorCode === 'PAYMENT_DECLINED' ||
      failure.errorCode === 'UPSTREAM_KEYS_REFUSED' ||
      failure.errorCode === 'UPSTREAM_NOT_CONFIGURED')
  );
}

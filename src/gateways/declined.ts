// How a gateway's outcome crosses the activity boundary into a workflow. A refusal: an ApplicationFailure of type
// GATEWAY_DECLINED (not retried), with the gateway's own code and text as details[0] (declinedBy). An outage: the
// PG could not be reached (GATEWAY_UNREACHABLE, retried), did not answer within its deadline (GATEWAY_DEADLINE_MISSED,
// retried: the outcome is unknown), or the upstream provider's circuit is open (UPSTREAM_CIRCUIT_OPEN, not retried:
// nothing was sent); outageOf tells the workflow which, so it never answers an outage with a refusal's code.
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';

export const GATEWAY_DECLINED = 'GatewayDeclined';

export interface GatewayDeclinedDetails {
  readonly pgErrorCode: string;
  readonly pgMessage: string;
}

/**
 * The gateway's refusal, if that is what made the activity fail: an activity task's failure wraps it (ActivityFailure),
 * a local activity's reaches the workflow as the activity threw it.
 */
export function declinedBy(err: unknown): GatewayDeclinedDetails | undefined {
  const failure = err instanceof ActivityFailure ? err.cause : err;
  if (failure instanceof ApplicationFailure && failure.type === GATEWAY_DECLINED) {
    return failure.details?.[0] as GatewayDeclinedDetails | undefined;
  }
  return undefined;
}

export const GATEWAY_UNREACHABLE = 'GatewayUnreachable';
export const GATEWAY_DEADLINE_MISSED = 'GatewayDeadlineMissed';
export const UPSTREAM_CIRCUIT_OPEN = 'UpstreamCircuitOpen';

export interface UpstreamCircuitOpenDetails {
  readonly retryAfterSeconds: number;
}

/**
 * What kept a gateway step from an answer, once its retries are spent: `timeout` (the call, or the activity holding
 * it, ran out of time: the PG may have done it), `circuit` (the provider's circuit is open: nothing was sent), or
 * `unreachable` (anything else that is not a refusal).
 */
export type GatewayOutage =
  | { readonly kind: 'unreachable' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'circuit'; readonly retryAfterSeconds: number };

/** The outage behind a gateway step's failure; undefined for a refusal (see declinedBy). */
export function outageOf(err: unknown): GatewayOutage | undefined {
  if (declinedBy(err) !== undefined) return undefined;
  const failure = err instanceof ActivityFailure ? err.cause : err;
  if (failure instanceof TimeoutFailure) return { kind: 'timeout' };
  if (failure instanceof ApplicationFailure) {
    if (failure.type === GATEWAY_DEADLINE_MISSED) return { kind: 'timeout' };
    if (failure.type === UPSTREAM_CIRCUIT_OPEN) {
      const details = failure.details?.[0] as UpstreamCircuitOpenDetails | undefined;
      return { kind: 'circuit', retryAfterSeconds: Math.max(1, details?.retryAfterSeconds ?? 1) };
    }
  }
  return { kind: 'unreachable' };
}

/** What a workflow says to the merchant about an outage of one step (see outageFailure). */
export interface OutageTexts {
  /** the PG could not be reached: what was (not) done, and how to retry */
  readonly unreachable: string;
  /** the PG did not answer in time: the step may have been done; how to learn its outcome */
  readonly timeout: string;
}

/** The catalog errors an outage is answered with (src/platform/errors.ts): never a refusal's code. */
export type OutageErrorName = 'GATEWAY_UNAVAILABLE' | 'GATEWAY_TIMEOUT' | 'UPSTREAM_UNAVAILABLE';

export const OUTAGE_ERRORS: ReadonlySet<string> = new Set<OutageErrorName>([
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_TIMEOUT',
  'UPSTREAM_UNAVAILABLE',
]);

/** What the API reads off an outage's failure (details[0]): when a retry may get through. */
export interface OutageDetails {
  readonly retryAfterSeconds?: number;
}

/**
 * The update's failure for a step that met an outage: 9502 (unreachable), 9504 (no answer in time) or 9481 (the
 * provider's circuit is open, with its Retry-After). The service adds the receipt_id the merchant knows the order by,
 * so the answer always says how to learn the outcome.
 */
export function outageFailure(outage: GatewayOutage, texts: OutageTexts): ApplicationFailure {
  const [type, message, details]: [OutageErrorName, string | undefined, OutageDetails] =
    outage.kind === 'circuit'
      ? ['UPSTREAM_UNAVAILABLE', undefined, { retryAfterSeconds: outage.retryAfterSeconds }]
      : outage.kind === 'timeout'
        ? ['GATEWAY_TIMEOUT', texts.timeout, {}]
        : ['GATEWAY_UNAVAILABLE', texts.unreachable, {}];
  return ApplicationFailure.create({
    type,
    // the circuit's answer is the catalog's own sentence (nothing was sent; retry after Retry-After)
    message:
      message ?? "The project's upstream provider is not answering; nothing was sent to it. Retry after the Retry-After seconds.",
    nonRetryable: true,
    details: [details],
  });
}

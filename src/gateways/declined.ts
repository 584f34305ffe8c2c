// How a gateway's refusal crosses the activity boundary: an ApplicationFailure of this type (not
// retried), with the gateway's own code and text as details[0]. Workflows branch on it (declinedBy).
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

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

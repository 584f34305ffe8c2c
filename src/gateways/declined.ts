// How a gateway's refusal crosses the activity boundary: an ApplicationFailure of this type (not
// retried), with the gateway's own code and text as details[0]. Workflows branch on it (declinedBy).
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

export const GATEWAY_DECLINED = 'GatewayDeclined';

export interface GatewayDeclinedDetails {
  readonly pgErrorCode: string;
  readonly pgMessage: string;
}

/** The gateway's refusal, if that is what made the activity fail. */
export function declinedBy(err: unknown): GatewayDeclinedDetails | undefined {
  if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === GATEWAY_DECLINED) {
    return err.cause.details?.[0] as GatewayDeclinedDetails | undefined;
  }
  return undefined;
}

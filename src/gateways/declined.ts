// How a gateway's refusal crosses the activity boundary: an ApplicationFailure of this type (not
// retried), with the gateway's own code and text as details[0]. Workflows branch on it.

export const GATEWAY_DECLINED = 'GatewayDeclined';

export interface GatewayDeclinedDetails {
  readonly pgErrorCode: string;
  readonly pgMessage: string;
}

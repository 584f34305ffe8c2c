import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { GatewayDeclinedError, GatewayUnavailableError } from '../gateways/index.js';

import { GATEWAY_DECLINED, type GatewayDeclinedDetails } from '../gateways/declined.js';

// How gateway outcomes cross the activity boundary: a refusal is final (not retried, carried to the
// workflow with the gateway's code, benign); an unreachable gateway is an ordinary error Temporal retries.

export async function callGateway<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof GatewayDeclinedError) {
      const details: GatewayDeclinedDetails = { pgErrorCode: err.pgErrorCode, pgMessage: err.pgMessage };
      // benign: the PG judged the request (a wrong OTP, a declined card), nothing failed; the SDK logs it at debug
      // instead of a warning with its stack, and leaves it out of its failure metrics
      throw ApplicationFailure.create({
        type: GATEWAY_DECLINED,
        message: err.pgMessage,
        nonRetryable: true,
        details: [details],
        category: ApplicationFailureCategory.BENIGN,
      });
    }
    if (err instanceof GatewayUnavailableError) throw err;
    // Anything else is a defect of ours: retrying may help if it was transient, and Temporal records it.
    throw err;
  }
}

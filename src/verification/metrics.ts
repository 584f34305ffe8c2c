// A verification's request and confirm counted by how they ended, for routes and any other caller alike: the
// status the step left (51 awaiting the OTP, 12 verified), or, when it threw, refused (a catalog answer about the
// verification: wrong OTP, locked, expired, not ready) or failed (the PG could not send, the workflow or the
// database did not answer).
import { VerificationStatus } from './contract.js';
import { ApiError } from '../platform/errors.js';
import type { Metrics, VerificationStage } from '../platform/observability/metrics.js';
import type { VerificationRow } from './store.js';
import type { VerificationService } from './service.js';

/** Errors that say the system could not do the step, not that the step was refused. */
const FAILURES: ReadonlySet<string> = new Set([
  'AUTH_REQUEST_FAILED',
  'SERVICE_UNAVAILABLE',
  'INTERNAL_ERROR',
  // the identity gateway or the upstream provider did not answer: nothing was judged
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_TIMEOUT',
  'UPSTREAM_UNAVAILABLE',
]);

export function countVerificationOutcomes(
  service: VerificationService,
  metrics: Pick<Metrics, 'verification'> | undefined,
): VerificationService {
  if (!metrics) return service;
  const counted = async (stage: VerificationStage, step: () => Promise<VerificationRow>): Promise<VerificationRow> => {
    try {
      const row = await step();
      if (stage === 'request') metrics.verification(stage, row.status === VerificationStatus.AwaitingOtp ? 'sent' : 'failed');
      else metrics.verification(stage, row.status === VerificationStatus.Verified ? 'verified' : 'failed');
      return row;
    } catch (err) {
      metrics.verification(stage, err instanceof ApiError && !FAILURES.has(err.errorCode) ? 'refused' : 'failed');
      throw err;
    }
  };
  return {
    ...service,
    request: (project, checked, request, sourceIp) =>
      counted('request', () => service.request(project, checked, request, sourceIp)),
    confirm: (project, receiptId, body, idempotencyKey) =>
      counted('confirm', () => service.confirm(project, receiptId, body, idempotencyKey)),
  };
}

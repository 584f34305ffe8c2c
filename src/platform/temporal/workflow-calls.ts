// How a service reads what went wrong when it sent a workflow an update: the one mapping from the SDK's errors
// to the catalog, shared by every service that drives a long-running process.
import { ApplicationFailure } from '@temporalio/common';
import {
  type Client,
  isGrpcServiceError,
  ServiceError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import { status as grpcStatus } from '@grpc/grpc-js';
import { ApiError, isErrorName } from '../errors.js';

/** How long a use case waits on a workflow (start, update) before answering with an error instead. */
export const DEFAULT_WORKFLOW_CALL_TIMEOUT_MS = 60_000;

/** Where the long-running processes run: the client every service starts, updates and signals them with. */
export interface WorkflowRuntime {
  readonly client: Client;
  readonly taskQueue: string;
}

/** What a workflow may attach to a refusal or an outage (ApplicationFailure details[0]; see gateways/declined.ts). */
interface RefusalDetails {
  readonly pgErrorCode?: string;
  readonly payloadMessage?: string;
  /** an open circuit's: when a retry may get through (the Retry-After header) */
  readonly retryAfterSeconds?: number;
}

/**
 * The workflow answers whose outcome is not known yet, which name the receipt to look up: a PG's outage
 * (src/gateways/declined.ts outageFailure), and a step of the same order still in progress.
 */
const NOT_FINAL_ANSWERS: ReadonlySet<string> = new Set([
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_TIMEOUT',
  'UPSTREAM_UNAVAILABLE',
  'IDEMPOTENCY_IN_PROGRESS',
]);

/**
 * The workflow engine could not be reached (a restarting engine or cluster frontend: the connection refused or
 * dropped): the call did nothing the caller can rely on, and the same request again is the way to learn more.
 */
export function engineUnreachable(err: unknown): boolean {
  const grpc =
    err instanceof ServiceError && isGrpcServiceError(err.cause) ? err.cause : isGrpcServiceError(err) ? err : undefined;
  return grpc !== undefined && grpc.code === grpcStatus.UNAVAILABLE;
}

/** The workflow did not answer within the deadline (no worker polling, engine overloaded). */
export function updateTimedOut(err: unknown): boolean {
  return (
    err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
    (isGrpcServiceError(err) && err.code === grpcStatus.DEADLINE_EXCEEDED)
  );
}

/**
 * A validator's or handler's refusal or outage (ApplicationFailure typed with a catalog name) as the API error it
 * stands for, with the PG's code, payload message and Retry-After it carried, and for an outage the receipt_id the
 * merchant was shown (`shownReceiptId`); undefined for anything else.
 */
export function workflowRefusal(err: unknown, shownReceiptId?: string): ApiError | undefined {
  if (!(err instanceof WorkflowUpdateFailedError) || !(err.cause instanceof ApplicationFailure)) return undefined;
  const { type, message } = err.cause;
  if (!type || !isErrorName(type)) return undefined;
  const details = (err.cause.details?.[0] ?? {}) as RefusalDetails;
  return new ApiError(type, {
    message,
    ...(details.pgErrorCode !== undefined ? { pgErrorCode: details.pgErrorCode } : {}),
    ...(details.payloadMessage !== undefined ? { payloadMessage: details.payloadMessage } : {}),
    ...(typeof details.retryAfterSeconds === 'number' ? { retryAfterSeconds: details.retryAfterSeconds } : {}),
    // an answer that is not final names the receipt the merchant knows the order by, to look its outcome up
    ...(shownReceiptId !== undefined && NOT_FINAL_ANSWERS.has(type) ? { receiptId: shownReceiptId } : {}),
  });
}

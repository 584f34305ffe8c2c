// How a service reads what went wrong when it sent a workflow an update: the one mapping from the SDK's errors
// to the catalog, shared by every service that drives a long-running process.
import { ApplicationFailure } from '@temporalio/common';
import {
  type Client,
  isGrpcServiceError,
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

/** What a workflow may attach to a refusal (ApplicationFailure details[0]). */
interface RefusalDetails {
  readonly pgErrorCode?: string;
  readonly payloadMessage?: string;
}

/** The workflow did not answer within the deadline (no worker polling, engine overloaded). */
export function updateTimedOut(err: unknown): boolean {
  return (
    err instanceof WorkflowUpdateRPCTimeoutOrCancelledError ||
    (isGrpcServiceError(err) && err.code === grpcStatus.DEADLINE_EXCEEDED)
  );
}

/**
 * A validator's or handler's refusal (ApplicationFailure typed with a catalog name) as the API error it stands for,
 * with the PG's code and payload message it carried; undefined for anything else.
 */
export function workflowRefusal(err: unknown): ApiError | undefined {
  if (!(err instanceof WorkflowUpdateFailedError) || !(err.cause instanceof ApplicationFailure)) return undefined;
  const { type, message } = err.cause;
  if (!type || !isErrorName(type)) return undefined;
  const details = (err.cause.details?.[0] ?? {}) as RefusalDetails;
  return new ApiError(type, {
    message,
    ...(details.pgErrorCode !== undefined ? { pgErrorCode: details.pgErrorCode } : {}),
    ...(details.payloadMessage !== undefined ? { payloadMessage: details.payloadMessage } : {}),
  });
}

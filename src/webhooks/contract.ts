import { defineSignal } from '@temporalio/workflow';
import type { DeliveryState } from './rules.js';

// The delivery workflow's contract, shared by the workflow, its activities and the webhook service.

export const DELIVERY_WORKFLOW_TYPE = 'deliveryWorkflow';
/** One workflow per (event, endpoint); a manual retry is a new run under the same id. */
export const deliveryWorkflowId = (deliveryId: string): string => `delivery:${deliveryId}`;

export interface DeliveryInput {
  readonly deliveryId: string;
  /** the attempt number this run starts with: 1, or the next one after a failed delivery's last */
  readonly firstAttempt: number;
  /** the run stops as failed after this attempt (the delivery's max_retry, or one more for a manual retry) */
  readonly lastAttempt: number;
}

/** The delivery workflow's signature, for the services that start it without importing workflow code. */
export type DeliveryWorkflow = (input: DeliveryInput) => Promise<DeliveryState>;

/** What one attempt activity reports to the workflow. */
export interface AttemptOutcome {
  /** the delivery's state after the attempt; anything but 'ready' ends the run */
  readonly state: DeliveryState;
  /** the receiver's Retry-After, in milliseconds from the attempt */
  readonly retryAfterMs?: number;
  /** deliveries of the same endpoint this attempt stopped by disabling it: their runs are told to end */
  readonly stoppedDeliveryIds?: readonly string[];
}

/**
 * Sent to a waiting delivery when its endpoint was disabled (10 failures in a row, a 410, or PUT enabled:
 * false): the database already says `failed`, the run ends without another attempt.
 */
export const endpointDisabledSignal = defineSignal('endpointDisabled');

/** The activity's refusal when the delivery row is gone (its project was deleted): nothing to send. */
export const DELIVERY_NOT_FOUND = 'DeliveryNotFound';

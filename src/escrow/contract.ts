import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ResolvedShipment } from '../gateways/rules.js';
import type { BuyerEvent, EscrowEventSource } from './status.js';
import type { UpdateProof } from '../platform/temporal/messages.js';

// The escrow order workflow's contract, shared by the workflow, its activities and the API.

export const ESCROW_WORKFLOW_TYPE = 'escrowWorkflow';
/** Shipping starts an order accepts (each refused by the PG, or the last one taken): a merchant's retries are bounded. */
export const MAX_SHIPPING_ATTEMPTS = 20;
export const escrowWorkflowId = (receiptId: string): string => `escrow:${receiptId}`;

export interface EscrowInput {
  readonly receiptId: string;
  readonly applicationId: string;
  readonly pg: string;
  /** the PG's payment tid: what the PG knows the order by */
  readonly gatewayTid: string;
  /** hours without a notification (in 3 or -2) before the PG is asked; the project's setting at payment */
  readonly reconcileAfterHours: number;
  /** what the previous run handed over when it continued as new; absent in the first run */
  readonly carried?: EscrowCarried;
}

/** The escrow order workflow's signature, for the services that start it without importing workflow code. */
export type EscrowWorkflow = (input: EscrowInput) => Promise<void>;

/** The state a run hands to the next one when its history grew long (see escrowWorkflow). */
export interface EscrowCarried {
  readonly status: number;
  readonly seq: number;
  readonly shippingAttempts: number;
  /** the accepted shipping starts' nonces: one per attempt, so at most the workflow's cap on attempts */
  readonly spentNonces: readonly string[];
  /** the most recent notification ids only: older redeliveries are known to the database (PgNotification.recorded) */
  readonly recentNotifications: readonly string[];
  /** notifications signalled but not handled yet */
  readonly inbox: readonly PgNotification[];
  readonly waitMs: number;
  /** the provider notified a change the order has not asked it about yet (providerFollowUpSignal) */
  readonly followUp?: boolean;
  /** a shipping start whose PG answer was never heard (see escrowWorkflow) */
  readonly shipmentInDoubt?: ResolvedShipment;
}

/** Shipping start: the shipment after the fallbacks; sealed by the payload codec (it names the recipient). */
export type ShippingStartArgs = UpdateProof & { readonly shipment: ResolvedShipment };

export interface ShippingStartResult {
  readonly shippingStartedAt: string;
}

/** A PG notification, verified by the API before it is signalled. */
export interface PgNotification {
  /** the PG's notification id: a redelivery carries the same id */
  readonly notificationId: string;
  readonly event: BuyerEvent;
  /** ISO 8601: when the PG says the buyer acted */
  readonly occurredAt: string;
  /** the order's events already hold this id (the service looked): a redelivery, whatever the run remembers */
  readonly recorded?: boolean;
}

/** Failures handed back to the API: ApplicationFailure type = catalog error name, details[0] = this. */
export interface EscrowFailureDetails {
  readonly pgErrorCode?: string;
}

export type EscrowErrorName = 'RC_ESCROW_NOT_READY' | 'RC_ESCROW_SHIPPING_START_FAILED' | 'IDEMPOTENCY_IN_PROGRESS';

export const shippingStartUpdate = defineUpdate<ShippingStartResult, [ShippingStartArgs]>('shippingStart');
export const pgNotificationSignal = defineSignal<[PgNotification]>('pgNotification');
/**
 * The project's upstream provider notified a change paygate could not ask it about then (the provider did not
 * answer): the order asks the provider itself, as soon as it answers (see escrowWorkflow).
 */
export const providerFollowUpSignal = defineSignal('providerFollowUp');
/** The workflow's escrow status (tests, diagnostics). */
export const escrowStatusQuery = defineQuery<number>('escrowStatus');

/** One row of the events history, as the activities record it. */
export interface EscrowTransition {
  readonly receiptId: string;
  /** the workflow's own sequence number of this event: a retried activity records it once */
  readonly seq: number;
  readonly event: string;
  readonly source: EscrowEventSource;
  readonly fromStatus: number;
  /** undefined: recorded and ignored (does not fit the state, duplicate) */
  readonly toStatus?: number;
  readonly note?: string;
  readonly occurredAt: string;
  readonly notificationId?: string;
  /** the first escrow PG's confirmation page (shipping start) */
  readonly confirmUrl?: string;
}

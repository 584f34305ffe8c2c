// The rows and shapes of webhook endpoints, deliveries and attempts, shared by their three stores
// (endpoints-store.ts, deliveries-store.ts, attempts-store.ts) and by the service and activities that use them.
import type { Selectable } from 'kysely';
import type { DeliveryContentType, DeliveryState, WebhookConfigChange } from './rules.js';
import type {
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
} from '../platform/db/migrations/0005_webhooks.js';
import type { DeliveryDestinationColumns } from '../platform/db/migrations/0006_messages.js';
import type { AttemptScheduleColumns, DeliveryDispatchColumns } from '../platform/db/migrations/0018_delivery_dispatch.js';

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable & DeliveryDestinationColumns & DeliveryDispatchColumns>;
export type AttemptRow = Selectable<WebhookAttemptsTable & AttemptScheduleColumns>;

/** 'message': the messaging sub-service's webhook; 'project': the project's webhook_url (payments, escrow) */
export type EndpointKind = 'message' | 'project';

/** A PUT's change, or the admin API's webhook_url (null clears the URL). */
export type EndpointChange = Omit<WebhookConfigChange, 'url'> & { readonly url?: string | null };

export interface NewDelivery {
  readonly deliveryId: string;
  readonly endpoint: EndpointRow;
  readonly event: string;
  readonly eventCode: number;
  readonly tags: readonly string[];
  /** the exact body sent on every attempt */
  readonly body: string;
  readonly sendsWhenDisabled: boolean;
  readonly createdAt: Date;
  /** when the dispatcher makes the first attempt (now, on the business clock) */
  readonly firstAttemptAt: Date;
  /** a charge's feedback_url instead of the endpoint's URL: signed with the endpoint's secret, not counted in its health */
  readonly feedbackUrl?: string;
  /** application/json unless said otherwise */
  readonly contentType?: DeliveryContentType;
}

export interface SigningSecrets {
  readonly current: string;
  /** the secret before the last rotation, while it still signs */
  readonly previous?: string;
}

/** What an attempt produced, as the attempt activity hands it to the store. */
export interface AttemptResult {
  readonly attempt: number;
  readonly lastAttempt: number;
  readonly attemptedAt: Date;
  readonly durationMs: number;
  readonly httpStatus: number | null;
  readonly responseBody: string | null;
  readonly error: string | null;
  readonly retryAfterMs: number | null;
  /**
   * The dispatcher's: when the next attempt is due if this one leaves the delivery waiting, and the wait that makes
   * it. Absent from a `delivery:<id>` workflow's attempt (its run keeps the row and waits on its own timer).
   */
  readonly next?: { readonly at: Date; readonly inMs: number };
}

/** An endpoint's signing columns: what signingSecrets reads. */
export type SigningColumns = Pick<
  EndpointRow,
  'endpoint_id' | 'secret_sealed' | 'previous_secret_sealed' | 'previous_secret_expires_at'
>;

/** A delivery claimed for an attempt, with its endpoint's signing columns. */
export interface ClaimedDelivery {
  readonly delivery: DeliveryRow;
  readonly signing: SigningColumns;
}

/** A delivery the dispatcher claimed, with what its attempt checks of the endpoint (absent: the endpoint is gone). */
export interface DueDelivery {
  readonly delivery: DeliveryRow;
  readonly endpoint?: SigningColumns & { readonly enabled: boolean };
}

export interface RecordedAttempt {
  readonly state: DeliveryState;
  readonly retryAfterMs: number | null;
  /** other deliveries of the endpoint this attempt stopped by disabling it */
  readonly stoppedDeliveryIds: readonly string[];
  /** this attempt disabled its endpoint (10 failures in a row, or a 410) */
  readonly endpointDisabled?: boolean;
}

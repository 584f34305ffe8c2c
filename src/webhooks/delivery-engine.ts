// The delivery engine: every outbound event becomes a delivery row (its body sealed), due at once: the outbox the
// worker's dispatcher (dispatcher.ts) sends from, woken in this process as soon as the row is saved. `deliver` is the
// one entry of every producer (through the webhook service); a failed delivery is sent again by `requeue` (same
// webhook-id, one attempt more).
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { bindLogIds } from '../platform/observability/log-context.js';
import { encodeDeliveryBody, type FeedbackTarget, type OutboundEvent } from './rules.js';
import type { DeliveryRow, EndpointKind, WebhookStore } from './store.js';

/** Whose webhook an event goes to. */
export interface EndpointRef {
  readonly kind: EndpointKind;
  readonly applicationId: string;
}

export interface DeliverOptions {
  /** sent even when the endpoint is disabled or not subscribed to the event (the test send) */
  readonly regardless?: boolean;
  /** a charge's feedback_url (and content type) instead of the endpoint's URL; the endpoint's secret signs */
  readonly feedback?: FeedbackTarget;
  /**
   * The producer's own id for the delivery, derived from its event: a producer retried after a crash finds
   * the delivery it saved instead of saving a second one.
   */
  readonly deliveryId?: string;
}

/** A failed delivery sent again: the same webhook-id, one attempt more. */
export interface Requeued {
  readonly deliveryId: string;
  readonly url: string;
}

/** What the engine tells when a row is due now: the dispatcher of this process, if it runs one. */
export interface DispatchSignal {
  wake(): void;
}

export interface DeliveryEngine {
  /**
   * Records a delivery of `event` to the endpoint, due now. Undefined when the endpoint has no URL, is disabled, or is
   * not subscribed to the event (unless `regardless`).
   */
  deliver(event: OutboundEvent, endpoint: EndpointRef, opts?: DeliverOptions): Promise<DeliveryRow | undefined>;
  /** A failed delivery sent again now: 9427 when it has not failed. */
  requeue(row: DeliveryRow): Promise<Requeued>;
}

export function createDeliveryEngine(deps: {
  readonly store: WebhookStore;
  /** the wall clock: created_at */
  readonly clock: () => Date;
  /** the ladder's clock (the business clock): when an attempt is due */
  readonly businessClock: () => Date;
  readonly dispatch?: DispatchSignal;
}): DeliveryEngine {
  const store = deps.store;
  const wake = () => deps.dispatch?.wake();

  return {
    async requeue(row) {
      const reopened = await store.reopenFailed(row.delivery_id, deps.businessClock());
      if (!reopened) throw new ApiError('WEBHOOK_DELIVERY_NOT_FAILED');
      wake();
      return { deliveryId: row.delivery_id, url: row.url };
    },

    async deliver(event, ref, opts = {}) {
      const endpoint = await store.findEndpoint(ref.applicationId, ref.kind);
      if (!endpoint) return undefined;
      if (opts.feedback === undefined) {
        if (!endpoint.url) return undefined;
        if (!opts.regardless && !endpoint.enabled) return undefined;
        // a message webhook subscribes to event codes; a project's webhook_url gets every event sent to it
        if (!opts.regardless && ref.kind === 'message' && !endpoint.events.includes(event.eventCode)) return undefined;
      }
      if (opts.deliveryId !== undefined) {
        // saved by an earlier call of the producer: the dispatcher has it already
        const saved = await store.findDelivery(opts.deliveryId);
        if (saved) return saved;
      }
      const contentType = opts.feedback?.contentType ?? 'application/json';
      const row = await store.createDelivery({
        deliveryId: opts.deliveryId ?? newId(),
        endpoint,
        event: event.event,
        eventCode: event.eventCode,
        tags: event.tags,
        body: encodeDeliveryBody(event.payload, contentType),
        sendsWhenDisabled: opts.regardless === true,
        createdAt: deps.clock(),
        firstAttemptAt: deps.businessClock(),
        ...(opts.feedback ? { feedbackUrl: opts.feedback.url, contentType } : {}),
      });
      bindLogIds({ delivery_id: row.delivery_id });
      // saved (committed): the dispatcher of this process sends it now; another process's finds it at its next poll
      wake();
      return row;
    },
  };
}

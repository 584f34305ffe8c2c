// The delivery engine: every outbound event becomes a delivery row (its body sealed) and a workflow
// `delivery:<delivery_id>` (src/workflows/webhooks.ts) that attempts it on the retry ladder. `deliver` is the one
// entry of every producer (through the webhook service); a failed delivery is sent again by `requeue` (same
// webhook-id, a new run); `recoverOrphans` starts the runs of deliveries saved by a process that died before
// starting them; `tellStopped` ends the runs of deliveries an endpoint's disabling stopped.
import type { Client } from '@temporalio/client';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { bindLogIds } from '../platform/observability/log-context.js';
import type { OperationLog } from '../platform/operation-log.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, type WorkflowRuntime } from '../platform/temporal/workflow-calls.js';
import {
  DELIVERY_WORKFLOW_TYPE,
  type DeliveryInput,
  deliveryWorkflowId,
  endpointDisabledSignal,
  type DeliveryWorkflow,
} from './contract.js';
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
   * When the workflow cannot be started now: false (the default) deletes the row and throws 9503, for a
   * caller that answers the merchant; true keeps the row `ready` for recoverOrphans and returns it, for a
   * producer whose event already happened (a charge, a message).
   */
  readonly keepIfNotStarted?: boolean;
  /**
   * The producer's own id for the delivery, derived from its event: a producer retried after a crash finds
   * the delivery it saved (and starts its run if it has none) instead of saving a second one.
   */
  readonly deliveryId?: string;
}

/** Deliveries recoverOrphans looks at: saved at least this long ago without a run. */
export const ORPHAN_AFTER_MS = 60_000;
/** 'doing' this long means the run that made the attempt is gone (an attempt takes 15 s at most). */
export const STUCK_DOING_AFTER_MS = 10 * 60_000;
const MAX_ORPHANS_PER_SWEEP = 500;

/** A failed delivery sent again: the same webhook-id, a new workflow run. */
export interface Requeued {
  readonly deliveryId: string;
  readonly url: string;
}

export interface DeliveryEngine {
  /**
   * Records a delivery of `event` to the endpoint and starts its workflow. Undefined when the endpoint has no URL,
   * is disabled, or is not subscribed to the event (unless `regardless`).
   */
  deliver(event: OutboundEvent, endpoint: EndpointRef, opts?: DeliverOptions): Promise<DeliveryRow | undefined>;
  /** A failed delivery sent again now: 9427 when it has not failed. */
  requeue(row: DeliveryRow): Promise<Requeued>;
  /** Tells the runs of deliveries the endpoint's disabling stopped to end now (their rows say failed). */
  tellStopped(deliveryIds: readonly string[]): Promise<void>;
  /**
   * Starts the run of every delivery that may have none (see WebhookStore.possiblyOrphaned); a run that
   * exists is left alone (same workflow id). Returns how many were looked at.
   */
  recoverOrphans(): Promise<number>;
}

export function createDeliveryEngine(deps: {
  readonly store: WebhookStore;
  readonly clock: () => Date;
  readonly workflows?: WorkflowRuntime;
  readonly workflowCallTimeoutMs?: number;
  /** where a producer's delivery that could not be queued yet is reported */
  readonly logger?: Pick<OperationLog, 'warn'>;
}): DeliveryEngine {
  const store = deps.store;
  const callTimeoutMs = deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;

  const client = (): Client => {
    if (!deps.workflows) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
    return deps.workflows.client;
  };

  /**
   * Starts `delivery:<id>`. 'new': a fresh delivery; 'replace': a manual retry replaces a run still winding
   * down after its delivery failed; 'recover': a run that exists is kept (a closed one may be followed).
   */
  const startRun = async (input: DeliveryInput, mode: 'new' | 'replace' | 'recover'): Promise<void> => {
    const c = client();
    try {
      await c.withDeadline(Date.now() + callTimeoutMs, () =>
        c.workflow.start<DeliveryWorkflow>(DELIVERY_WORKFLOW_TYPE, {
          workflowId: deliveryWorkflowId(input.deliveryId),
          taskQueue: deps.workflows!.taskQueue,
          args: [input],
          ...(mode === 'replace' ? { workflowIdConflictPolicy: 'TERMINATE_EXISTING' as const } : {}),
          ...(mode === 'recover' ? { workflowIdConflictPolicy: 'USE_EXISTING' as const } : {}),
        }),
      );
    } catch (cause) {
      throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The delivery could not be queued; retry later.', cause });
    }
  };

  const tellStopped = async (deliveryIds: readonly string[]) => {
    if (!deps.workflows || deliveryIds.length === 0) return;
    const c = deps.workflows.client;
    await Promise.all(
      deliveryIds.map((id) =>
        c.workflow
          .getHandle(deliveryWorkflowId(id))
          .signal(endpointDisabledSignal)
          .catch(() => undefined),
      ),
    );
  };

  const requeue = async (row: DeliveryRow): Promise<Requeued> => {
    const reopened = await store.reopenFailed(row.delivery_id);
    if (!reopened) throw new ApiError('WEBHOOK_DELIVERY_NOT_FAILED');
    const next = reopened.retry_count + 1;
    try {
      await startRun({ deliveryId: row.delivery_id, firstAttempt: next, lastAttempt: next }, 'replace');
    } catch (err) {
      await store.markFailed(row.delivery_id);
      throw err;
    }
    return { deliveryId: row.delivery_id, url: row.url };
  };

  return {
    requeue,
    tellStopped,
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
        const saved = await store.findDelivery(opts.deliveryId);
        if (saved) {
          // no attempt yet: its run may never have started (a run that exists is kept)
          if (saved.status === 'ready' && saved.retry_count === 0) {
            await startRun({ deliveryId: saved.delivery_id, firstAttempt: 1, lastAttempt: saved.max_retry }, 'recover');
          }
          return saved;
        }
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
        ...(opts.feedback ? { feedbackUrl: opts.feedback.url, contentType } : {}),
      });
      bindLogIds({ delivery_id: row.delivery_id });
      try {
        await startRun({ deliveryId: row.delivery_id, firstAttempt: 1, lastAttempt: row.max_retry }, 'new');
      } catch (err) {
        if (opts.keepIfNotStarted) {
          // the event happened: the row waits for recoverOrphans (at the next worker start, or its sweep)
          deps.logger?.warn({ delivery_id: row.delivery_id }, 'webhook delivery saved but not queued yet; it is recovered later');
          return row;
        }
        // never queued: the delivery did not happen
        await store.deleteDelivery(row.delivery_id);
        throw err;
      }
      return row;
    },

    async recoverOrphans() {
      // created_at is written with `clock` (the wall clock: the composition root gives the webhooks no other),
      // updated_at by the database's now(): each is compared with the clock that wrote it, so an advanced sandbox
      // clock neither hides a new orphan nor takes an attempt in progress for a stuck one
      const rows = await store.possiblyOrphaned(
        new Date(deps.clock().getTime() - ORPHAN_AFTER_MS),
        new Date(Date.now() - STUCK_DOING_AFTER_MS),
        MAX_ORPHANS_PER_SWEEP,
      );
      for (const row of rows) {
        const next = row.retry_count + 1;
        await startRun(
          { deliveryId: row.delivery_id, firstAttempt: next, lastAttempt: Math.max(row.max_retry, next) },
          'recover',
        );
      }
      return rows.length;
    },
  };
}

// Outbound webhooks: the messaging sub-service's configuration (read, save, secret rotation), the test
// send, the delivery history, manual retry and replay — and `deliver`, the one entry every producer of
// outbound events calls (message events now; escrow, recurring charges and feedback_url next). Each
// delivery is a workflow `delivery:<delivery_id>` (src/workflows/delivery.ts).
import type { Client } from '@temporalio/client';
import { DELIVERY_WORKFLOW_TYPE, type DeliveryInput, deliveryWorkflowId, endpointDisabledSignal } from '../contracts/webhooks.js';
import { assertOwnedBy } from '../domain/access.js';
import { ApiError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import {
  type DeliveryView,
  type OutboundEvent,
  type PageQuery,
  parseReplaySince,
  parseWebhookConfigChange,
  SECRET_OVERLAP_MS,
  testMessageEvent,
  type UrlPolicy,
  type WebhookConfigView,
} from '../domain/webhooks.js';
import type { Stores } from '../store/index.js';
import type { Project } from '../store/projects.js';
import type { DeliveryRow, EndpointKind } from '../store/webhooks.js';
import { checkDestination, type Resolver } from '../webhooks/http.js';
import { newSigningSecret } from '../webhooks/signing.js';
import type { deliveryWorkflow } from '../workflows/delivery.js';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS, type WorkflowRuntime } from './verifications.js';

/** Whose webhook an event goes to. */
export interface EndpointRef {
  readonly kind: EndpointKind;
  readonly applicationId: string;
}

export interface DeliverOptions {
  /** sent even when the endpoint is disabled or not subscribed to the event (the test send) */
  readonly regardless?: boolean;
}

/** A failed delivery sent again: the same webhook-id, a new workflow run. */
export interface Requeued {
  readonly deliveryId: string;
  readonly url: string;
}

/** At most this many failed deliveries are re-sent by one replay call; calling again continues. */
export const MAX_REPLAY = 1000;
const MAX_DELIVERY_ID_LENGTH = 100;
const MESSAGE: EndpointKind = 'message';

export interface WebhookService {
  config(project: Project): Promise<WebhookConfigView>;
  /** PUT: the body checked whole (3028 for a URL, 9400 otherwise) before anything is written. */
  save(project: Project, body: unknown): Promise<WebhookConfigView>;
  /** The configuration with the new secret; the previous one signs beside it for 24 hours. */
  rotateSecret(project: Project): Promise<WebhookConfigView>;
  /** The 301 test card, sent whatever `enabled` and `events` say; 3029 without a stored URL. */
  sendTest(project: Project): Promise<Requeued>;
  deliveries(project: Project, page: PageQuery): Promise<{ rows: DeliveryView[]; count: number }>;
  retry(project: Project, deliveryId: string): Promise<Requeued>;
  /** Every failed delivery created since `body.since` (at most MAX_REPLAY per call), sent again. */
  replay(project: Project, body: unknown): Promise<Requeued[]>;
  /**
   * The delivery engine's one entry: records a delivery of `event` to the endpoint and starts its workflow.
   * Undefined when the endpoint has no URL, is disabled, or is not subscribed to the event (unless `regardless`).
   */
  deliver(event: OutboundEvent, endpoint: EndpointRef, opts?: DeliverOptions): Promise<DeliveryRow | undefined>;
}

export function createWebhookService(deps: {
  readonly stores: Pick<Stores, 'webhooks'>;
  readonly clock: () => Date;
  /** sandbox mode: http to loopback receivers is allowed */
  readonly sandbox: boolean;
  readonly workflows?: WorkflowRuntime;
  readonly workflowCallTimeoutMs?: number;
  /** the save-time DNS lookup (tests inject one) */
  readonly resolve?: Resolver;
}): WebhookService {
  const store = deps.stores.webhooks;
  const policy: UrlPolicy = { sandbox: deps.sandbox };
  const callTimeoutMs = deps.workflowCallTimeoutMs ?? DEFAULT_WORKFLOW_CALL_TIMEOUT_MS;

  const client = (): Client => {
    if (!deps.workflows) throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The workflow engine is not configured.' });
    return deps.workflows.client;
  };

  const startRun = async (input: DeliveryInput, replacing: boolean): Promise<void> => {
    const c = client();
    try {
      await c.withDeadline(Date.now() + callTimeoutMs, () =>
        c.workflow.start<typeof deliveryWorkflow>(DELIVERY_WORKFLOW_TYPE, {
          workflowId: deliveryWorkflowId(input.deliveryId),
          taskQueue: deps.workflows!.taskQueue,
          args: [input],
          // a manual retry replaces a run that is still winding down after its delivery failed
          ...(replacing ? { workflowIdConflictPolicy: 'TERMINATE_EXISTING' as const } : {}),
        }),
      );
    } catch (cause) {
      throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The delivery could not be queued; retry later.', cause });
    }
  };

  /** Tells the runs of deliveries the endpoint's disabling stopped to end now (their rows say failed). */
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
      await startRun({ deliveryId: row.delivery_id, firstAttempt: next, lastAttempt: next }, true);
    } catch (err) {
      await store.markFailed(row.delivery_id);
      throw err;
    }
    return { deliveryId: row.delivery_id, url: row.url };
  };

  const service: WebhookService = {
    async config(project) {
      return store.configView(await store.findEndpoint(project.application_id, MESSAGE));
    },

    async save(project, body) {
      const change = parseWebhookConfigChange(body);
      if (change.url !== undefined) {
        const checked = await checkDestination(change.url, policy, deps.resolve);
        if ('reason' in checked) throw new ApiError('WEBHOOK_URL_INVALID', { payloadMessage: checked.reason });
      }
      const { endpoint, disabled } = await store.saveEndpoint(
        project.application_id,
        MESSAGE,
        change,
        newSigningSecret(),
        newId(),
      );
      if (disabled) await tellStopped(await store.stopPending(endpoint.endpoint_id));
      return store.configView(endpoint);
    },

    async rotateSecret(project) {
      const until = new Date(deps.clock().getTime() + SECRET_OVERLAP_MS);
      return store.configView(await store.rotateSecret(project.application_id, MESSAGE, newSigningSecret(), until, newId()));
    },

    async sendTest(project) {
      const endpoint = await store.findEndpoint(project.application_id, MESSAGE);
      if (!endpoint?.url) throw new ApiError('WEBHOOK_NOT_CONFIGURED');
      const row = await service.deliver(
        testMessageEvent(`test_${newId()}`),
        { kind: MESSAGE, applicationId: project.application_id },
        {
          regardless: true,
        },
      );
      if (!row) throw new ApiError('WEBHOOK_NOT_CONFIGURED');
      return { deliveryId: row.delivery_id, url: row.url };
    },

    async deliveries(project, page) {
      const endpoint = await store.findEndpoint(project.application_id, MESSAGE);
      if (!endpoint) return { rows: [], count: 0 };
      return store.listDeliveries(endpoint.endpoint_id, page.page, page.per);
    },

    async retry(project, deliveryId) {
      if (deliveryId.length > MAX_DELIVERY_ID_LENGTH) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND');
      const row = await store.findDelivery(deliveryId);
      if (!row) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND');
      assertOwnedBy(project, row.application_id);
      return requeue(row);
    },

    async replay(project, body) {
      const since = parseReplaySince(body);
      const endpoint = await store.findEndpoint(project.application_id, MESSAGE);
      if (!endpoint) return [];
      const requeued: Requeued[] = [];
      for (const row of await store.failedSince(endpoint.endpoint_id, since, MAX_REPLAY)) {
        try {
          requeued.push(await requeue(row));
        } catch (err) {
          // retried meanwhile by another call: not this call's to send
          if (err instanceof ApiError && err.errorCode === 'WEBHOOK_DELIVERY_NOT_FAILED') continue;
          throw err;
        }
      }
      return requeued;
    },

    async deliver(event, ref, opts = {}) {
      const endpoint = await store.findEndpoint(ref.applicationId, ref.kind);
      if (!endpoint?.url) return undefined;
      if (!opts.regardless && (!endpoint.enabled || !endpoint.events.includes(event.eventCode))) return undefined;
      const row = await store.createDelivery({
        deliveryId: newId(),
        endpoint,
        event: event.event,
        eventCode: event.eventCode,
        tags: event.tags,
        body: JSON.stringify(event.payload),
        sendsWhenDisabled: opts.regardless === true,
        createdAt: deps.clock(),
      });
      try {
        await startRun({ deliveryId: row.delivery_id, firstAttempt: 1, lastAttempt: row.max_retry }, false);
      } catch (err) {
        // never queued: the delivery did not happen
        await store.deleteDelivery(row.delivery_id);
        throw err;
      }
      return row;
    },
  };
  return service;
}

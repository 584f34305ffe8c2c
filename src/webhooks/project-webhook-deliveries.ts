// The deliveries of the project's own notifications (to its webhook_url and to charges' feedback_url) as the admin
// API shows them, and a manual retry of a failed one.
import { ApiError } from '../platform/errors.js';
import type { Requeued } from './delivery-engine.js';
import type { DeliveryView, ProjectDeliveryQuery } from './rules.js';
import { MAX_DELIVERY_ID_LENGTH, PROJECT, type WebhookServiceContext } from './service-context.js';

export async function projectDeliveries(
  ctx: WebhookServiceContext,
  applicationId: string,
  query: ProjectDeliveryQuery,
): Promise<{ rows: DeliveryView[]; count: number }> {
  const { store } = ctx;
  if (!(await store.projectExists(applicationId))) throw new ApiError('PROJECT_NOT_FOUND');
  const endpoint = await store.findEndpoint(applicationId, PROJECT);
  if (!endpoint) return { rows: [], count: 0 };
  const destination = query.destination === undefined ? undefined : query.destination === 'feedback' ? 'feedback' : 'endpoint';
  return store.listDeliveries(endpoint.endpoint_id, query.page, query.per, destination);
}

export async function retryProjectDelivery(
  ctx: WebhookServiceContext,
  applicationId: string,
  deliveryId: string,
): Promise<Requeued> {
  const { store } = ctx;
  if (!(await store.projectExists(applicationId))) throw new ApiError('PROJECT_NOT_FOUND');
  if (deliveryId.length > MAX_DELIVERY_ID_LENGTH) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND');
  const [row, endpoint] = await Promise.all([store.findDelivery(deliveryId), store.findEndpoint(applicationId, PROJECT)]);
  // another project's delivery, or this project's messaging webhook's, is not found here
  if (!row || !endpoint || row.endpoint_id !== endpoint.endpoint_id) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND');
  return ctx.engine.requeue(row);
}

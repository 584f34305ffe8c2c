// The messaging webhook's deliveries: the test send, the delivery history, a manual retry of one failed delivery and
// the replay of those failed since a date.
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { assertOwnedBy } from '../projects/access.js';
import type { Project } from '../projects/index.js';
import type { Requeued } from './delivery-engine.js';
import { type DeliveryView, type PageQuery, testMessageEvent } from './rules.js';
import { MAX_DELIVERY_ID_LENGTH, MESSAGE, type WebhookServiceContext } from './service-context.js';

/** The 301 test card, sent whatever `enabled` and `events` say; 3029 without a stored URL. */
export async function sendMessageWebhookTest(ctx: WebhookServiceContext, project: Project): Promise<Requeued> {
  const endpoint = await ctx.store.findEndpoint(project.application_id, MESSAGE);
  if (!endpoint?.url) throw new ApiError('WEBHOOK_NOT_CONFIGURED');
  const row = await ctx.engine.deliver(
    testMessageEvent(`test_${newId()}`),
    { kind: MESSAGE, applicationId: project.application_id },
    {
      regardless: true,
    },
  );
  if (!row) throw new ApiError('WEBHOOK_NOT_CONFIGURED');
  return { deliveryId: row.delivery_id, url: row.url };
}

export async function messageDeliveries(
  ctx: WebhookServiceContext,
  project: Project,
  page: PageQuery,
): Promise<{ rows: DeliveryView[]; count: number }> {
  const endpoint = await ctx.store.findEndpoint(project.application_id, MESSAGE);
  if (!endpoint) return { rows: [], count: 0 };
  return ctx.store.listDeliveries(endpoint.endpoint_id, page.page, page.per);
}

export async function retryMessageDelivery(ctx: WebhookServiceContext, project: Project, deliveryId: string): Promise<Requeued> {
  if (deliveryId.length > MAX_DELIVERY_ID_LENGTH) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND');
  const row = await ctx.store.findDelivery(deliveryId);
  if (!row) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND');
  assertOwnedBy(project, row.application_id);
  return ctx.engine.requeue(row);
}

/** Every failed delivery created since `since` (at most `limit` per call), sent again. */
export async function replayFailedDeliveries(
  ctx: WebhookServiceContext,
  project: Project,
  since: Date,
  limit: number,
): Promise<Requeued[]> {
  const endpoint = await ctx.store.findEndpoint(project.application_id, MESSAGE);
  if (!endpoint) return [];
  const requeued: Requeued[] = [];
  for (const row of await ctx.store.failedSince(endpoint.endpoint_id, since, limit)) {
    try {
      requeued.push(await ctx.engine.requeue(row));
    } catch (err) {
      // retried meanwhile by another call: not this call's to send
      if (err instanceof ApiError && err.errorCode === 'WEBHOOK_DELIVERY_NOT_FAILED') continue;
      throw err;
    }
  }
  return requeued;
}

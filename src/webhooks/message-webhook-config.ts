// The messaging webhook's configuration: read, saved (the whole body checked before anything is written) and its
// signing secret rotated.
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Project } from '../projects/index.js';
import { checkDestination } from './http-client.js';
import { SECRET_OVERLAP_MS, type WebhookConfigChange, type WebhookConfigView } from './rules.js';
import { MESSAGE, type WebhookServiceContext } from './service-context.js';
import { newSigningSecret } from './signing.js';

export async function messageWebhookConfig(ctx: WebhookServiceContext, project: Project): Promise<WebhookConfigView> {
  return ctx.store.configView(await ctx.store.findEndpoint(project.application_id, MESSAGE));
}

/** PUT: a URL is checked (3028) before anything is written; switching the endpoint off stops its waiting deliveries. */
export async function saveMessageWebhook(
  ctx: WebhookServiceContext,
  project: Project,
  change: WebhookConfigChange,
): Promise<WebhookConfigView> {
  const { store } = ctx;
  if (change.url !== undefined) {
    const checked = await checkDestination(change.url, ctx.policy, ctx.resolve);
    if ('reason' in checked) throw new ApiError('WEBHOOK_URL_INVALID', { payloadMessage: checked.reason });
  }
  const { endpoint, disabled } = await store.saveEndpoint(project.application_id, MESSAGE, change, newSigningSecret(), newId());
  // its waiting deliveries end failed (a row in flight is settled by its attempt's record)
  if (disabled) await store.stopPending(endpoint.endpoint_id);
  return store.configView(endpoint);
}

/** The configuration with the new secret; the previous one signs beside it for SECRET_OVERLAP_MS. */
export async function rotateMessageWebhookSecret(ctx: WebhookServiceContext, project: Project): Promise<WebhookConfigView> {
  const until = new Date(ctx.clock().getTime() + SECRET_OVERLAP_MS);
  return ctx.store.configView(await ctx.store.rotateSecret(project.application_id, MESSAGE, newSigningSecret(), until, newId()));
}

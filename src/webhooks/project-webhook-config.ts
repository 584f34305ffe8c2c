// The project's webhook_url as the admin API sets it: checked, saved or cleared, and its signing secret (which also
// signs the project's feedback_url deliveries) rotated.
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { ProjectWebhooks } from '../projects/index.js';
import { checkDestination } from './http-client.js';
import { SECRET_OVERLAP_MS } from './rules.js';
import { PROJECT, type WebhookServiceContext } from './service-context.js';
import { newSigningSecret } from './signing.js';

/** 3028 naming webhook_url and the reason; nothing is written. */
export async function checkProjectUrl(ctx: WebhookServiceContext, url: string): Promise<void> {
  const checked = await checkDestination(url, ctx.policy, ctx.resolve);
  if ('reason' in checked) throw new ApiError('WEBHOOK_URL_INVALID', { payloadMessage: `webhook_url: ${checked.reason}` });
}

/** The signing secret when this call issued it (the first URL), else undefined. */
export async function setProjectUrl(
  ctx: WebhookServiceContext,
  applicationId: string,
  url: string | null,
): Promise<string | undefined> {
  const { store } = ctx;
  if (url === null) {
    // nothing to clear on a project that never had an endpoint
    if (!(await store.findEndpoint(applicationId, PROJECT))) return undefined;
    await store.saveEndpoint(applicationId, PROJECT, { url: null }, newSigningSecret(), newId());
    return undefined;
  }
  await checkProjectUrl(ctx, url);
  const saved = await store.saveEndpoint(applicationId, PROJECT, { url, enabled: true }, newSigningSecret(), newId());
  return saved.issuedSecret;
}

export async function rotateProjectSecret(
  ctx: WebhookServiceContext,
  applicationId: string,
): ReturnType<ProjectWebhooks['rotateProjectSecret']> {
  const until = new Date(ctx.clock().getTime() + SECRET_OVERLAP_MS);
  const endpoint = await ctx.store.rotateSecret(applicationId, PROJECT, newSigningSecret(), until, newId());
  const view = ctx.store.configView(endpoint);
  return {
    secret: view.secret!,
    ...(endpoint.previous_secret_expires_at ? { previousSecretExpiresAt: endpoint.previous_secret_expires_at } : {}),
  };
}

// The upstream connector: a project's provider configuration on the admin API (Authorization: Bearer ADMIN_TOKEN).
// PUT stores it (the provider's secret key sealed, shown masked from then on), GET shows it with the address to
// register at the provider as the project's webhook URL, DELETE makes the project's PGs local ones again. And the
// provider's notifications at that URL (no paygate credentials: nothing in them is trusted, the provider is asked).
import fastifyFormbody from '@fastify/formbody';
import type { FastifyPluginAsync } from 'fastify';
import { RATE_LIMITS } from '../rate-limits.js';
import { validate } from '../../platform/validation.js';
import { applicationIdParams } from '../params.js';

export const upstreamRoutes: FastifyPluginAsync = async (app) => {
  const upstream = app.deps.services.upstream;
  const adminConfig = { auth: 'admin' } as const;

  app.put('/admin/v1/projects/:application_id/upstream', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    const configured = await upstream.configure(application_id, request.body ?? {});
    // the base_url and PG names are configuration, not secrets; the keys are never logged
    request.log.info({ application_id, base_url: configured.base_url, pgs: configured.pgs }, 'project upstream configured');
    return configured;
  });

  app.get('/admin/v1/projects/:application_id/upstream', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    return upstream.get(application_id);
  });

  app.delete('/admin/v1/projects/:application_id/upstream', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    const removed = await upstream.remove(application_id);
    request.log.info({ application_id }, 'project upstream removed');
    return removed;
  });

  // JSON or form bodies, as providers send them; each notification costs a call to the provider: limited per IP
  await app.register(async (notifications) => {
    await notifications.register(fastifyFormbody);
    const { perIpAndProject, windowMs } = RATE_LIMITS.upstreamNotifications;
    notifications.post(
      '/upstream/v1/notifications/:application_id',
      {
        config: {
          auth: 'none',
          rateLimit: {
            max: perIpAndProject,
            timeWindow: windowMs,
            keyGenerator: (request) => `${request.ip} ${String((request.params as { application_id?: unknown }).application_id)}`,
          },
        },
      },
      async (request) => {
        const { application_id } = validate(applicationIdParams, request.params);
        const handled = await app.deps.services.providerNotifications.handle(application_id, request.body ?? {});
        request.log.info({ application_id, receipt_id: handled.receipt_id, outcome: handled.outcome }, 'provider notification');
        return { received: true, ...handled };
      },
    );
  });
};

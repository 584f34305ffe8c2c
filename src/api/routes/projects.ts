// Projects: the admin API (Authorization: Bearer ADMIN_TOKEN) creates, changes and reads projects, rotates their
// keys and their webhook signing secret; secrets (secret_key, private_key, webhook_secret) are returned once, by
// the create, rotate and (for the first webhook_url) update calls. And the legacy access token:
// POST /v2/request/token {application_id, private_key} -> {access_token, expired_at, expire_in}, accepted as
// `Authorization: Bearer <token>` for 30 minutes, throttled per IP (every request) and, for wrong private keys
// and unknown applications, per IP and per application_id.
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../platform/errors.js';
import { validate } from '../../platform/validation.js';
import { applicationIdParams } from '../params.js';
import { parseProjectDeliveryQuery, renderProjectDelivery } from '../../webhooks/rules.js';
import {
  keyRotationSchema,
  projectCreateSchema,
  projectPatchSchema,
  renderProject,
  tokenRequestSchema,
} from '../../projects/index.js';
import { RATE_LIMITS } from '../rate-limits.js';

export const projectRoutes: FastifyPluginAsync = async (app) => {
  const { perIp, windowMs } = RATE_LIMITS.tokenRequests;
  app.post(
    '/v2/request/token',
    { config: { auth: 'none', rateLimit: { max: perIp, timeWindow: windowMs } } },
    async (request, reply) => {
      const body = validate(tokenRequestSchema, request.body ?? {});
      await app.throttles.token.check(request, reply, body.application_id);
      try {
        return await app.deps.services.accessTokens.issue(body.application_id, body.private_key, request.ip);
      } catch (err) {
        if (err instanceof ApiError && (err.errorCode === 'APP_SK_NOT_MATCHED' || err.errorCode === 'APP_CLIENT_KEY_NOT_FOUND')) {
          await app.throttles.token.fail(request, body.application_id);
        }
        throw err;
      }
    },
  );

  const projects = app.deps.services.projects;
  const adminConfig = { auth: 'admin' } as const;

  app.post('/admin/v1/projects', { config: adminConfig }, async (request, reply) => {
    const input = validate(projectCreateSchema, request.body ?? {});
    const { project, secrets } = await projects.create(input);
    request.log.info({ application_id: project.application_id }, 'project created');
    return reply.code(201).send({ ...renderProject(project), ...secrets });
  });

  app.patch('/admin/v1/projects/:application_id', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    const patch = validate(projectPatchSchema, request.body ?? {});
    const { project, webhookSecret } = await projects.update(application_id, patch);
    request.log.info({ application_id }, 'project updated');
    return { ...renderProject(project), ...(webhookSecret ? { webhook_secret: webhookSecret } : {}) };
  });

  app.get('/admin/v1/projects/:application_id', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    return renderProject(await projects.get(application_id));
  });

  // New secret and private keys; the old ones work for grace_hours more (default 24); tokens revoked.
  app.post('/admin/v1/projects/:application_id/keys/rotate', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    const input = validate(keyRotationSchema, request.body ?? {});
    const rotated = await projects.rotateKeys(application_id, input);
    request.log.info({ application_id, grace_hours: input.grace_hours }, 'project keys rotated');
    return rotated;
  });

  // A new signing secret for webhook_url and feedback_url deliveries; the previous one signs 24 h more.
  app.post('/admin/v1/projects/:application_id/webhook/secret', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    const rotated = await projects.rotateWebhookSecret(application_id);
    request.log.info({ application_id }, 'project webhook secret rotated');
    return rotated;
  });

  // The deliveries of the project's own notifications (webhook_url, feedback_url), as the messaging API lists its own.
  app.get('/admin/v1/projects/:application_id/webhook/deliveries', { config: adminConfig }, async (request) => {
    const { application_id } = validate(applicationIdParams, request.params);
    const query = parseProjectDeliveryQuery(request.query);
    const { rows, count } = await app.deps.services.webhooks.projectDeliveries(application_id, query);
    return { list: rows.map(renderProjectDelivery), page: query.page, per: query.per, count };
  });

  // One more attempt of a failed delivery now, under the same webhook-id (a new run of its workflow).
  app.post<{ Params: { application_id: string; delivery_id: string } }>(
    '/admin/v1/projects/:application_id/webhook/deliveries/:delivery_id/retry',
    { config: adminConfig },
    async (request) => {
      const { application_id } = validate(applicationIdParams, { application_id: request.params.application_id });
      const queued = await app.deps.services.webhooks.retryProjectDelivery(application_id, request.params.delivery_id);
      request.log.info({ application_id, delivery_id: queued.deliveryId }, 'project webhook delivery retried');
      return { delivery_id: queued.deliveryId, url: queued.url, queued: true };
    },
  );

  app.get('/admin/v1/projects', { config: adminConfig }, async () => {
    const list = await projects.list();
    return { list: list.map(renderProject), count: list.length };
  });
};

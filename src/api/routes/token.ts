// Legacy: POST /v2/request/token {application_id, private_key} -> {access_token, expired_at, expire_in}.
// The token is accepted as `Authorization: Bearer <token>` for 30 minutes.
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { validate } from '../../domain/validation.js';

const tokenRequestSchema = z.object({
  application_id: z.string().trim().min(1).max(100),
  private_key: z.string().min(1).max(200),
});

export const tokenRoutes: FastifyPluginAsync = async (app) => {
  app.post('/v2/request/token', { config: { auth: 'none' } }, async (request) => {
    const body = validate(tokenRequestSchema, request.body ?? {});
    return app.deps.services.accessTokens.issue(body.application_id, body.private_key, request.ip);
  });
};

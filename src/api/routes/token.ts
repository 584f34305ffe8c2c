// Legacy: POST /v2/request/token {application_id, private_key} -> {access_token, expired_at, expire_in}.
// The token is accepted as `Authorization: Bearer <token>` for 30 minutes. Throttled per IP (every
// request) and, for wrong private keys and unknown applications, per IP and per application_id.
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../platform/errors.js';
import { validate } from '../../platform/validation.js';
import { RATE_LIMITS } from '../rate-limits.js';

const tokenRequestSchema = z.object({
  application_id: z.string().trim().min(1).max(100),
  private_key: z.string().min(1).max(200),
});

export const tokenRoutes: FastifyPluginAsync = async (app) => {
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
};

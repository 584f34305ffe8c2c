// Legacy: POST /v2/request/token {application_id, private_key} -> {access_token, expired_at, expire_in}.
// The token is accepted as `Authorization: Bearer <token>` for 30 minutes.
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../../domain/errors.js';
import { secretMatches } from '../../domain/ids.js';
import { formatTimestamp } from '../../domain/time.js';
import { ACCESS_TOKEN_TTL_MINUTES, issueAccessToken } from '../../store/access-tokens.js';
import { findProjectById } from '../../store/projects.js';
import { assertIpAllowed, keyExpired } from '../auth.js';
import { validate } from '../errors.js';

const tokenRequestSchema = z.object({
  application_id: z.string().trim().min(1).max(100),
  private_key: z.string().min(1).max(200),
});

export const tokenRoutes: FastifyPluginAsync = async (app) => {
  app.post('/v2/request/token', { config: { auth: 'none' } }, async (request) => {
    const body = validate(tokenRequestSchema, request.body ?? {});
    const { db } = app.deps.database;
    const project = await findProjectById(db, body.application_id);
    if (!project) throw new ApiError('APP_CLIENT_KEY_NOT_FOUND');
    if (!secretMatches(body.private_key, project.private_key_hash)) throw new ApiError('APP_SK_NOT_MATCHED');
    assertIpAllowed(project, request.ip);
    const now = app.deps.clock();
    if (keyExpired(project, now)) throw new ApiError('APP_KEY_CHAIN_EXPIRED');
    const { accessToken, expiresAt } = await issueAccessToken(db, project.application_id, now);
    return {
      access_token: accessToken,
      expired_at: formatTimestamp(expiresAt),
      expire_in: ACCESS_TOKEN_TTL_MINUTES * 60,
    };
  });
};

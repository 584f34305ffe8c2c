// Legacy access tokens: POST /v2/request/token trades (application_id, private_key) for a 30-minute
// Bearer token.
import { z } from 'zod';
import { assertIpAllowed, keyExpired } from './access.js';
import { ApiError } from '../platform/errors.js';
import { keyAccepted } from './key-rotation.js';
import { formatTimestamp } from '../platform/time.js';
import { ACCESS_TOKEN_TTL_MINUTES } from './access-tokens-store.js';
import { projectKey } from './store.js';
import type { AccessTokenStore } from './access-tokens-store.js';
import type { ProjectStore } from './store.js';

/** The body of POST /v2/request/token: validates it (9400) and is its documentation. */
export const tokenRequestSchema = z.object({
  application_id: z.string().trim().min(1).max(100),
  private_key: z.string().min(1).max(200),
});

export interface AccessTokenGrant {
  readonly access_token: string;
  readonly expired_at: string;
  readonly expire_in: number;
}

export interface AccessTokenService {
  /** 1216 unknown application, 1204 wrong private key, 1203 source IP, 1224 key expired. */
  issue(applicationId: string, privateKey: string, sourceIp: string): Promise<AccessTokenGrant>;
}

export function createAccessTokenService(deps: {
  readonly stores: { readonly projects: ProjectStore; readonly accessTokens: AccessTokenStore };
  readonly clock: () => Date;
}): AccessTokenService {
  return {
    async issue(applicationId, privateKey, sourceIp) {
      const project = await deps.stores.projects.findById(applicationId);
      if (!project) throw new ApiError('APP_CLIENT_KEY_NOT_FOUND');
      const now = deps.clock();
      // the private key before a rotation works until the end of its grace period
      if (!keyAccepted(privateKey, projectKey(project, 'private'), now)) throw new ApiError('APP_SK_NOT_MATCHED');
      assertIpAllowed(project, sourceIp);
      if (keyExpired(project, now)) throw new ApiError('APP_KEY_CHAIN_EXPIRED');
      const { accessToken, expiresAt } = await deps.stores.accessTokens.issue(project.application_id, now);
      return {
        access_token: accessToken,
        expired_at: formatTimestamp(expiresAt),
        expire_in: ACCESS_TOKEN_TTL_MINUTES * 60,
      };
    },
  };
}

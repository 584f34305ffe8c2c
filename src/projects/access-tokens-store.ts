// Legacy Bearer access tokens (POST /v2/request/token). Only the SHA-256 of a token is stored.
import type { Kysely } from 'kysely';
import { hashSecret, newSecret } from '../platform/ids.js';
import { addMinutes } from '../platform/time.js';
import type { Tables } from '../platform/db/migrations/index.js';
import type { ProjectRow } from './store.js';

export const ACCESS_TOKEN_TTL_MINUTES = 30;

export interface AccessTokenStore {
  issue(applicationId: string, now: Date): Promise<{ accessToken: string; expiresAt: Date }>;
  /** The project of a token that is still valid at `now`. Lookup by digest: the digest is the key. */
  findProject(accessToken: string, now: Date): Promise<ProjectRow | undefined>;
}

export function createAccessTokenStore(db: Kysely<Tables>): AccessTokenStore {
  return {
    async issue(applicationId, now) {
      const accessToken = newSecret(32);
      const expiresAt = addMinutes(now, ACCESS_TOKEN_TTL_MINUTES);
      await db
        .insertInto('access_tokens')
        .values({ token_hash: hashSecret(accessToken), application_id: applicationId, expires_at: expiresAt, created_at: now })
        .execute();
      // expired tokens are useless; drop them opportunistically so the table stays small
      await db.deleteFrom('access_tokens').where('expires_at', '<', addMinutes(now, -ACCESS_TOKEN_TTL_MINUTES)).execute();
      return { accessToken, expiresAt };
    },

    async findProject(accessToken, now) {
      return db
        .selectFrom('access_tokens')
        .innerJoin('projects', 'projects.application_id', 'access_tokens.application_id')
        .selectAll('projects')
        .where('access_tokens.token_hash', '=', hashSecret(accessToken))
        .where('access_tokens.expires_at', '>', now)
        .executeTakeFirst();
    },
  };
}

// What the dashboard takes from the API that mounts it (src/api/app.ts hands these in): the API's own error mapping and
// credential checks (src/api/errors.ts, src/api/auth.ts), so a sign-in is checked and throttled exactly as an API call
// is, and a refused action reads as the API's refusal. Handed in, not imported: the API registers the dashboard, so the
// dashboard importing the API would tie the two layers in a circle.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiError } from '../platform/errors.js';
import type { Project } from '../projects/index.js';

export interface ApiChecks {
  /** anything thrown in a request as the catalog error it answers with */
  readonly toApiError: (error: unknown, request: FastifyRequest) => ApiError;
  /** the admin token presented in a form, checked and throttled as the Bearer header is */
  readonly verifyAdminToken: (
    app: FastifyInstance,
    request: FastifyRequest,
    reply: FastifyReply,
    presented: string,
  ) => Promise<void>;
  /** a project's keys presented in a form, checked as Basic authentication checks them; `currentKeyOnly` refuses a replaced key */
  readonly authenticateKeys: (
    app: FastifyInstance,
    request: FastifyRequest,
    reply: FastifyReply,
    clientKey: string,
    secretKey: string,
    opts?: { readonly currentKeyOnly?: boolean },
  ) => Promise<Project>;
}

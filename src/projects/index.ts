// The projects area's public module: what other areas and the layers above (authentication, routes, the
// dashboard, the composition root, the CLI) may use of it. Its pure rules (access.ts, key-rotation.ts,
// scopes.ts) are imported where they stand: they are workflow-safe, and this module pulls in the stores and
// the services.
export { createAccessTokenService, type AccessTokenService, tokenRequestSchema } from './access-tokens.js';
export { createAccessTokenStore, type AccessTokenStore } from './access-tokens-store.js';
export { projectsHttp } from './http.js';
export {
  createProjectService,
  DEFAULT_ESCROW_RECONCILE_HOURS,
  DEFAULT_KEY_GRACE_HOURS,
  keyRotationSchema,
  MAX_ESCROW_RECONCILE_HOURS,
  projectCreateSchema,
  projectPatchSchema,
  type ProjectService,
  type ProjectSessions,
  type ProjectWebhooks,
  renderProject,
} from './service.js';
export {
  createProjectStore,
  type Project,
  type ProjectRow,
  type ProjectStore,
  projectKey,
  toProject,
} from './store.js';

// Authentication of main-API, message-service and admin calls. A route declares what it needs in
// its config: `{ auth: 'project' }` (the default), `{ auth: 'admin' }` or `{ auth: 'none' }`, plus
// optionally `scope` and `sellerOnly`, and `adminToo` on a project route the admin token opens as well (a read of
// installation-wide state: the sandbox clock). The onRequest hook below enforces it before the body is
// even parsed, and sets `request.project` for project routes (not for the admin token on an `adminToo` route).
// Time is the wall clock (Clocks.wallClock): a sandbox clock advance expires no token and ends no grace period.
//
// Order of checks for a project route (first failure wins):
//   header missing 1206 -> not Basic/Bearer or undecodable 1205 -> Basic: client key unknown 1216,
//   secret wrong 1204 / Bearer: token unknown or expired 9403 -> source IP not allowed 1203 ->
//   key validity passed: 1218 on a route that checks a scope, else 1224 -> scope (Basic and Bearer
//   alike: a token carries its project's scopes): key without any scope 1221, scope not granted 1222
//   -> seller-only route and not a seller 600. The one exemption is the spec's: a route flagged
//   `bearerWithoutScope` (shipping start) accepts a Bearer token whatever the project's scopes.
//
// Failed authentications (1204, 1216, 9403; a wrong admin token) are counted per source IP and per
// client key (src/api/rate-limits.ts); past the limit the caller gets 9429 before any key is checked.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../platform/errors.js';
import { secretMatches } from '../platform/ids.js';
import { assertIpAllowed, keyExpired } from '../projects/access.js';
import { keyAccepted } from '../projects/key-rotation.js';
import type { Scope } from '../projects/scopes.js';
import { projectKey, toProject, type Project, type ProjectRow } from '../projects/index.js';
import type { FieldErrors } from '../platform/validation.js';
import { registerRateLimits } from './rate-limits.js';

export type AuthRequirement = 'project' | 'admin' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** who may call the route; 'project' when omitted */
    auth?: AuthRequirement;
    /** the scope the key (Basic or Bearer) must hold; every project route declares one */
    scope?: Scope;
    /** the spec's exemption for shipping start: a Bearer token passes without the scope */
    bearerWithoutScope?: boolean;
    /**
     * A project route (auth 'project') that `Bearer ADMIN_TOKEN` opens too; its handler reads no `request.project`.
     * Any other Bearer value is a project's access token, checked as on every project route; an unknown one counts
     * against the admin throttle as well (it may be a guess at the admin token).
     */
    adminToo?: boolean;
    /** API_ONLY_SELLER (600) for non-seller projects */
    sellerOnly?: boolean;
    /** how schema validation failures of this route map to catalog codes */
    fieldErrors?: FieldErrors;
  }
  interface FastifyRequest {
    /** the authenticated project; reading it on a route without project auth throws INTERNAL_ERROR */
    readonly project: Project;
    /** how the project authenticated */
    readonly authMethod: 'basic' | 'bearer' | 'admin' | undefined;
  }
}

interface AuthState {
  project: Project;
  method: 'basic' | 'bearer';
}

const authStates = new WeakMap<FastifyRequest, AuthState>();
const adminRequests = new WeakSet<FastifyRequest>();

function parseAuthorization(
  header: string | undefined,
): { kind: 'basic'; clientKey: string; secretKey: string } | { kind: 'bearer'; token: string } {
  if (header === undefined || header.trim() === '') throw new ApiError('APP_AT_AUTHORIZE_HEADER_BLANK');
  const match = /^(\S+)\s+(\S+)\s*$/.exec(header.trim());
  if (!match) throw new ApiError('APP_AT_AUTHORIZE_TYPE_INVALID');
  const scheme = match[1]!.toLowerCase();
  const value = match[2]!;
  if (scheme === 'bearer') return { kind: 'bearer', token: value };
  if (scheme !== 'basic') throw new ApiError('APP_AT_AUTHORIZE_TYPE_INVALID');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value)) throw new ApiError('APP_AT_AUTHORIZE_TYPE_INVALID');
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new ApiError('APP_AT_AUTHORIZE_TYPE_INVALID');
  return { kind: 'basic', clientKey: decoded.slice(0, colon), secretKey: decoded.slice(colon + 1) };
}

function adminTokenMatches(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The failures a guesser produces; each counts against the IP and the client key. */
const GUESSING_FAILURES: ReadonlySet<string> = new Set([
  'APP_CLIENT_KEY_NOT_FOUND',
  'APP_SK_NOT_MATCHED',
  'ACCESS_TOKEN_INVALID',
]);

async function identifyProject(
  app: FastifyInstance,
  credentials: ReturnType<typeof parseAuthorization>,
  now: Date,
): Promise<ProjectRow> {
  const { projects, accessTokens } = app.deps.stores;
  if (credentials.kind === 'bearer') {
    const row = await accessTokens.findProject(credentials.token, now);
    if (!row) throw new ApiError('ACCESS_TOKEN_INVALID');
    return row;
  }
  if (credentials.clientKey === '') throw new ApiError('APP_CLIENT_KEY_NOT_FOUND');
  const row = await projects.findByClientKey(credentials.clientKey);
  if (!row) throw new ApiError('APP_CLIENT_KEY_NOT_FOUND');
  // the secret key before a rotation works until the end of its grace period
  if (!keyAccepted(credentials.secretKey, projectKey(row, 'secret'), now)) throw new ApiError('APP_SK_NOT_MATCHED');
  return row;
}

async function authenticateProject(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<AuthState> {
  const now = app.deps.wallClock();
  const config = request.routeOptions.config;
  const credentials = parseAuthorization(request.headers.authorization);

  // a Bearer token is its own credential: an unknown one counts against the IP only
  const credentialKey = credentials.kind === 'basic' ? credentials.clientKey : undefined;
  await app.throttles.auth.check(request, reply, credentialKey);
  let row: ProjectRow;
  try {
    row = await identifyProject(app, credentials, now);
  } catch (err) {
    if (err instanceof ApiError && GUESSING_FAILURES.has(err.errorCode)) await app.throttles.auth.fail(request, credentialKey);
    throw err;
  }

  assertIpAllowed(row, request.ip);
  if (keyExpired(row, now)) throw new ApiError(config.scope ? 'APP_CLIENT_KEY_EXPIRED' : 'APP_KEY_CHAIN_EXPIRED');
  if (config.scope && !(credentials.kind === 'bearer' && config.bearerWithoutScope)) {
    if (row.scopes.length === 0) throw new ApiError('API_ROLE_NOT_SUPPORT');
    if (!row.scopes.includes(config.scope)) throw new ApiError('API_SCOPE_INVALID');
  }
  if (config.sellerOnly && !row.seller) throw new ApiError('API_ONLY_SELLER');
  return { project: toProject(row), method: credentials.kind };
}

async function authenticateAdmin(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const header = request.headers.authorization ?? '';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) {
    // only a Bearer token is an admin credential: the bare token, Basic or anything else presented is a guess
    await app.throttles.admin.check(request, reply);
    if (header.trim() !== '') await app.throttles.admin.fail(request);
    throw new ApiError('ADMIN_UNAUTHORIZED');
  }
  await verifyAdminToken(app, request, reply, match[1]!);
}

/** The value of `Authorization: Bearer <value>`, if that is the header's form. */
function bearerOf(request: FastifyRequest): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
}

/** The admin token check with its throttle, for a token presented outside the header (the dashboard's sign-in). */
export async function verifyAdminToken(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  presented: string,
): Promise<void> {
  await app.throttles.admin.check(request, reply);
  if (presented.trim() === '' || !adminTokenMatches(presented, app.deps.config.adminToken)) {
    // a presented wrong token is a guess; a call without one is not
    if (presented.trim() !== '') await app.throttles.admin.fail(request);
    throw new ApiError('ADMIN_UNAUTHORIZED');
  }
}

/**
 * A project's client and secret keys checked as Basic authentication checks them (throttles, rotation grace,
 * IP allow-list, key expiry), for keys presented outside the header (the dashboard's sign-in). `currentKeyOnly`:
 * the secret key a rotation replaced is refused (1204) even while its grace period runs.
 */
export async function authenticateKeys(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  clientKey: string,
  secretKey: string,
  opts: { readonly currentKeyOnly?: boolean } = {},
): Promise<Project> {
  const now = app.deps.wallClock();
  await app.throttles.auth.check(request, reply, clientKey);
  let row: ProjectRow;
  try {
    row = await identifyProject(app, { kind: 'basic', clientKey, secretKey }, now);
    if (opts.currentKeyOnly && !secretMatches(secretKey, row.secret_key_hash)) throw new ApiError('APP_SK_NOT_MATCHED');
  } catch (err) {
    if (err instanceof ApiError && GUESSING_FAILURES.has(err.errorCode)) await app.throttles.auth.fail(request, clientKey);
    throw err;
  }
  assertIpAllowed(row, request.ip);
  if (keyExpired(row, now)) throw new ApiError('APP_KEY_CHAIN_EXPIRED');
  return toProject(row);
}

export const authPlugin = fp(
  async (app: FastifyInstance) => {
    await registerRateLimits(app);
    app.decorateRequest('project', {
      getter(this: FastifyRequest): Project {
        const state = authStates.get(this);
        if (!state)
          throw new ApiError('INTERNAL_ERROR', { cause: new Error('request.project read on a route without project auth') });
        return state.project;
      },
    });
    app.decorateRequest('authMethod', {
      getter(this: FastifyRequest) {
        if (adminRequests.has(this)) return 'admin' as const;
        return authStates.get(this)?.method;
      },
    });

    app.addHook('onRequest', async (request, reply) => {
      if (request.is404) return;
      const requirement = request.routeOptions.config.auth ?? 'project';
      if (requirement === 'none') return;
      if (requirement === 'admin') {
        await authenticateAdmin(app, request, reply);
        adminRequests.add(request);
        return;
      }
      if (request.routeOptions.config.adminToo && bearerOf(request) !== undefined) {
        // a Bearer value here may be the admin token: the admin throttle guards it as on the admin API
        await app.throttles.admin.check(request, reply);
        if (adminTokenMatches(bearerOf(request)!, app.deps.config.adminToken)) {
          adminRequests.add(request);
          return;
        }
        try {
          authStates.set(request, await authenticateProject(app, request, reply));
        } catch (err) {
          if (err instanceof ApiError && err.errorCode === 'ACCESS_TOKEN_INVALID') await app.throttles.admin.fail(request);
          throw err;
        }
        return;
      }
      authStates.set(request, await authenticateProject(app, request, reply));
    });
  },
  { name: 'paygate-auth' },
);

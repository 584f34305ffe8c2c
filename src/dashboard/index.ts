// The sandbox dashboard at /dashboard: server-rendered pages (@fastify/view + Eta) with htmx served from
// node_modules, a session kept on the server behind a cookie holding only its random id, a CSRF token on every form, and security headers with a CSP that
// allows only the dashboard's own script and stylesheet. Served in sandbox mode only: in production mode
// it is not registered at all (9404), so no extra way in exists next to the API.
//
// Every action calls the use case the API route calls (the areas' services, built once in src/composition/); the pages only parse form fields,
// call, and render. Routes declare `config: { auth: 'none', dashboard: ... }`: the API's key check does not
// apply, the dashboard's session check (below) does.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import fastifyHelmet from '@fastify/helmet';
import fastifyView from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../platform/errors.js';
import { createSessionCookies, type Session } from './session.js';
import { createContext, type DashboardAccess, type DashboardContext } from './context.js';
import type { ApiChecks } from './api-checks.js';
import { authPages } from './pages/auth.js';
import { paymentPages } from './pages/payments.js';
import { verificationPages } from './pages/verifications.js';
import { escrowPages } from './pages/escrow.js';
import { webhookPages } from './pages/webhooks.js';
import { recurringPages } from './pages/recurring.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** who may open a dashboard route: anyone (sign-in, assets), an admin session without a project, or a session on a project */
    dashboard?: DashboardAccess;
  }
}

export const DASHBOARD_PREFIX = '/dashboard';
const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'self'"],
  objectSrc: ["'none'"],
  // the sandbox listens on plain http: upgrading the form posts to https would break them
  upgradeInsecureRequests: null,
};

async function dashboard(app: FastifyInstance, { api }: { readonly api: ApiChecks }): Promise<void> {
  const { toApiError } = api;
  // the sessions live in the database (built once by the composition root); the cookie holds only an id
  const store = app.deps.stores.dashboardSessions;
  const cookies = createSessionCookies(app.deps.keyring);
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody, { bodyLimit: 16 * 1024 });
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: { useDefaults: false, directives: CSP },
    hsts: false,
    crossOriginEmbedderPolicy: false,
    referrerPolicy: { policy: 'same-origin' },
  });
  await app.register(fastifyView, {
    engine: { eta: new Eta({ autoEscape: true, useWith: false }) },
    templates: join(here, 'views'),
    layout: 'layout.eta',
    defaultContext: { prefix: DASHBOARD_PREFIX },
  });

  const states = new WeakMap<FastifyRequest, Session>();
  const ctx: DashboardContext = createContext(app, cookies, store, states);

  app.addHook('preHandler', async (request, reply) => {
    // a GET of no page is answered by the not-found page below, in the layout of the visitor's session
    const access = request.routeOptions.config.dashboard ?? (request.is404 && request.method === 'GET' ? 'public' : undefined);
    if (access === undefined || access === 'asset') return;
    // wall time, not the sandbox clock: advancing the sandbox a day must not end the session that advanced it
    const now = new Date();
    const id = cookies.read(request);
    let session: Session | undefined;
    if (id !== undefined && store.wellFormed(id)) {
      // an id with no live session (never signed in, signed out, ended) is an anonymous visitor's
      const found = await store.find(id, now, app.deps.config.adminToken);
      session = found
        ? {
            id,
            kind: found.kind,
            ...(found.applicationId !== undefined ? { applicationId: found.applicationId } : {}),
            expiresAt: found.expiresAt,
          }
        : { id, kind: 'anonymous' };
    }
    // every POST carries the token of the session that rendered its form, sign-in included
    if (request.method === 'POST') cookies.checkCsrf(request, session);
    if (!session) {
      session = { id: store.newId(), kind: 'anonymous' };
      cookies.write(request, reply, session);
    }
    states.set(request, session);
    const signedIn = session.kind !== 'anonymous';
    const ready = access === 'public' || (access === 'pick' ? session.kind === 'admin' : signedIn && !!session.applicationId);
    if (ready) return;
    if (request.method === 'GET') {
      const to = access === 'project' && session.kind === 'admin' ? 'projects' : 'login';
      return reply.redirect(`${DASHBOARD_PREFIX}/${to}`, 303);
    }
    throw new ApiError('DASHBOARD_SIGN_IN_REQUIRED');
  });

  app.setErrorHandler(async (error, request, reply: FastifyReply) => {
    const apiError = toApiError(error, request);
    if (apiError.statusCode >= 500) request.log.error({ err: error, error_code: apiError.errorCode }, 'dashboard action failed');
    else request.log.info({ error_code: apiError.errorCode, code: apiError.code }, 'dashboard action refused');
    const body = apiError.toBody();
    return ctx.render(request, reply.code(apiError.statusCode), 'error', {
      title: 'Something went wrong',
      error: body,
      back: backOf(request),
    });
  });

  // No page here: an HTML page in the dashboard's layout (the API's JSON 404 is for the API's clients)
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0] ?? DASHBOARD_PREFIX;
    return ctx.render(request, reply.code(404), 'not-found', { title: 'Not found', path: path.slice(0, 200) });
  });

  // Assets: the stylesheet of this folder and htmx from node_modules (no CDN, no build step)
  // a Map, not an object: a name like __proto__ must find nothing
  const assets = new Map<string, { type: string; body: Buffer }>([
    ['htmx.min.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(require.resolve('htmx.org/dist/htmx.min.js')) }],
    ['dashboard.css', { type: 'text/css; charset=utf-8', body: readFileSync(join(here, 'assets', 'dashboard.css')) }],
  ]);
  app.get<{ Params: { name: string } }>(
    '/assets/:name',
    { config: { auth: 'none', dashboard: 'asset' }, schema: { hide: true } },
    async (request, reply) => {
      const asset = assets.get(request.params.name);
      if (!asset) throw new ApiError('NOT_FOUND');
      return reply.type(asset.type).header('cache-control', 'public, max-age=3600').send(asset.body);
    },
  );

  await authPages(app, ctx, api);
  await paymentPages(app, ctx);
  await verificationPages(app, ctx);
  await escrowPages(app, ctx);
  await webhookPages(app, ctx);
  await recurringPages(app, ctx);
}

/** Where an error page links back to: the page a form was posted from (its path without the action). */
function backOf(request: FastifyRequest): string {
  const path = request.url.split('?')[0] ?? DASHBOARD_PREFIX;
  if (request.method !== 'POST') return `${DASHBOARD_PREFIX}/receipts`;
  const parts = path.split('/');
  // sections whose rows have no page of their own go back to the section
  if (['webhooks', 'notifications', 'reserves', 'clock'].includes(parts[2] ?? '')) return parts.slice(0, 3).join('/');
  return parts.length > 3 ? parts.slice(0, -1).join('/') : path;
}

/** The dashboard's plugin, registered by buildApp (src/api/app.ts) with the API's checks; a no-op outside sandbox mode. */
export function dashboardRoutes(api: ApiChecks): FastifyPluginAsync {
  return async (app) => {
    if (!app.deps.config.sandbox) return;
    await app.register(dashboard, { prefix: DASHBOARD_PREFIX, api });
  };
}

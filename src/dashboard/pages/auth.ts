// Sign-in with a project's current keys (checked as the API checks Basic keys, throttles included; a key a rotation
// replaced is refused here even during its grace period) or the admin token (then a project is picked), and sign-out,
// which ends the session on the server.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../platform/errors.js';
import type { Project } from '../../projects/index.js';
import type { ApiChecks } from '../api-checks.js';
import type { DashboardContext } from '../context.js';
import { field } from './forms.js';

export async function authPages(
  app: FastifyInstance,
  ctx: DashboardContext,
  { authenticateKeys, verifyAdminToken }: Pick<ApiChecks, 'authenticateKeys' | 'verifyAdminToken'>,
): Promise<void> {
  const { services } = app.deps;

  app.get('/', { config: { auth: 'none', dashboard: 'project' }, schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/dashboard/receipts', 303),
  );

  app.get('/login', { config: { auth: 'none', dashboard: 'public' }, schema: { hide: true } }, async (request, reply) =>
    ctx.render(request, reply, 'login', { title: 'Sign in' }),
  );

  // A refused sign-in (wrong key or token, the throttle's 429 with its Retry-After) answers the form again with the
  // error above it and the error's status; the client key typed is kept, no secret is ever written back.
  app.post('/login', { config: { auth: 'none', dashboard: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const body = request.body;
    const adminToken = field(body, 'admin_token', { optional: true });
    if (adminToken !== undefined) {
      try {
        await verifyAdminToken(app, request, reply, adminToken);
      } catch (error) {
        return refused(request, reply, error, undefined);
      }
      await ctx.signIn(request, reply, { kind: 'admin', adminToken });
      return reply.redirect('/dashboard/projects', 303);
    }
    const clientKey = field(body, 'client_key');
    const secretKey = field(body, 'secret_key');
    // the key a rotation replaced no longer signs in here, even while the API still takes it during the grace period
    let project: Project;
    try {
      project = await authenticateKeys(app, request, reply, clientKey, secretKey, { currentKeyOnly: true });
    } catch (error) {
      return refused(request, reply, error, clientKey);
    }
    await ctx.signIn(request, reply, { kind: 'keys', applicationId: project.application_id, secretKey });
    return reply.redirect('/dashboard/receipts', 303);
  });

  function refused(request: FastifyRequest, reply: FastifyReply, error: unknown, clientKey: string | undefined) {
    if (!(error instanceof ApiError) || error.statusCode >= 500) throw error;
    request.log.info({ error_code: error.errorCode, code: error.code }, 'dashboard sign-in refused');
    return ctx.render(request, reply.code(error.statusCode), 'login', {
      title: 'Sign in',
      error: error.toBody(),
      ...(clientKey !== undefined ? { clientKey } : {}),
    });
  }

  app.get('/projects', { config: { auth: 'none', dashboard: 'pick' }, schema: { hide: true } }, async (request, reply) => {
    const projects = await services.projects.list();
    // read-only: a project's upstream provider is set with the admin API or CLI
    const upstreams = await Promise.all(projects.map((p) => services.upstream.find(p.application_id)));
    return ctx.render(request, reply, 'projects', {
      title: 'Projects',
      projects: projects.map((p, i) => ({ ...p, upstream: upstreams[i] })),
    });
  });

  app.post('/projects', { config: { auth: 'none', dashboard: 'pick' }, schema: { hide: true } }, async (request, reply) => {
    const applicationId = field(request.body, 'application_id');
    const project = await services.projects.get(applicationId);
    // an admin session (its token checked against the current one on this request) moves to a new session on the project
    await ctx.signIn(request, reply, {
      kind: 'admin',
      adminToken: app.deps.config.adminToken,
      applicationId: project.application_id,
    });
    return reply.redirect('/dashboard/receipts', 303);
  });

  app.post('/logout', { config: { auth: 'none', dashboard: 'public' }, schema: { hide: true } }, async (request, reply) => {
    await ctx.signOut(request, reply);
    return reply.redirect('/dashboard/login', 303);
  });
}

// Sign-in with a project's keys (checked as the API checks Basic keys, throttles included) or the admin token
// (then a project is picked), and sign-out.
import type { FastifyInstance } from 'fastify';
import { authenticateKeys, verifyAdminToken } from '../../api/auth.js';
import type { DashboardContext } from '../context.js';
import { field } from './forms.js';

export async function authPages(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { services } = app.deps;

  app.get('/', { config: { auth: 'none', dashboard: 'project' }, schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/dashboard/receipts', 303),
  );

  app.get('/login', { config: { auth: 'none', dashboard: 'public' }, schema: { hide: true } }, async (request, reply) =>
    ctx.render(request, reply, 'login', { title: 'Sign in' }),
  );

  app.post('/login', { config: { auth: 'none', dashboard: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const body = request.body;
    const adminToken = field(body, 'admin_token', { optional: true });
    if (adminToken !== undefined) {
      await verifyAdminToken(app, request, reply, adminToken);
      ctx.signIn(request, reply, 'admin');
      return reply.redirect('/dashboard/projects', 303);
    }
    const clientKey = field(body, 'client_key');
    const secretKey = field(body, 'secret_key');
    const project = await authenticateKeys(app, request, reply, clientKey, secretKey);
    ctx.signIn(request, reply, 'keys', project.application_id);
    return reply.redirect('/dashboard/receipts', 303);
  });

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
    ctx.signIn(request, reply, 'admin', project.application_id);
    return reply.redirect('/dashboard/receipts', 303);
  });

  app.post('/logout', { config: { auth: 'none', dashboard: 'public' }, schema: { hide: true } }, async (_request, reply) => {
    ctx.signOut(reply);
    return reply.redirect('/dashboard/login', 303);
  });
}

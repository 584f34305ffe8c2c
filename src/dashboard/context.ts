// What every dashboard page needs: the signed-in session, its project (with the scope check a key's session
// gets, as the API checks the same key's calls), and rendering inside the layout with the CSRF token.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { keyExpired } from '../projects/access.js';
import { ApiError } from '../platform/errors.js';
import type { Scope } from '../projects/scopes.js';
import type { Project } from '../projects/index.js';
import { formatTimestamp } from '../platform/time.js';
import { newSession, type Session, type SessionCodec } from './session.js';

/** asset: no session at all; public: sign-in pages; pick: an admin choosing a project; project: everything else */
export type DashboardAccess = 'asset' | 'public' | 'pick' | 'project';

export interface DashboardContext {
  session(request: FastifyRequest): Session | undefined;
  /** The session's project; for a key's session the key must still be valid and hold `scope` (1222 otherwise). */
  project(request: FastifyRequest, scope: Scope): Promise<Project>;
  /** Starts a fresh session (a new id, so a new CSRF token) after a sign-in or a project pick. */
  signIn(request: FastifyRequest, reply: FastifyReply, kind: 'keys' | 'admin', applicationId?: string): void;
  signOut(reply: FastifyReply): void;
  render(request: FastifyRequest, reply: FastifyReply, view: string, data: Record<string, unknown>): Promise<FastifyReply>;
}

/** Notices shown after an action redirects (POST, then GET): fixed texts, never taken from the URL. */
const NOTICES: Readonly<Record<string, string>> = {
  cancelled: 'The receipt was cancelled.',
  requested: 'The verification was requested: the SMS is in the inbox below.',
  confirmed: 'The verification was confirmed.',
  resent: 'The OTP was sent again.',
  paid: 'The sandbox payment was made.',
  shipping: 'Shipping started.',
  event: 'The buyer event was sent; the PG notified paygate.',
  saved: 'The webhook configuration was saved.',
  tested: 'A test event was queued.',
  retried: 'The delivery was queued again.',
  revoked: 'The reserved charge was revoked.',
  paused: 'The schedule was paused.',
  resumed: 'The schedule was resumed.',
  'schedule-cancelled': 'The schedule was cancelled.',
  advanced: 'The sandbox clock moved forward.',
  'advanced-unsettled': 'The sandbox clock moved forward; some work was still running after 60 s.',
};

export const fmt = {
  time: (value: Date | string | null | undefined): string => {
    if (value === null || value === undefined || value === '') return '—';
    const date = typeof value === 'string' ? new Date(value) : value;
    return Number.isNaN(date.getTime()) ? String(value) : formatTimestamp(date).replace('T', ' ').replace('+09:00', ' KST');
  },
  won: (value: unknown): string => (typeof value === 'number' ? `₩${value.toLocaleString('en-US')}` : '—'),
  text: (value: unknown): string => (value === null || value === undefined || value === '' ? '—' : String(value)),
  json: (value: unknown): string => JSON.stringify(value, null, 2),
};

export function createContext(
  app: FastifyInstance,
  sessions: SessionCodec,
  states: WeakMap<FastifyRequest, Session>,
): DashboardContext {
  const ctx: DashboardContext = {
    session: (request) => states.get(request),

    async project(request, scope) {
      const session = states.get(request);
      if (!session?.applicationId || session.kind === 'anonymous') throw new ApiError('DASHBOARD_SIGN_IN_REQUIRED');
      const project = await app.deps.services.projects.get(session.applicationId);
      if (session.kind === 'keys') {
        if (keyExpired(project, app.deps.clock())) throw new ApiError('APP_CLIENT_KEY_EXPIRED');
        if (project.scopes.length === 0) throw new ApiError('API_ROLE_NOT_SUPPORT');
        if (!project.scopes.includes(scope)) throw new ApiError('API_SCOPE_INVALID');
      }
      return project;
    },

    signIn(request, reply, kind, applicationId) {
      const session = newSession(kind, new Date(), applicationId); // wall time, as the session check reads it
      sessions.write(request, reply, session);
      states.set(request, session);
    },

    signOut(reply) {
      sessions.clear(reply);
    },

    async render(request, reply, view, data) {
      const session = states.get(request);
      const query = request.query as Record<string, unknown> | undefined;
      const done = typeof query?.done === 'string' ? NOTICES[query.done] : undefined;
      let projectName: string | undefined;
      if (session?.applicationId) {
        projectName = (await app.deps.services.projects.get(session.applicationId).catch(() => undefined))?.name;
      }
      return reply.type('text/html; charset=utf-8').view(`${view}.eta`, {
        csrf: session ? sessions.csrfToken(session) : '',
        signedIn: session !== undefined && session.kind !== 'anonymous',
        admin: session?.kind === 'admin',
        projectName,
        applicationId: session?.applicationId,
        clock: app.deps.sandboxClock !== undefined,
        notice: done,
        section: view.split('-')[0],
        fmt,
        ...data,
      });
    },
  };
  return ctx;
}

// What every dashboard page needs: the signed-in session, its project (with the scope check a key's session
// gets, as the API checks the same key's calls), signing in and out, a secret shown once to the admin session that
// made it, and rendering inside the layout with the CSRF token.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { keyExpired } from '../projects/access.js';
import { ApiError } from '../platform/errors.js';
import type { Scope } from '../projects/scopes.js';
import type { Project } from '../projects/index.js';
import { formatTimestamp } from '../platform/time.js';
import type { DashboardSignIn, DashboardSessionStore } from '../platform/dashboard-sessions.js';
import type { Session, SessionCookies } from './session.js';

/** asset: no session at all; public: sign-in pages; pick: an admin choosing a project; project: everything else */
export type DashboardAccess = 'asset' | 'public' | 'pick' | 'project';

export interface DashboardContext {
  session(request: FastifyRequest): Session | undefined;
  /** The session's project; for a key's session the key must still be valid and hold `scope` (1222 otherwise). */
  project(request: FastifyRequest, scope: Scope): Promise<Project>;
  /** Starts a fresh session (a new id, so a new CSRF token) after a sign-in or a project pick; the one before ends. */
  signIn(request: FastifyRequest, reply: FastifyReply, signIn: DashboardSignIn): Promise<void>;
  /** Ends the request's session on the server and clears its cookie. */
  signOut(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /**
   * Notes that the request's session just made `secret` (named by `what`) so that one later page may show it once.
   * Only an admin session may see a secret: false (nothing noted) for any other.
   */
  holdSecret(request: FastifyRequest, what: string, secret: string): Promise<boolean>;
  /** Whether `secret` may be shown now: this admin session made it and has not been shown it. Never true twice. */
  takeSecret(request: FastifyRequest, what: string, secret: string): Promise<boolean>;
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
  'rotated-unseen':
    'The signing secret was rotated; the previous one keeps signing beside it for 24 hours. A new secret is shown only once, to an admin session that rotates it: it is not shown to a session signed in with keys.',
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
  cookies: SessionCookies,
  store: DashboardSessionStore,
  states: WeakMap<FastifyRequest, Session>,
): DashboardContext {
  const ctx: DashboardContext = {
    session: (request) => states.get(request),

    async project(request, scope) {
      const session = states.get(request);
      if (!session?.applicationId || session.kind === 'anonymous') throw new ApiError('DASHBOARD_SIGN_IN_REQUIRED');
      const project = await app.deps.services.projects.get(session.applicationId);
      if (session.kind === 'keys') {
        if (keyExpired(project, app.deps.wallClock())) throw new ApiError('APP_CLIENT_KEY_EXPIRED');
        if (project.scopes.length === 0) throw new ApiError('API_ROLE_NOT_SUPPORT');
        if (!project.scopes.includes(scope)) throw new ApiError('API_SCOPE_INVALID');
      }
      return project;
    },

    async signIn(request, reply, signIn) {
      const current = states.get(request);
      if (current && current.kind !== 'anonymous') await store.end(current.id);
      // wall time, as the session check reads it
      const { id, session } = await store.start(signIn, new Date());
      const next: Session = {
        id,
        kind: session.kind,
        ...(session.applicationId !== undefined ? { applicationId: session.applicationId } : {}),
        expiresAt: session.expiresAt,
      };
      cookies.write(request, reply, next);
      states.set(request, next);
    },

    async signOut(request, reply) {
      const current = states.get(request);
      if (current) await store.end(current.id);
      cookies.clear(reply);
    },

    async holdSecret(request, what, secret) {
      const session = states.get(request);
      if (session?.kind !== 'admin') return false;
      await store.holdReveal(session.id, what, secret, new Date());
      return true;
    },

    async takeSecret(request, what, secret) {
      const session = states.get(request);
      if (session?.kind !== 'admin') return false;
      return store.takeReveal(session.id, what, secret, new Date());
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
        csrf: session ? cookies.csrfToken(session) : '',
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

// The dashboard's session cookie: a random id of 256 bits and nothing else. The session itself lives on the server
// (src/platform/dashboard-sessions.ts: a keyed MAC of the id, who signed in, until when), so it ends when the server
// ends it: sign-out, a key rotation or the disabling of its project, another admin token, the idle timeout or the
// lifetime. A visitor who has not signed in holds an id no session has (anonymous), so that the sign-in form has a
// token too. Every form carries a synchronizer token derived from the id (a keyring MAC), checked on every POST
// before anything runs.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../platform/errors.js';
import type { Keyring } from '../platform/security/keyring.js';

export const SESSION_COOKIE = 'paygate_dashboard';
const COOKIE_PATH = '/dashboard';

export type SessionKind = 'anonymous' | 'keys' | 'admin';

export interface Session {
  /** the cookie's random id, new at every sign-in (no fixation): the CSRF token is derived from it */
  readonly id: string;
  readonly kind: SessionKind;
  /** the project being looked at: the keys' own, or the one an admin picked */
  readonly applicationId?: string;
  /** a signed-in session's absolute end (the cookie's expiry); an anonymous cookie lasts as long as the browser */
  readonly expiresAt?: Date;
}

export interface SessionCookies {
  /** The id the request's cookie carries (not yet looked up). */
  read(request: FastifyRequest): string | undefined;
  write(request: FastifyRequest, reply: FastifyReply, session: Session): void;
  clear(reply: FastifyReply): void;
  csrfToken(session: Session): string;
  /** 9485 unless the request carries the session's token (form field `_csrf` or header `x-csrf-token`) */
  checkCsrf(request: FastifyRequest, session: Session | undefined): void;
}

export function createSessionCookies(keyring: Keyring): SessionCookies {
  // the session store's subkey, under a label of its own: a token is never an id's MAC
  const tokenOf = (session: Session) => keyring.mac('dashboard-session', `csrf\u0000${session.id}`).digest;
  return {
    read(request) {
      const raw = request.cookies[SESSION_COOKIE];
      return raw === undefined || raw === '' ? undefined : raw;
    },
    write(request, reply, session) {
      reply.setCookie(SESSION_COOKIE, session.id, {
        httpOnly: true,
        sameSite: 'strict',
        secure: request.protocol === 'https',
        path: COOKIE_PATH,
        ...(session.expiresAt ? { expires: session.expiresAt } : {}),
      });
    },
    clear(reply) {
      reply.clearCookie(SESSION_COOKIE, { path: COOKIE_PATH });
    },
    csrfToken: tokenOf,
    checkCsrf(request, session) {
      const body = request.body as Record<string, unknown> | undefined;
      const header = request.headers['x-csrf-token'];
      const presented = typeof body?._csrf === 'string' ? body._csrf : typeof header === 'string' ? header : '';
      const expected = session ? tokenOf(session) : '';
      const ok =
        expected !== '' && presented.length === expected.length && timingSafeEqual(Buffer.from(presented), Buffer.from(expected));
      if (!ok) throw new ApiError('DASHBOARD_FORM_EXPIRED');
    },
  };
}

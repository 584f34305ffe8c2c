// The dashboard's session: a signed cookie (@fastify/cookie, HMAC-SHA256 under a secret made at start, so a
// restart signs everyone out) holding who signed in, which project, a random session id and an expiry. Nothing
// secret is in it: the keys or the admin token are checked once at sign-in and never stored. Every form carries a
// synchronizer token derived from the session id (HMAC), checked on every POST before anything runs.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../platform/errors.js';

export const SESSION_COOKIE = 'paygate_dashboard';
/** A session ends this long after sign-in, whatever happens meanwhile. */
export const SESSION_TTL_MS = 8 * 60 * 60 * 1000;
const COOKIE_PATH = '/dashboard';

export type SessionKind = 'anonymous' | 'keys' | 'admin';

export interface Session {
  /** random, changed at every sign-in (no fixation): the CSRF token is derived from it */
  readonly sid: string;
  readonly kind: SessionKind;
  /** the project being looked at: the keys' own, or the one an admin picked */
  readonly applicationId?: string;
  readonly expiresAt: number;
}

export interface SessionCodec {
  read(request: FastifyRequest, now: Date): Session | undefined;
  write(request: FastifyRequest, reply: FastifyReply, session: Session): void;
  clear(reply: FastifyReply): void;
  csrfToken(session: Session): string;
  /** 9485 unless the request carries the session's token (form field `_csrf` or header `x-csrf-token`) */
  checkCsrf(request: FastifyRequest, session: Session | undefined): void;
}

export function newSession(kind: SessionKind, now: Date, applicationId?: string): Session {
  return {
    sid: randomBytes(18).toString('base64url'),
    kind,
    ...(applicationId !== undefined ? { applicationId } : {}),
    expiresAt: now.getTime() + SESSION_TTL_MS,
  };
}

function parseSession(text: string): Session | undefined {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<Session>;
    if (typeof value.sid !== 'string' || typeof value.expiresAt !== 'number') return undefined;
    if (value.kind !== 'anonymous' && value.kind !== 'keys' && value.kind !== 'admin') return undefined;
    if (value.applicationId !== undefined && typeof value.applicationId !== 'string') return undefined;
    return value as Session;
  } catch {
    return undefined;
  }
}

/** `secret` signs the cookie and keys the CSRF tokens (a subkey of its own). */
export function createSessionCodec(secret: Buffer): SessionCodec {
  const csrfKey = createHmac('sha256', secret).update('dashboard csrf').digest();
  const tokenOf = (session: Session) => createHmac('sha256', csrfKey).update(session.sid).digest('base64url');
  return {
    read(request, now) {
      const raw = request.cookies[SESSION_COOKIE];
      if (raw === undefined) return undefined;
      const unsigned = request.unsignCookie(raw);
      if (!unsigned.valid || unsigned.value === null) return undefined;
      const session = parseSession(unsigned.value);
      return session && session.expiresAt > now.getTime() ? session : undefined;
    },
    write(request, reply, session) {
      reply.setCookie(SESSION_COOKIE, Buffer.from(JSON.stringify(session)).toString('base64url'), {
        signed: true,
        httpOnly: true,
        sameSite: 'strict',
        secure: request.protocol === 'https',
        path: COOKIE_PATH,
        expires: new Date(session.expiresAt),
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

// The sandbox dashboard's sessions on the server (table dashboard_sessions, migration 0016): the cookie carries a
// random id of 256 bits and nothing else; this store keeps a keyed MAC of it (the keyring's `dashboard-session`
// subkey), so a copy of the table opens no session. A session ends when its row goes: sign-out, the end of every
// session on a project (its keys rotated, the project disabled: the projects area calls that through a port), an
// admin token that is no longer the current one, the idle timeout or the absolute lifetime. Every time here is wall
// time handed in by the caller (never the sandbox clock: advancing the sandbox a month must not end a session).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Tables } from './db/db.js';
import type { Keyring } from './security/keyring.js';
import { hashSecret } from './ids.js';

/** A session ends this long after sign-in, whatever happens meanwhile. */
export const DASHBOARD_SESSION_LIFETIME_MS = 8 * 60 * 60 * 1000;
/** ... or this long after its last request. */
export const DASHBOARD_SESSION_IDLE_MS = 30 * 60 * 1000;
/** How long a secret a session just made waits to be shown to it (once). */
export const DASHBOARD_REVEAL_WINDOW_MS = 5 * 60 * 1000;
/** last_seen_at is written at most this often (a page view is not a database write every time). */
const TOUCH_EVERY_MS = 60 * 1000;

const ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Who signs in: the admin token (optionally on a picked project), or a project's keys. */
export type DashboardSignIn =
  | { readonly kind: 'admin'; readonly adminToken: string; readonly applicationId?: string }
  | { readonly kind: 'keys'; readonly applicationId: string; readonly secretKey: string };

export interface DashboardSession {
  readonly kind: 'admin' | 'keys';
  readonly applicationId?: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export interface DashboardSessionStore {
  /** Whether `id` has the shape of a session id (a cookie value worth looking up). */
  wellFormed(id: string): boolean;
  /** A new random id that no session has (an anonymous visitor's cookie until sign-in). */
  newId(): string;
  /** Starts a session and returns its id (the cookie's value; only its MAC is stored). Purges ended sessions first. */
  start(signIn: DashboardSignIn, now: Date): Promise<{ readonly id: string; readonly session: DashboardSession }>;
  /**
   * The live session of `id`, or undefined. A session past its lifetime or idle timeout, or an admin session made
   * with another admin token than `adminToken` (the current one), is deleted and is undefined.
   */
  find(id: string, now: Date, adminToken: string): Promise<DashboardSession | undefined>;
  /** Ends the session of `id` (sign-out, or a new session replacing it). */
  end(id: string): Promise<void>;
  /** Ends every session on the project, whoever signed in; returns how many. */
  endForProject(applicationId: string): Promise<number>;
  /** Notes that the session of `id` just made `secret` (named by `what`), to be shown to it once within the window. */
  holdReveal(id: string, what: string, secret: string, now: Date): Promise<void>;
  /**
   * Whether the session of `id` may see `secret` now: it made it, within the window, and has not been shown it.
   * Either way the note is gone afterwards: a second look shows nothing.
   */
  takeReveal(id: string, what: string, secret: string, now: Date): Promise<boolean>;
  /** Deletes the sessions past their lifetime or idle timeout; returns how many. */
  purgeEnded(now: Date): Promise<number>;
}

export function createDashboardSessionStore(db: Kysely<Tables>, keyring: Keyring): DashboardSessionStore {
  // one subkey, labels apart: an id's MAC is never a token's or a secret's
  const mac = (label: string, value: string) => keyring.mac('dashboard-session', `${label}\u0000${value}`).digest;
  const idHash = (id: string) => mac('session-id', id);
  const sameMac = (a: string | null, b: string) =>
    a !== null && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  const idleSince = (now: Date) => new Date(now.getTime() - DASHBOARD_SESSION_IDLE_MS);

  const store: DashboardSessionStore = {
    wellFormed: (id) => ID_PATTERN.test(id),
    newId: () => randomBytes(32).toString('base64url'),

    async start(signIn, now) {
      await store.purgeEnded(now);
      const id = store.newId();
      const expiresAt = new Date(now.getTime() + DASHBOARD_SESSION_LIFETIME_MS);
      await db
        .insertInto('dashboard_sessions')
        .values({
          id_hash: idHash(id),
          kind: signIn.kind,
          application_id: signIn.applicationId ?? null,
          admin_token_mac: signIn.kind === 'admin' ? mac('admin-token', signIn.adminToken) : null,
          key_mac: signIn.kind === 'keys' ? mac('secret-key', hashSecret(signIn.secretKey)) : null,
          created_at: now,
          last_seen_at: now,
          expires_at: expiresAt,
        })
        .execute();
      return {
        id,
        session: {
          kind: signIn.kind,
          ...(signIn.applicationId !== undefined ? { applicationId: signIn.applicationId } : {}),
          createdAt: now,
          expiresAt,
        },
      };
    },

    async find(id, now, adminToken) {
      if (!store.wellFormed(id)) return undefined;
      const hash = idHash(id);
      const row = await db.selectFrom('dashboard_sessions').selectAll().where('id_hash', '=', hash).executeTakeFirst();
      if (!row) return undefined;
      const ended =
        row.expires_at.getTime() <= now.getTime() ||
        row.last_seen_at.getTime() <= idleSince(now).getTime() ||
        (row.kind === 'admin' && !sameMac(row.admin_token_mac, mac('admin-token', adminToken)));
      if (ended) {
        await db.deleteFrom('dashboard_sessions').where('id_hash', '=', hash).execute();
        return undefined;
      }
      if (now.getTime() - row.last_seen_at.getTime() >= TOUCH_EVERY_MS) {
        await db.updateTable('dashboard_sessions').set({ last_seen_at: now }).where('id_hash', '=', hash).execute();
      }
      return {
        kind: row.kind,
        ...(row.application_id !== null ? { applicationId: row.application_id } : {}),
        createdAt: row.created_at,
        expiresAt: row.expires_at,
      };
    },

    async end(id) {
      if (!store.wellFormed(id)) return;
      await db.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash(id)).execute();
    },

    async endForProject(applicationId) {
      const result = await db.deleteFrom('dashboard_sessions').where('application_id', '=', applicationId).executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async holdReveal(id, what, secret, now) {
      await db
        .updateTable('dashboard_sessions')
        .set({
          reveal_mac: mac('reveal', `${what}\u0000${secret}`),
          reveal_until: new Date(now.getTime() + DASHBOARD_REVEAL_WINDOW_MS),
        })
        .where('id_hash', '=', idHash(id))
        .execute();
    },

    async takeReveal(id, what, secret, now) {
      if (!store.wellFormed(id)) return false;
      const hash = idHash(id);
      // consumed in the one statement that checks it: two looks at once cannot both see it
      const taken = await db
        .updateTable('dashboard_sessions')
        .set({ reveal_mac: null, reveal_until: null })
        .where('id_hash', '=', hash)
        .where('reveal_mac', '=', mac('reveal', `${what}\u0000${secret}`))
        .where('reveal_until', '>', now)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) > 0) return true;
      await db
        .updateTable('dashboard_sessions')
        .set({ reveal_mac: null, reveal_until: null })
        .where('id_hash', '=', hash)
        .execute();
      return false;
    },

    async purgeEnded(now) {
      const result = await db
        .deleteFrom('dashboard_sessions')
        .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleSince(now))]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
  return store;
}

// Dashboard sessions that end, without a browser: HTTP into the real app (sandbox mode, real database). The cookie
// holds only a random id; the server's row (a keyed MAC of it) is what a session is, so signing out, rotating the
// project's keys with any grace, disabling the project, another admin token, the idle timeout and the lifetime each
// end it. A new webhook secret is shown once, to the admin session that rotated it, and never on a reload.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_SESSION_IDLE_MS, DASHBOARD_SESSION_LIFETIME_MS } from '../../src/platform/dashboard-sessions.js';
import { basicAuthHeader, buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const RECEIPT = '/v2/receipt/000000000000000000000000';

/** A browser's view of one dashboard session: its cookie and the CSRF token its pages carry. */
interface Browser {
  cookie: string;
  csrf: string;
}

const cookieOf = (setCookie: unknown): string | undefined => {
  const text = Array.isArray(setCookie) ? setCookie.join('\n') : String(setCookie ?? '');
  return /paygate_dashboard=([^;]*)/.exec(text)?.[0];
};
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

describe('dashboard sessions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function anonymous(app: TestApp = t): Promise<Browser> {
    const login = await app.app.inject({ url: '/dashboard/login' });
    return { cookie: cookieOf(login.headers['set-cookie'])!, csrf: csrfOf(login.body) };
  }

  function post(b: Browser, url: string, fields: Record<string, string> = {}, app: TestApp = t) {
    return app.app.inject({
      method: 'POST',
      url,
      headers: { ...FORM, cookie: b.cookie },
      payload: new URLSearchParams({ _csrf: b.csrf, ...fields }).toString(),
    });
  }

  /** Signs in (keys or admin token) and, for an admin, picks `pick`; returns the signed-in browser. */
  async function signIn(fields: Record<string, string>, opts: { pick?: string; app?: TestApp } = {}): Promise<Browser> {
    const app = opts.app ?? t;
    const before = await anonymous(app);
    const res = await post(before, '/dashboard/login', fields, app);
    expect(res.statusCode, res.body).toBe(303);
    let b: Browser = { cookie: cookieOf(res.headers['set-cookie'])!, csrf: '' };
    const landing = await app.app.inject({ url: String(res.headers.location), headers: { cookie: b.cookie } });
    b.csrf = csrfOf(landing.body);
    if (opts.pick) {
      const picked = await post(b, '/dashboard/projects', { application_id: opts.pick }, app);
      expect(picked.statusCode, picked.body).toBe(303);
      b = { cookie: cookieOf(picked.headers['set-cookie'])!, csrf: '' };
      b.csrf = csrfOf((await app.app.inject({ url: '/dashboard/receipts', headers: { cookie: b.cookie } })).body);
    }
    return b;
  }
  const withKeys = (p: { clientKey: string; secretKey: string }) => signIn({ client_key: p.clientKey, secret_key: p.secretKey });
  const asAdmin = (pick?: string, app?: TestApp, token = TEST_ADMIN_TOKEN) =>
    signIn({ admin_token: token }, { ...(pick ? { pick } : {}), ...(app ? { app } : {}) });

  /** 'open' when the session opens a project page, 'signed-out' when the dashboard sends it to the sign-in */
  async function state(b: Browser, app: TestApp = t, url = '/dashboard/receipts'): Promise<'open' | 'signed-out' | string> {
    const res = await app.app.inject({ url, headers: { cookie: b.cookie } });
    if (res.statusCode === 200) return 'open';
    if (res.statusCode === 303 && res.headers.location === '/dashboard/login') return 'signed-out';
    return `${res.statusCode} ${String(res.headers.location ?? '')}`;
  }

  const rows = () => t.deps.database.db.selectFrom('dashboard_sessions').selectAll().execute();
  const secretOf = async (p: TestProject) => (await t.deps.services.webhooks.config(p.project)).secret;

  it('ends at sign-out: the old cookie opens nothing and posts nothing', async () => {
    const p = await t.createProject();
    const b = await withKeys(p);
    expect(await state(b)).toBe('open');
    const before = await secretOf(p);

    const out = await post(b, '/dashboard/logout');
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe('/dashboard/login');

    // the cookie as it was before the sign-out (a copy kept by someone else)
    expect(await state(b)).toBe('signed-out');
    expect(await state(b, t, '/dashboard/webhooks')).toBe('signed-out');
    const rotate = await post(b, '/dashboard/webhooks/secret');
    expect(rotate.statusCode).toBe(401);
    expect(rotate.body).toContain('9486');
    expect(await secretOf(p)).toBe(before); // nothing rotated
  });

  it('ends every session on a project when its keys rotate, with no grace and with 24 hours of grace', async () => {
    for (const grace of [0, 24]) {
      const p = await t.createProject();
      const keys = await withKeys(p);
      const admin = await asAdmin(p.applicationId);
      const other = await t.createProject();
      const bystander = await withKeys(other);
      expect([await state(keys), await state(admin), await state(bystander)]).toEqual(['open', 'open', 'open']);

      const rotated = await t.app.inject({
        method: 'POST',
        url: `/admin/v1/projects/${p.applicationId}/keys/rotate`,
        headers: ADMIN,
        payload: { grace_hours: grace },
      });
      expect(rotated.statusCode, rotated.body).toBe(200);

      expect(await state(keys), `grace ${grace}`).toBe('signed-out');
      expect(await state(admin), `grace ${grace}`).toBe('signed-out');
      expect(await state(bystander), 'another project is untouched').toBe('open');
      const posted = await post(keys, '/dashboard/webhooks/secret');
      expect(posted.statusCode).toBe(401);

      // the replaced key no longer signs in to the dashboard, even while the API still takes it (grace)
      const apiCode = async (secret: string) => {
        const res = await t.app.inject({ url: RECEIPT, headers: { authorization: basicAuthHeader(p.clientKey, secret) } });
        return res.json().code as number;
      };
      expect(await apiCode(p.secretKey)).toBe(grace > 0 ? 2000 : 1204);
      const before = await anonymous();
      const again = await post(before, '/dashboard/login', { client_key: p.clientKey, secret_key: p.secretKey });
      expect(again.statusCode).toBe(401);
      expect(again.body).toContain('1204');
      const fresh = await withKeys({ clientKey: p.clientKey, secretKey: rotated.json().secret_key as string });
      expect(await state(fresh)).toBe('open');
    }
  });

  it('ends every session on a project when it is disabled (keys expired now, or every scope taken away)', async () => {
    for (const patch of [{ key_expires_at: new Date(Date.now() - 1000).toISOString() }, { scopes: [] }]) {
      const p = await t.createProject();
      const keys = await withKeys(p);
      const admin = await asAdmin(p.applicationId);
      // a change that disables nothing ends nothing
      const renamed = await t.app.inject({
        method: 'PATCH',
        url: `/admin/v1/projects/${p.applicationId}`,
        headers: ADMIN,
        payload: { name: 'renamed' },
      });
      expect(renamed.statusCode).toBe(200);
      expect([await state(keys), await state(admin)]).toEqual(['open', 'open']);

      const disabled = await t.app.inject({
        method: 'PATCH',
        url: `/admin/v1/projects/${p.applicationId}`,
        headers: ADMIN,
        payload: patch,
      });
      expect(disabled.statusCode, disabled.body).toBe(200);
      expect(await state(keys), JSON.stringify(patch)).toBe('signed-out');
      expect(await state(admin), JSON.stringify(patch)).toBe('signed-out');
    }
  });

  it('keeps a session across a restart with the same admin token, and ends an admin session once the token changes', async () => {
    const p = await t.createProject();
    const keys = await withKeys(p);
    const admin = await asAdmin(p.applicationId);
    const adminPicking = await asAdmin();

    // a second process over the same database and keyring, same token: the sessions hold (they live on the server)
    const same = await buildTestApp({ database: t.deps.database, keyring: t.deps.keyring });
    try {
      expect(await state(keys, same)).toBe('open');
      expect(await state(admin, same)).toBe('open');
      expect(await state(adminPicking, same, '/dashboard/projects')).toBe('open');
    } finally {
      await same.close();
    }

    // restarted with another ADMIN_TOKEN: every admin session is void; the keys' session is not an admin's
    const other = await buildTestApp({
      database: t.deps.database,
      keyring: t.deps.keyring,
      env: { ADMIN_TOKEN: 'another-admin-token-0123456789abcdef' },
    });
    try {
      expect(await state(admin, other)).toBe('signed-out');
      expect(await state(adminPicking, other, '/dashboard/projects')).toBe('signed-out');
      expect(await state(keys, other)).toBe('open');
      // a session signed in with the new token works there, and not back on the old token
      const fresh = await asAdmin(p.applicationId, other, 'another-admin-token-0123456789abcdef');
      expect(await state(fresh, other)).toBe('open');
      expect(await state(fresh, t)).toBe('signed-out');
    } finally {
      await other.close();
    }
    // the void sessions are gone, not just refused
    expect(await state(admin)).toBe('signed-out');
  });

  it('ends after the idle timeout and after the lifetime, and purges ended sessions', async () => {
    const p = await t.createProject();
    const idle = await withKeys(p);
    const db = t.deps.database.db;
    const now = Date.now();
    // wall time passes (the rows are what the store reads; the sandbox clock plays no part)
    await db
      .updateTable('dashboard_sessions')
      .set({ last_seen_at: new Date(now - DASHBOARD_SESSION_IDLE_MS - 1000) })
      .where('application_id', '=', p.applicationId)
      .execute();
    expect(await state(idle)).toBe('signed-out');
    const old = await withKeys(p);
    expect(await state(old)).toBe('open');
    await db
      .updateTable('dashboard_sessions')
      .set({ created_at: new Date(now - DASHBOARD_SESSION_LIFETIME_MS - 1000), expires_at: new Date(now - 1000) })
      .where('application_id', '=', p.applicationId)
      .execute();
    expect(await state(old)).toBe('signed-out');

    // ended rows nobody comes back with are purged at the next sign-in
    const q = await t.createProject();
    await withKeys(q);
    await withKeys(q);
    await db
      .updateTable('dashboard_sessions')
      .set({ last_seen_at: new Date(now - DASHBOARD_SESSION_IDLE_MS - 1000) })
      .where('application_id', '=', q.applicationId)
      .execute();
    await withKeys(p);
    const left = (await rows()).filter((r) => r.application_id === q.applicationId);
    expect(left).toEqual([]);

    // advancing the sandbox clock a month ends nothing: sessions run on wall time
    const live = await withKeys(p);
    t.clock.advance(31 * 24 * 3_600_000);
    try {
      expect(await state(live)).toBe('open');
    } finally {
      t.clock.advance(-31 * 24 * 3_600_000);
    }
  });

  it('stores a keyed MAC of the session id, never the id, the admin token or the secret key', async () => {
    const p = await t.createProject();
    const keys = await withKeys(p);
    const admin = await asAdmin(p.applicationId);
    const ids = [keys.cookie, admin.cookie].map((c) => c.split('=')[1]!);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/); // 256 random bits
    const stored = JSON.stringify(await rows());
    for (const id of ids) expect(stored).not.toContain(id);
    expect(stored).not.toContain(TEST_ADMIN_TOKEN);
    expect(stored).not.toContain(p.secretKey);
    const mine = (await rows()).filter((r) => r.application_id === p.applicationId);
    expect(mine.map((r) => r.kind).sort()).toEqual(['admin', 'keys']);
    for (const r of mine) {
      expect(r.id_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(r.expires_at.getTime() - r.created_at.getTime()).toBe(DASHBOARD_SESSION_LIFETIME_MS);
    }
    expect(mine.find((r) => r.kind === 'keys')?.key_mac).toMatch(/^[0-9a-f]{64}$/);
    expect(mine.find((r) => r.kind === 'admin')?.admin_token_mac).toMatch(/^[0-9a-f]{64}$/);
  });

  it('shows a new webhook secret once, to the admin session that rotated it, and says so', async () => {
    const p = await t.createProject();
    const admin = await asAdmin(p.applicationId);
    const rotated = await post(admin, '/dashboard/webhooks/secret');
    expect(rotated.statusCode).toBe(303);
    expect(rotated.headers.location).toBe('/dashboard/webhooks/secret');
    expect(rotated.body).not.toContain('whsec_');

    const secret = (await secretOf(p))!;
    expect(secret).toMatch(/^whsec_/);
    const shown = await t.app.inject({ url: '/dashboard/webhooks/secret', headers: { cookie: admin.cookie } });
    expect(shown.statusCode).toBe(200);
    expect(shown.headers['cache-control']).toBe('no-store');
    expect(shown.body).toContain(secret);
    expect(shown.body).toContain('Shown once: copy it now; paygate keeps only a sealed copy');

    // a reload, the webhooks page, another admin session: never again
    const reload = await t.app.inject({ url: '/dashboard/webhooks/secret', headers: { cookie: admin.cookie } });
    expect(reload.statusCode).toBe(200);
    expect(reload.body).not.toContain(secret);
    expect(reload.body).toContain('not shown again');
    const page = await t.app.inject({ url: '/dashboard/webhooks', headers: { cookie: admin.cookie } });
    expect(page.body).not.toContain(secret);
    const otherAdmin = await asAdmin(p.applicationId);
    const rotatedAgain = await post(admin, '/dashboard/webhooks/secret');
    expect(rotatedAgain.statusCode).toBe(303);
    const newer = (await secretOf(p))!;
    const peek = await t.app.inject({ url: '/dashboard/webhooks/secret', headers: { cookie: otherAdmin.cookie } });
    expect(peek.body).not.toContain(newer);
    // ...and the session that rotated it may still see it once: the other session's look did not consume it
    const own = await t.app.inject({ url: '/dashboard/webhooks/secret', headers: { cookie: admin.cookie } });
    expect(own.body).toContain(newer);
  });

  it('lets a session signed in with keys rotate the webhook secret but never shows it the secret', async () => {
    const p = await t.createProject();
    const keys = await withKeys(p);
    const before = await secretOf(p);
    const rotated = await post(keys, '/dashboard/webhooks/secret');
    expect(rotated.statusCode).toBe(303);
    expect(rotated.headers.location).toBe('/dashboard/webhooks?done=rotated-unseen');
    const secret = (await secretOf(p))!;
    expect(secret).not.toBe(before);
    expect(rotated.body).not.toContain(secret);
    const page = await t.app.inject({ url: String(rotated.headers.location), headers: { cookie: keys.cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(secret);
    expect(page.body).toContain('shown only once, to an admin session that rotates it');
    const reveal = await t.app.inject({ url: '/dashboard/webhooks/secret', headers: { cookie: keys.cookie } });
    expect(reveal.statusCode).toBe(200);
    expect(reveal.body).not.toContain(secret);
  });
});

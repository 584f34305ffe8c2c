// The dashboard's mode and headers, without a browser: served in sandbox mode only (9404 in production mode), with
// the CSP, cookie flags and sign-in that the Chromium test relies on. Inject into the real app.
import { afterEach, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';

describe('the dashboard outside the browser', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('is not served in production mode', async () => {
    t = await buildTestApp({ config: { sandbox: false, publicBaseUrl: 'https://pay.example.com' } });
    for (const url of ['/dashboard', '/dashboard/login', '/dashboard/assets/htmx.min.js']) {
      const res = await t.app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().code, url).toBe(9404);
    }
  });

  it('serves its pages with a self-only CSP and a strict session cookie, and signs in with the admin token', async () => {
    t = await buildTestApp();
    const login = await t.app.inject({ url: '/dashboard/login' });
    expect(login.statusCode).toBe(200);
    const csp = String(login.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    const setCookie = String(login.headers['set-cookie']);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/dashboard/);
    const cookie = setCookie.split(';')[0]!;
    const token = /name="_csrf" value="([^"]+)"/.exec(login.body)?.[1] ?? '';

    const js = await t.app.inject({ url: '/dashboard/assets/htmx.min.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toContain('javascript');
    expect(js.body).toContain('htmx');

    const form = (body: Record<string, string>) => new URLSearchParams(body).toString();
    const headers = { cookie, 'content-type': 'application/x-www-form-urlencoded' };
    // a wrong token changes nothing: the sign-in page again (9401), no session
    const wrong = await t.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      headers,
      payload: form({ _csrf: token, admin_token: 'not-the-token-at-all' }),
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('9401');
    const signedIn = await t.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      headers,
      payload: form({ _csrf: token, admin_token: TEST_ADMIN_TOKEN }),
    });
    expect(signedIn.statusCode).toBe(303);
    expect(signedIn.headers.location).toBe('/dashboard/projects');
    const admin = String(signedIn.headers['set-cookie']).split(';')[0]!;
    expect(admin).not.toBe(cookie); // a new session (and token) at sign-in
    const projects = await t.app.inject({ url: '/dashboard/projects', headers: { cookie: admin } });
    expect(projects.statusCode).toBe(200);
    // the old anonymous token does not post for the new session
    const stale = await t.app.inject({
      method: 'POST',
      url: '/dashboard/logout',
      headers: { ...headers, cookie: admin },
      payload: form({ _csrf: token }),
    });
    expect(stale.statusCode).toBe(403);
  });
});

// What a newcomer meets first, over HTTP into the real app (sandbox mode, real database): the icon /docs and the
// dashboard ask for, the document's `servers` (PUBLIC_BASE_URL, else this sandbox's loopback address: the base
// gateway_url is built from), the amount bounds the validators enforce, the dashboard's HTML 404 page and a
// refused sign-in answered on the form itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const cookieOf = (setCookie: unknown) =>
  /paygate_dashboard=([^;]*)/.exec(Array.isArray(setCookie) ? setCookie.join('\n') : String(setCookie ?? ''))?.[0];
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

type Schema = { properties?: Record<string, { maximum?: number; minimum?: number }> };
type Doc = {
  servers?: { url: string }[];
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>;
  components: { schemas: Record<string, Schema> };
};

describe('the reference and the dashboard, first contact', () => {
  let t: TestApp;
  let doc: Doc;
  beforeAll(async () => {
    t = await buildTestApp({ env: { PORT: '8123' } });
    doc = (await t.app.inject({ url: '/openapi.json' })).json() as Doc;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves /favicon.ico as an image', async () => {
    const res = await t.app.inject({ url: '/favicon.ico' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/svg+xml');
    expect(res.body).toMatch(/^<svg /);
  });

  it('documents this sandbox as the server when PUBLIC_BASE_URL is unset', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:8123' })]);
  });

  it('documents PUBLIC_BASE_URL as the server when set', async () => {
    const other = await buildTestApp({ env: { PUBLIC_BASE_URL: 'https://pay.example.test/' } });
    try {
      const body = (await other.app.inject({ url: '/openapi.json' })).json() as Doc;
      expect(body.servers).toEqual([expect.objectContaining({ url: 'https://pay.example.test' })]);
    } finally {
      await other.close();
    }
  });

  it('documents every amount with the bound the validators enforce: 10,000,000,000 won', () => {
    const AMOUNTS = ['price', 'tax_free', 'cancel_price', 'cancel_tax_free', 'cancelled_price', 'cancelled_tax_free'];
    const seen: string[] = [];
    const check = (where: string, schema: Schema | undefined) => {
      for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
        if (!AMOUNTS.includes(name)) continue;
        seen.push(`${where} ${name}`);
        expect(prop.maximum, `${where} ${name}`).toBe(10_000_000_000);
      }
    };
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops))
        check(`${method} ${path}`, op.requestBody?.content['application/json']?.schema);
    for (const [name, schema] of Object.entries(doc.components.schemas)) check(name, schema);
    expect(seen).toContain('post /v2/subscribe/schedules price');
    expect(seen).toContain('post /v2/cancel cancel_price');
    expect(seen).toContain('Receipt price');
  });

  it('refuses a schedule price above that bound, as it documents', async () => {
    const p = await t.createProject();
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/subscribe/schedules',
      headers: { authorization: p.basicAuth, 'content-type': 'application/json' },
      payload: { billing_key: '0'.repeat(24), order_name: 'plan', price: 10_000_000_001, interval: 'month' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error_code: 'INVALID_REQUEST' });
    expect(res.body).toContain('price must be a positive integer, at most 10000000000');
  });

  it('answers an unknown dashboard page with an HTML 404 in the dashboard layout', async () => {
    const res = await t.app.inject({ url: '/dashboard/no-such-page' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('Page not found');
    expect(res.body).toContain('/dashboard/assets/dashboard.css');
  });

  it('shows a wrong key on the sign-in form, with its status, and never writes the secret back', async () => {
    const p = await t.createProject();
    const login = await t.app.inject({ url: '/dashboard/login' });
    const cookie = cookieOf(login.headers['set-cookie'])!;
    const secret = 'wrong-secret-key-value-0123456789';
    const res = await t.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ _csrf: csrfOf(login.body), client_key: p.clientKey, secret_key: secret }).toString(),
    });
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('APP_SK_NOT_MATCHED');
    // the form itself, ready for another try: its fields and a CSRF token
    expect(res.body).toContain('name="secret_key"');
    expect(res.body).toContain('name="admin_token"');
    expect(csrfOf(res.body)).not.toBe('');
    expect(res.body).toContain(`value="${p.clientKey}"`);
    expect(res.body).not.toContain(secret);
    // without the session's CSRF token it is still refused before any key is checked
    const forged = await t.app.inject({
      method: 'POST',
      url: '/dashboard/login',
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ client_key: p.clientKey, secret_key: secret }).toString(),
    });
    expect(forged.statusCode).toBe(403);
  });
});

// GET /: a browser opening the server's address lands on the dashboard in sandbox mode; in production mode, where
// there is no dashboard, it gets a small JSON index of what is served. Outside the OpenAPI document, like /health.
import { afterAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const apps: TestApp[] = [];
afterAll(async () => {
  for (const t of apps) await t.close();
});

describe('GET /', () => {
  it('redirects to /dashboard in sandbox mode, without a key', async () => {
    const t = await buildTestApp();
    apps.push(t);
    expect(t.deps.config.sandbox).toBe(true);
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/dashboard');
    // where it leads is served
    const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard' });
    expect(dashboard.statusCode).not.toBe(404);
  });

  it('answers a JSON index in production mode, and is not in the OpenAPI document', async () => {
    const t = await buildTestApp({ config: { sandbox: false } });
    apps.push(t);
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: 'paygate', docs: '/docs', openapi: '/openapi.json', health: '/health' });
    for (const path of ['/docs', '/openapi.json', '/health']) {
      expect((await t.app.inject({ method: 'GET', url: path })).statusCode, path).toBeLessThan(400);
    }
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).not.toContain('/');
  });
});

// Every authentication code of the spec through the real auth hook, on routes of the real app plus
// three probe routes that declare the rules a real area route declares (scope, seller-only).
import type { FastifyPluginAsync } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertOwnedBy } from '../../src/projects/access.js';
import { ApiError } from '../../src/platform/errors.js';
import { PROJECT_BY_CLIENT_KEY_REUSE_MS } from '../../src/projects/store.js';
import { basicAuthHeader, buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';

const probeRoutes: FastifyPluginAsync = async (app) => {
  app.get('/test/plain', { config: { auth: 'project' } }, async (request) => ({
    application_id: request.project.application_id,
    method: request.authMethod,
  }));
  app.get('/test/default', async (request) => ({ application_id: request.project.application_id }));
  app.get('/test/scoped', { config: { auth: 'project', scope: 'escrow_shipping_start' } }, async (request) => ({
    application_id: request.project.application_id,
  }));
  // the spec's one exemption, as the shipping-start route will declare it
  app.get(
    '/test/shipping',
    { config: { auth: 'project', scope: 'escrow_shipping_start', bearerWithoutScope: true } },
    async (request) => ({ application_id: request.project.application_id }),
  );
  app.get('/test/seller', { config: { auth: 'project', scope: 'escrow_shipping_start', sellerOnly: true } }, async (request) => ({
    application_id: request.project.application_id,
  }));
};

const MINUTE = 60_000;

async function tokenFor(t: TestApp, p: TestProject): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v2/request/token',
    payload: { application_id: p.applicationId, private_key: p.privateKey },
  });
  expect(res.statusCode).toBe(200);
  return res.json().access_token as string;
}

function expectError(res: { statusCode: number; json(): unknown }, errorCode: string, code: number, status?: number): void {
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ error_code: errorCode, code });
  expect(typeof body.message).toBe('string');
  if (status !== undefined) expect(res.statusCode).toBe(status);
  else expect(res.statusCode).toBeGreaterThanOrEqual(400);
}

describe('authentication', () => {
  let t: TestApp;
  let p: TestProject;

  beforeAll(async () => {
    t = await buildTestApp({ routes: probeRoutes });
    p = await t.createProject();
  });
  afterAll(async () => {
    await t?.close();
  });

  const get = (url: string, authorization?: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url, headers: { ...(authorization !== undefined ? { authorization } : {}), ...headers } });

  it('accepts Basic client_key:secret_key and exposes the project', async () => {
    const res = await get('/test/plain', p.basicAuth);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ application_id: p.applicationId, method: 'basic' });
  });

  it('requires project auth on a route that declares nothing', async () => {
    expectError(await get('/test/default'), 'APP_AT_AUTHORIZE_HEADER_BLANK', 1206, 401);
    expect((await get('/test/default', p.basicAuth)).statusCode).toBe(200);
  });

  it('1206 when the Authorization header is missing or blank', async () => {
    expectError(await get('/test/plain'), 'APP_AT_AUTHORIZE_HEADER_BLANK', 1206, 401);
    expectError(await get('/test/plain', ''), 'APP_AT_AUTHORIZE_HEADER_BLANK', 1206, 401);
    expectError(await get('/test/plain', '   '), 'APP_AT_AUTHORIZE_HEADER_BLANK', 1206, 401);
  });

  it('1205 when the prefix is not Basic/Bearer or the credentials are undecodable', async () => {
    const encoded = Buffer.from(`${p.clientKey}:${p.secretKey}`).toString('base64');
    expectError(await get('/test/plain', encoded), 'APP_AT_AUTHORIZE_TYPE_INVALID', 1205, 401);
    expectError(await get('/test/plain', `Token ${encoded}`), 'APP_AT_AUTHORIZE_TYPE_INVALID', 1205, 401);
    expectError(await get('/test/plain', 'Basic'), 'APP_AT_AUTHORIZE_TYPE_INVALID', 1205, 401);
    expectError(await get('/test/plain', 'Basic !!!not-base64!!!'), 'APP_AT_AUTHORIZE_TYPE_INVALID', 1205, 401);
    const noColon = Buffer.from(p.clientKey).toString('base64');
    expectError(await get('/test/plain', `Basic ${noColon}`), 'APP_AT_AUTHORIZE_TYPE_INVALID', 1205, 401);
  });

  it('accepts the scheme name in any case', async () => {
    const res = await get('/test/plain', p.basicAuth.replace('Basic', 'basic'));
    expect(res.statusCode).toBe(200);
  });

  it('1216 for an unknown or empty client key', async () => {
    expectError(
      await get('/test/plain', basicAuthHeader('no-such-client-key', p.secretKey)),
      'APP_CLIENT_KEY_NOT_FOUND',
      1216,
      401,
    );
    expectError(await get('/test/plain', basicAuthHeader('', p.secretKey)), 'APP_CLIENT_KEY_NOT_FOUND', 1216, 401);
  });

  it('1204 for a wrong secret key, including the private key or an empty one', async () => {
    expectError(await get('/test/plain', basicAuthHeader(p.clientKey, `${p.secretKey}x`)), 'APP_SK_NOT_MATCHED', 1204, 401);
    expectError(await get('/test/plain', basicAuthHeader(p.clientKey, p.privateKey)), 'APP_SK_NOT_MATCHED', 1204, 401);
    expectError(await get('/test/plain', basicAuthHeader(p.clientKey, '')), 'APP_SK_NOT_MATCHED', 1204, 401);
  });

  it("one project's secret does not open another project's key", async () => {
    const other = await t.createProject();
    expectError(await get('/test/plain', basicAuthHeader(other.clientKey, p.secretKey)), 'APP_SK_NOT_MATCHED', 1204, 401);
  });

  it('1203 naming the requesting IP when it is not on the allow-list; X-Forwarded-For is not believed', async () => {
    const fenced = await t.createProject({ allowed_ips: ['10.1.2.3', '192.168.0.0/16'] });
    const res = await get('/test/plain', fenced.basicAuth, { 'x-forwarded-for': '10.1.2.3' });
    expectError(res, 'APP_FIREWALL_BLOCKED', 1203, 403);
    expect((res.json() as { message: string }).message).toContain('127.0.0.1');

    const fromAllowed = await t.app.inject({
      method: 'GET',
      url: '/test/plain',
      headers: { authorization: fenced.basicAuth },
      remoteAddress: '192.168.7.9',
    });
    expect(fromAllowed.statusCode).toBe(200);
  });

  it('an allow-list entry matches the IPv4-mapped IPv6 form of the address', async () => {
    const fenced = await t.createProject({ allowed_ips: ['127.0.0.1'] });
    const res = await t.app.inject({
      method: 'GET',
      url: '/test/plain',
      headers: { authorization: fenced.basicAuth },
      remoteAddress: '::ffff:127.0.0.1',
    });
    expect(res.statusCode).toBe(200);
  });

  it('1224 for an expired key on a route without a scope, 1218 at the scope check', async () => {
    const expired = await t.createProject({ key_expires_at: new Date(Date.now() - MINUTE).toISOString() });
    expectError(await get('/test/plain', expired.basicAuth), 'APP_KEY_CHAIN_EXPIRED', 1224, 401);
    expectError(await get('/test/scoped', expired.basicAuth), 'APP_CLIENT_KEY_EXPIRED', 1218, 401);
  });

  it('a key expires when the clock passes key_expires_at', async () => {
    const soon = await t.createProject({ key_expires_at: new Date(t.clock.now().getTime() + 10 * MINUTE).toISOString() });
    expect((await get('/test/plain', soon.basicAuth)).statusCode).toBe(200);
    t.clock.advance(11 * MINUTE);
    try {
      expectError(await get('/test/plain', soon.basicAuth), 'APP_KEY_CHAIN_EXPIRED', 1224, 401);
    } finally {
      t.clock.advance(-11 * MINUTE);
    }
  });

  it('1222 when the scope is not granted, 1221 when the key has no scopes at all', async () => {
    const noShipping = await t.createProject({ scopes: ['billing_key', 'receipt'] });
    expectError(await get('/test/scoped', noShipping.basicAuth), 'API_SCOPE_INVALID', 1222, 401);
    expect((await get('/test/plain', noShipping.basicAuth)).statusCode).toBe(200);

    const noScopes = await t.createProject({ scopes: [] });
    expectError(await get('/test/scoped', noScopes.basicAuth), 'API_ROLE_NOT_SUPPORT', 1221, 403);

    expect((await get('/test/scoped', p.basicAuth)).statusCode).toBe(200);
  });

  it('600 on a seller-only route for a non-seller project', async () => {
    const buyer = await t.createProject({ seller: false });
    expectError(await get('/test/seller', buyer.basicAuth), 'API_ONLY_SELLER', 600, 403);
    expect((await get('/test/plain', buyer.basicAuth)).statusCode).toBe(200);
    expect((await get('/test/seller', p.basicAuth)).statusCode).toBe(200);
  });

  describe('legacy Bearer access token', () => {
    it('is accepted for 30 minutes, then refused', async () => {
      const token = await tokenFor(t, p);
      const ok = await get('/test/plain', `Bearer ${token}`);
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toEqual({ application_id: p.applicationId, method: 'bearer' });

      t.clock.advance(29 * MINUTE);
      try {
        expect((await get('/test/plain', `Bearer ${token}`)).statusCode).toBe(200);
        t.clock.advance(2 * MINUTE);
        expectError(await get('/test/plain', `Bearer ${token}`), 'ACCESS_TOKEN_INVALID', 9403, 401);
      } finally {
        t.clock.advance(-31 * MINUTE);
      }
    });

    it("carries its project's scopes: 1222 without the route's scope, 1221 without any", async () => {
      const noShipping = await t.createProject({ scopes: ['receipt'] });
      const token = await tokenFor(t, noShipping);
      expectError(await get('/test/scoped', `Bearer ${token}`), 'API_SCOPE_INVALID', 1222, 401);
      const noScopes = await t.createProject({ scopes: [] });
      expectError(await get('/test/scoped', `Bearer ${await tokenFor(t, noScopes)}`), 'API_ROLE_NOT_SUPPORT', 1221, 403);
      expect((await get('/test/scoped', `Bearer ${await tokenFor(t, p)}`)).statusCode).toBe(200);
    });

    it('stands in for the scope only on a route flagged bearerWithoutScope (the spec: shipping start)', async () => {
      const noShipping = await t.createProject({ scopes: ['receipt'] });
      const token = await tokenFor(t, noShipping);
      const res = await get('/test/shipping', `Bearer ${token}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ application_id: noShipping.applicationId });
      // the flag exempts the token, not the Basic key
      expectError(await get('/test/shipping', noShipping.basicAuth), 'API_SCOPE_INVALID', 1222, 401);
      // and not the rest of the checks
      const buyer = await t.createProject({ seller: false, scopes: [] });
      expect((await get('/test/shipping', `Bearer ${await tokenFor(t, buyer)}`)).statusCode).toBe(200);
      expectError(await get('/test/shipping', 'Bearer not-a-token'), 'ACCESS_TOKEN_INVALID', 9403, 401);
    });

    it('still enforces seller-only, the allow-list and key expiry', async () => {
      const buyer = await t.createProject({ seller: false });
      expectError(await get('/test/seller', `Bearer ${await tokenFor(t, buyer)}`), 'API_ONLY_SELLER', 600, 403);

      const fenced = await t.createProject({ allowed_ips: ['10.0.0.0/8'] });
      const fencedToken = await t.app.inject({
        method: 'POST',
        url: '/v2/request/token',
        payload: { application_id: fenced.applicationId, private_key: fenced.privateKey },
        remoteAddress: '10.9.9.9',
      });
      expect(fencedToken.statusCode).toBe(200);
      expectError(await get('/test/plain', `Bearer ${fencedToken.json().access_token}`), 'APP_FIREWALL_BLOCKED', 1203, 403);

      const expiring = await t.createProject({ key_expires_at: new Date(t.clock.now().getTime() + 5 * MINUTE).toISOString() });
      const expiringToken = await tokenFor(t, expiring);
      t.clock.advance(6 * MINUTE);
      try {
        expectError(await get('/test/plain', `Bearer ${expiringToken}`), 'APP_KEY_CHAIN_EXPIRED', 1224, 401);
        expectError(await get('/test/scoped', `Bearer ${expiringToken}`), 'APP_CLIENT_KEY_EXPIRED', 1218, 401);
      } finally {
        t.clock.advance(-6 * MINUTE);
      }
    });

    it('refuses an unknown token', async () => {
      expectError(await get('/test/plain', 'Bearer not-a-token'), 'ACCESS_TOKEN_INVALID', 9403, 401);
    });

    it('is not a Basic secret and the secret key is not a token', async () => {
      expectError(await get('/test/plain', `Bearer ${p.secretKey}`), 'ACCESS_TOKEN_INVALID', 9403, 401);
    });
  });

  it('1225 helper: a resource of another project is refused', () => {
    expect(() => assertOwnedBy(p.project, p.applicationId)).not.toThrow();
    try {
      assertOwnedBy(p.project, 'ffffffffffffffffffffffff');
      expect.unreachable('assertOwnedBy accepted a foreign resource');
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).toBody()).toMatchObject({ error_code: 'APP_KEY_CHAIN_SESSION_INVALID', code: 1225 });
    }
  });

  it("reuses a project read for a second; a change through the admin API applies at the next call, another process's within the second", async () => {
    const q = await t.createProject();
    const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
    expect((await get('/test/plain', q.basicAuth)).statusCode).toBe(200);

    // the admin API (this process's store): the allow-list applies at once
    const fenced = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/projects/${q.applicationId}`,
      headers: ADMIN,
      payload: { allowed_ips: ['10.9.9.9'] },
    });
    expect(fenced.statusCode, fenced.body).toBe(200);
    expectError(await get('/test/plain', q.basicAuth), 'APP_FIREWALL_BLOCKED', 1203, 403);
    const opened = await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/projects/${q.applicationId}`,
      headers: ADMIN,
      payload: { allowed_ips: [] },
    });
    expect(opened.statusCode, opened.body).toBe(200);
    expect((await get('/test/plain', q.basicAuth)).statusCode).toBe(200);

    // another process writing the row (here: straight to the database) is seen once the second has passed
    await t.deps.database.db
      .updateTable('projects')
      .set({ allowed_ips: JSON.stringify(['10.9.9.9']) })
      .where('application_id', '=', q.applicationId)
      .execute();
    expect((await get('/test/plain', q.basicAuth)).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, PROJECT_BY_CLIENT_KEY_REUSE_MS + 50));
    expectError(await get('/test/plain', q.basicAuth), 'APP_FIREWALL_BLOCKED', 1203, 403);
  });

  it('authenticates before the body is parsed: bad JSON without credentials gets 1206', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/subscribe/payment',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expectError(res, 'APP_AT_AUTHORIZE_HEADER_BLANK', 1206, 401);
  });
});

describe('trusted proxies', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: { TRUSTED_PROXIES: '127.0.0.1' }, routes: probeRoutes });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('believes X-Forwarded-For only from a configured proxy', async () => {
    const fenced = await t.createProject({ allowed_ips: ['203.0.113.7'] });
    const viaProxy = await t.app.inject({
      method: 'GET',
      url: '/test/plain',
      headers: { authorization: fenced.basicAuth, 'x-forwarded-for': '203.0.113.7' },
    });
    expect(viaProxy.statusCode).toBe(200);

    const notAProxy = await t.app.inject({
      method: 'GET',
      url: '/test/plain',
      headers: { authorization: fenced.basicAuth, 'x-forwarded-for': '203.0.113.7' },
      remoteAddress: '198.51.100.1',
    });
    expect(notAProxy.statusCode).toBe(403);
    expect(notAProxy.json().message).toContain('198.51.100.1');

    const spoofed = await t.app.inject({
      method: 'GET',
      url: '/test/plain',
      headers: { authorization: fenced.basicAuth, 'x-forwarded-for': '198.51.100.9' },
    });
    expect(spoofed.statusCode).toBe(403);
    expect(spoofed.json().message).toContain('198.51.100.9');
  });
});

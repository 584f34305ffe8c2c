// Legacy POST /v2/request/token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/platform/ids.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$/;

describe('POST /v2/request/token', () => {
  let t: TestApp;
  let p: TestProject;
  beforeAll(async () => {
    t = await buildTestApp();
    p = await t.createProject();
  });
  afterAll(async () => {
    await t?.close();
  });

  const requestToken = (body: unknown, remoteAddress?: string) =>
    t.app.inject({
      method: 'POST',
      url: '/v2/request/token',
      payload: body as object,
      ...(remoteAddress ? { remoteAddress } : {}),
    });

  it('issues a 30-minute access token for application_id + private_key', async () => {
    const before = t.clock.now().getTime();
    const res = await requestToken({ application_id: p.applicationId, private_key: p.privateKey });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expire_in', 'expired_at']);
    expect(body.expire_in).toBe(1800);
    expect(body.access_token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(body.expired_at).toMatch(ISO_WITH_OFFSET);
    const expiresAt = Date.parse(body.expired_at);
    // second precision in the rendering
    expect(expiresAt).toBeGreaterThanOrEqual(before + 30 * 60_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(t.clock.now().getTime() + 30 * 60_000);
  });

  it('stores only the digest of the token', async () => {
    const { access_token: token } = (await requestToken({ application_id: p.applicationId, private_key: p.privateKey })).json();
    const rows = await t.deps.database.db.selectFrom('access_tokens').selectAll().execute();
    expect(rows.some((r) => r.token_hash === hashSecret(token))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('every call issues a different token; each works on its own', async () => {
    const a = (await requestToken({ application_id: p.applicationId, private_key: p.privateKey })).json().access_token;
    const b = (await requestToken({ application_id: p.applicationId, private_key: p.privateKey })).json().access_token;
    expect(a).not.toBe(b);
  });

  it('1216 for an unknown application, 1204 for a wrong private key (the secret key is not it)', async () => {
    const unknown = await requestToken({ application_id: 'ffffffffffffffffffffffff', private_key: p.privateKey });
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json()).toMatchObject({ error_code: 'APP_CLIENT_KEY_NOT_FOUND', code: 1216 });
    for (const wrong of [`${p.privateKey}x`, p.secretKey]) {
      const res = await requestToken({ application_id: p.applicationId, private_key: wrong });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ error_code: 'APP_SK_NOT_MATCHED', code: 1204 });
    }
  });

  it('1224 when the key has expired', async () => {
    const expired = await t.createProject({ key_expires_at: new Date(t.clock.now().getTime() - 1000).toISOString() });
    const res = await requestToken({ application_id: expired.applicationId, private_key: expired.privateKey });
    expect(res.json()).toMatchObject({ error_code: 'APP_KEY_CHAIN_EXPIRED', code: 1224 });
  });

  it('1203 from an address outside the allow-list', async () => {
    const fenced = await t.createProject({ allowed_ips: ['10.0.0.1'] });
    const res = await requestToken({ application_id: fenced.applicationId, private_key: fenced.privateKey }, '10.0.0.2');
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error_code: 'APP_FIREWALL_BLOCKED', code: 1203 });
    expect(res.json().message).toContain('10.0.0.2');
  });

  it('missing or blank fields -> INVALID_REQUEST; the private key is never echoed', async () => {
    for (const body of [
      {},
      { application_id: p.applicationId },
      { private_key: p.privateKey },
      { application_id: '', private_key: p.privateKey },
    ]) {
      const res = await requestToken(body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });
      expect(res.body).not.toContain(p.privateKey);
    }
  });

  it('needs no Authorization header and ignores a bad one', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v2/request/token',
      headers: { authorization: 'Basic bm9wZTpub3Bl' },
      payload: { application_id: p.applicationId, private_key: p.privateKey },
    });
    expect(res.statusCode).toBe(200);
  });

  it('the private key and the token never reach the log', async () => {
    const token = (await requestToken({ application_id: p.applicationId, private_key: p.privateKey })).json().access_token;
    await t.app.inject({
      method: 'GET',
      url: '/v2/receipt/000000000000000000000000',
      headers: { authorization: `Bearer ${token}` },
    });
    const logs = t.logs();
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).not.toContain(p.privateKey);
    expect(logs).not.toContain(token);
    expect(logs).not.toContain(p.secretKey);
  });
});

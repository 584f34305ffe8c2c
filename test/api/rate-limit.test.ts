// Brute-force throttles through the real app: failed authentications per IP and per client key, token
// requests (all, and failed ones per IP and per application), wrong admin tokens. Each answers 9429 in
// the catalog envelope with Retry-After once the limit is used up, while other callers go on unaffected.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RATE_LIMITS } from '../../src/api/rate-limits.js';
import { basicAuthHeader, buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';

const RECEIPT = '/v2/receipt/000000000000000000000000';

function expectThrottled(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }): void {
  expect(res.statusCode).toBe(429);
  expect(res.json()).toMatchObject({ error_code: 'TOO_MANY_REQUESTS', code: 9429, message: expect.any(String) });
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe('rate limits', () => {
  let t: TestApp;
  let p: TestProject;
  beforeEach(async () => {
    t = await buildTestApp();
    p = await t.createProject();
  });
  afterEach(async () => {
    await t?.close();
  });

  const receipt = (authorization: string, remoteAddress = '127.0.0.1') =>
    t.app.inject({ method: 'GET', url: RECEIPT, headers: { authorization }, remoteAddress });
  const token = (body: object, remoteAddress = '127.0.0.1') =>
    t.app.inject({ method: 'POST', url: '/v2/request/token', payload: body, remoteAddress });
  const admin = (authorization: string, remoteAddress = '127.0.0.1') =>
    t.app.inject({ method: 'GET', url: '/admin/v1/projects', headers: { authorization }, remoteAddress });

  it('failed Basic authentications from one IP: 429 after the limit, the right key included; other IPs unaffected', async () => {
    const { perIp } = RATE_LIMITS.authFailures;
    // unknown client keys: a new credential every time, so only the IP counter fills
    for (let i = 0; i < perIp; i++) {
      const res = await receipt(basicAuthHeader(`guess-${i}`, 'x'), '198.51.100.7');
      expect(res.json()).toMatchObject({ code: 1216 });
    }
    expectThrottled(await receipt(basicAuthHeader('guess-next', 'x'), '198.51.100.7'));
    // refused before any key is checked: a right key from that IP is refused too
    expectThrottled(await receipt(p.basicAuth, '198.51.100.7'));
    // a legitimate caller elsewhere is not affected
    expect((await receipt(p.basicAuth, '203.0.113.9')).json()).toMatchObject({ code: 2000 });
  });

  it('failed authentications against one client key: 429 from every IP for that key; other keys unaffected', async () => {
    const { perCredential } = RATE_LIMITS.authFailures;
    for (let i = 0; i < perCredential; i++) {
      // each guess from another IP, so only the client key's counter fills
      const res = await receipt(basicAuthHeader(p.clientKey, `wrong-${i}`), `10.0.${i}.1`);
      expect(res.json()).toMatchObject({ code: 1204 });
    }
    expectThrottled(await receipt(basicAuthHeader(p.clientKey, 'wrong-next'), '10.9.9.9'));
    expectThrottled(await receipt(p.basicAuth, '10.9.9.10'));
    const other = await t.createProject();
    expect((await receipt(other.basicAuth, '10.9.9.9')).json()).toMatchObject({ code: 2000 });
  });

  it('unknown Bearer tokens count against the IP', async () => {
    for (let i = 0; i < RATE_LIMITS.authFailures.perIp; i++) {
      expect((await receipt(`Bearer guessed-token-${i}`, '198.51.100.8')).json()).toMatchObject({ code: 9403 });
    }
    expectThrottled(await receipt('Bearer guessed-token-next', '198.51.100.8'));
    expect((await receipt(p.basicAuth, '198.51.100.9')).json()).toMatchObject({ code: 2000 });
  });

  it('successful calls and refusals that are not guesses do not count', async () => {
    for (let i = 0; i < RATE_LIMITS.authFailures.perIp + 5; i++) {
      expect((await receipt(p.basicAuth)).json()).toMatchObject({ code: 2000 });
      // no Authorization header (1206) or a malformed one (1205) is not a guess at a key
      expect((await t.app.inject({ method: 'GET', url: RECEIPT })).json()).toMatchObject({ code: 1206 });
      expect((await receipt('Digest abc')).json()).toMatchObject({ code: 1205 });
    }
    expect((await receipt(p.basicAuth)).statusCode).not.toBe(429);
  });

  it('token requests: wrong private keys per application and per IP, then every request per IP', async () => {
    const { perCredential, perIp } = RATE_LIMITS.tokenFailures;
    for (let i = 0; i < perCredential; i++) {
      const res = await token({ application_id: p.applicationId, private_key: `wrong-${i}` }, `10.1.${i}.1`);
      expect(res.json()).toMatchObject({ code: 1204 });
    }
    expectThrottled(await token({ application_id: p.applicationId, private_key: p.privateKey }, '10.1.99.1'));
    const other = await t.createProject();
    expect((await token({ application_id: other.applicationId, private_key: other.privateKey }, '10.1.99.1')).statusCode).toBe(
      200,
    );

    for (let i = 0; i < perIp; i++) {
      const res = await token(
        { application_id: `ffffffffffffffffffff${String(i).padStart(4, '0')}`, private_key: 'x' },
        '10.2.0.1',
      );
      expect(res.json()).toMatchObject({ code: 1216 });
    }
    expectThrottled(await token({ application_id: other.applicationId, private_key: other.privateKey }, '10.2.0.1'));
    expect((await token({ application_id: other.applicationId, private_key: other.privateKey }, '10.2.0.2')).statusCode).toBe(
      200,
    );
  });

  it('token requests: at most the per-IP number of requests per window, even successful ones', async () => {
    const { perIp } = RATE_LIMITS.tokenRequests;
    for (let i = 0; i < perIp; i++) {
      expect((await token({ application_id: p.applicationId, private_key: p.privateKey }, '10.3.0.1')).statusCode).toBe(200);
    }
    expectThrottled(await token({ application_id: p.applicationId, private_key: p.privateKey }, '10.3.0.1'));
    expect((await token({ application_id: p.applicationId, private_key: p.privateKey }, '10.3.0.2')).statusCode).toBe(200);
  });

  it('wrong admin tokens: 429 for that IP after the limit, the right token included; other IPs unaffected', async () => {
    const { perIp } = RATE_LIMITS.adminFailures;
    for (let i = 0; i < perIp; i++) {
      expect((await admin(`Bearer wrong-admin-token-${i}`, '192.0.2.50')).json()).toMatchObject({ code: 9401 });
    }
    expectThrottled(await admin(`Bearer wrong-admin-token-next`, '192.0.2.50'));
    expectThrottled(await admin(`Bearer ${TEST_ADMIN_TOKEN}`, '192.0.2.50'));
    expect((await admin(`Bearer ${TEST_ADMIN_TOKEN}`, '192.0.2.51')).statusCode).toBe(200);
    // admin failures are their own counter: the project API from that IP still works
    expect((await receipt(p.basicAuth, '192.0.2.50')).json()).toMatchObject({ code: 2000 });
  });
});

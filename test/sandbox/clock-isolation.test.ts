// The sandbox clock moves the durable processes' time and nothing of the real world's, and only the operator moves
// it (issue 24, item 4). On the stack `npm start` runs in sandbox mode (test/helpers/sandbox-clock-stack.ts: the
// embedded engine with --clock-control, the real worker, the app on the clocks createClocks builds):
//   - no project key (Basic or Bearer) advances the clock: 9401 as on the admin API, and the clock stays put;
//   - after the admin token advances it 30 days, a Bearer token issued just before still works, the secret key a
//     rotation left in its 24-hour grace still works, an Idempotency-Key of just before still replays, and the
//     reserve's feedback delivery carries a `webhook-timestamp` of the wall clock that the standardwebhooks
//     package verifies, while the reserve itself fired on the advanced clock;
//   - a throttled credential stays throttled across an advance (rate-limit windows are wall time).
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthHeader, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';
import { adminClock, openSandboxClockStack, type SandboxClockStack } from '../helpers/sandbox-clock-stack.js';
import { TEST_CARD } from '../payments/key-in-fixtures.js';
import { eventually, expectApiError, type JsonResponse, type Receiver, startReceiver } from '../webhooks/fixtures.js';

const DAY_MS = 24 * 3600_000;

describe('the sandbox clock moves only the durable processes, and only the admin token moves it', () => {
  let stack: SandboxClockStack;
  let t: TestApp;
  let receiver: Receiver;
  let hosts = 0;

  beforeAll(async () => {
    stack = await openSandboxClockStack('clock-isolation');
    t = stack.t;
    receiver = await startReceiver('/feedback');
  }, 120_000);

  afterAll(async () => {
    await receiver?.close();
    await stack?.close();
  });

  /** One request as a merchant sends it, from its own address unless given (the throttles count per address). */
  const send = async (
    authorization: string,
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
    remoteAddress = `10.7.0.${++hosts}`,
  ): Promise<JsonResponse> => {
    const res = await t.app.inject({
      method,
      url,
      remoteAddress,
      headers: { authorization, ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
  };

  /** A project with a webhook_url (so its deliveries are signed with a secret the test knows), and its keys. */
  const project = async () => {
    const { project: row, secrets } = await t.deps.services.projects.create({
      name: 'clock isolation',
      webhook_url: receiver.url,
    });
    return {
      applicationId: row.application_id,
      clientKey: secrets.client_key,
      secretKey: secrets.secret_key,
      privateKey: secrets.private_key,
      basicAuth: basicAuthHeader(secrets.client_key, secrets.secret_key),
      webhookSecret: secrets.webhook_secret!,
    };
  };
  const tokenOf = async (p: { applicationId: string; privateKey: string }) => {
    const res = await send('', 'POST', '/v2/request/token', { application_id: p.applicationId, private_key: p.privateKey });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return `Bearer ${res.body.access_token as string}`;
  };
  const sandboxNow = async () => (await adminClock(t).now()).getTime();

  it('no project key moves the clock: Basic and Bearer get 9401 as on the admin API, and the time stays put', async () => {
    const p = await project();
    const bearer = await tokenOf(p);
    const before = await sandboxNow();
    for (const authorization of [p.basicAuth, bearer]) {
      // the project reads the clock: reading moves nothing
      const read = await send(authorization, 'GET', '/sandbox/v1/clock');
      expect(read.status, JSON.stringify(read.body)).toBe(200);
      for (const body of [{ seconds: 30 * 86_400 }, { to: new Date(before + 30 * DAY_MS).toISOString() }]) {
        expectApiError(await send(authorization, 'POST', '/sandbox/v1/clock/advance', body), 401, 9401, 'ADMIN_UNAUTHORIZED');
      }
    }
    // a wrong admin token neither
    expectApiError(
      await send(`Bearer ${TEST_ADMIN_TOKEN}-not`, 'POST', '/sandbox/v1/clock/advance', { seconds: 60 }),
      401,
      9401,
      'ADMIN_UNAUTHORIZED',
    );
    expect((await sandboxNow()) - before).toBeLessThan(60_000);
  }, 60_000);

  it("the dashboard too: a key's session reads the clock but cannot advance it (9401); an admin session can", async () => {
    const p = await project();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const cookieOf = (setCookie: unknown) =>
      /paygate_dashboard=([^;]*)/.exec(Array.isArray(setCookie) ? setCookie.join('\n') : String(setCookie ?? ''))?.[0];
    const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const post = (cookie: string, url: string, fields: Record<string, string>) =>
      t.app.inject({ method: 'POST', url, headers: { ...form, cookie }, payload: new URLSearchParams(fields).toString() });
    /** signs in with `fields` (an admin then picks the project); the session's cookie and its clock page */
    const signIn = async (fields: Record<string, string>) => {
      const login = await t.app.inject({ url: '/dashboard/login' });
      const res = await post(cookieOf(login.headers['set-cookie'])!, '/dashboard/login', {
        _csrf: csrfOf(login.body),
        ...fields,
      });
      expect(res.statusCode, res.body).toBe(303);
      let cookie = cookieOf(res.headers['set-cookie'])!;
      if (fields.admin_token) {
        const projects = await t.app.inject({ url: '/dashboard/projects', headers: { cookie } });
        const picked = await post(cookie, '/dashboard/projects', {
          _csrf: csrfOf(projects.body),
          application_id: p.applicationId,
        });
        expect(picked.statusCode, picked.body).toBe(303);
        cookie = cookieOf(picked.headers['set-cookie'])!;
      }
      const page = await t.app.inject({ url: '/dashboard/clock', headers: { cookie } });
      expect(page.statusCode).toBe(200);
      return { cookie, csrf: csrfOf(page.body), page: page.body };
    };

    const keys = await signIn({ client_key: p.clientKey, secret_key: p.secretKey });
    expect(keys.page).toContain('Only an admin session moves the sandbox clock');
    const before = await sandboxNow();
    const refused = await post(keys.cookie, '/dashboard/clock/advance', { _csrf: keys.csrf, seconds: String(30 * 86_400) });
    expect(refused.statusCode).toBe(401);
    expect(refused.body).toContain('9401');
    expect((await sandboxNow()) - before).toBeLessThan(60_000);

    const admin = await signIn({ admin_token: TEST_ADMIN_TOKEN });
    expect(admin.page).not.toContain('Only an admin session moves the sandbox clock');
    const advanced = await post(admin.cookie, '/dashboard/clock/advance', { _csrf: admin.csrf, seconds: '60' });
    expect(advanced.statusCode, advanced.body).toBe(303);
    expect((await sandboxNow()) - before).toBeGreaterThanOrEqual(60_000);
  }, 60_000);

  it('after the admin advances 30 days: tokens, rotated keys, Idempotency-Keys and webhook timestamps keep wall time; the reserve fires', async () => {
    const p = await project();
    // keys rotated with 24 hours of grace: the old secret key keeps working a day of wall time
    const rotated = await send(`Bearer ${TEST_ADMIN_TOKEN}`, 'POST', `/admin/v1/projects/${p.applicationId}/keys/rotate`, {
      grace_hours: 24,
    });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const oldKeys = p.basicAuth;
    // a Bearer token (30 minutes), issued after the rotation (a rotation ends the tokens issued before it)
    const bearer = await tokenOf({ applicationId: p.applicationId, privateKey: rotated.body.private_key as string });
    const newKeys = basicAuthHeader(p.clientKey, rotated.body.secret_key as string);

    const issued = await send(oldKeys, 'POST', '/v2/request/subscribe', TEST_CARD);
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const billingKey = issued.body.billing_key as string;
    // a charge under an Idempotency-Key (retained 24 hours), with the new keys
    const idempotency = { 'idempotency-key': randomUUID() };
    const charge = { billing_key: billingKey, order_name: 'Once', order_id: `once-${randomUUID()}`, price: 1_000 };
    const charged = await send(newKeys, 'POST', '/v2/subscribe/payment', charge, idempotency);
    expect(charged.status, JSON.stringify(charged.body)).toBe(200);
    // a reserve 29 days ahead on the sandbox clock, its result to feedback_url
    const executeAt = new Date((await sandboxNow()) + 29 * DAY_MS);
    const reserved = await send(bearer, 'POST', '/v2/subscribe/payment/reserve', {
      billing_key: billingKey,
      order_id: `reserve-${randomUUID()}`,
      order_name: 'Monthly plan',
      price: 9_900,
      reserve_execute_at: executeAt.toISOString(),
      feedback_url: receiver.url,
    });
    expect(reserved.status, JSON.stringify(reserved.body)).toBe(200);
    const reserveId = reserved.body.reserve_id as string;

    const after = await adminClock(t).advance({ seconds: 30 * 86_400 });
    expect(after.getTime()).toBeGreaterThan(Date.now() + 29 * DAY_MS);

    // the durable process fired on the advanced clock
    const view = await send(bearer, 'GET', `/v2/subscribe/payment/reserve/${reserveId}`);
    // the Bearer token issued before the advance still works (30 minutes of wall time)
    expect(view.status, JSON.stringify(view.body)).toBe(200);
    expect(view.body.status).toBe('paid');
    const startedAt = new Date(view.body.reserve_started_at as string).getTime();
    expect(startedAt).toBeGreaterThanOrEqual(executeAt.getTime() - 1000);
    expect(startedAt).toBeLessThanOrEqual(after.getTime() + 1000);

    // the old secret key is still within its grace in wall time
    const withOldKey = await send(oldKeys, 'GET', `/v2/receipt/${view.body.receipt_id as string}`);
    expect(withOldKey.status, JSON.stringify(withOldKey.body)).toBe(200);
    expect(withOldKey.body).toMatchObject({ status: 1, price: 9_900 });

    // the Idempotency-Key still replays the first answer: no second charge
    const replayed = await send(newKeys, 'POST', '/v2/subscribe/payment', charge, idempotency);
    expect(replayed.status, JSON.stringify(replayed.body)).toBe(200);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body.receipt_id).toBe(charged.body.receipt_id);

    // the reserve's result reached feedback_url signed at the wall clock's time, which a receiver's verify accepts
    const delivered = await eventually(
      async () => receiver.requests.find((r) => r.body.includes(reserveId)),
      "the reserve's feedback delivery",
    );
    const stamped = Number(delivered.headers['webhook-timestamp']) * 1000;
    expect(Math.abs(stamped - delivered.receivedAt)).toBeLessThan(30_000);
    const payload = new Webhook(p.webhookSecret).verify(delivered.body, delivered.headers) as Record<string, unknown>;
    expect(payload).toMatchObject({ reserve_id: reserveId, receipt_id: view.body.receipt_id, status: 1 });
  }, 120_000);

  it('an advance does not end a rate-limit window: a throttled client key stays throttled', async () => {
    const p = await project();
    const wrong = basicAuthHeader(p.clientKey, 'not-the-secret-key');
    const from = '10.7.1.1';
    // the per-credential allowance of failed authentications, then the throttle
    let throttled: JsonResponse | undefined;
    for (let i = 0; i < 40 && throttled === undefined; i++) {
      const res = await send(wrong, 'GET', '/sandbox/v1/clock', undefined, {}, from);
      if (res.status === 429) throttled = res;
      else expectApiError(res, 401, 1204, 'APP_SK_NOT_MATCHED');
    }
    expect(throttled, 'the client key was throttled').toBeDefined();
    expectApiError(throttled!, 429, 9429, 'TOO_MANY_REQUESTS');

    await adminClock(t).advance({ seconds: 2 * 86_400 });

    // two days on the sandbox clock: the window (a minute of wall time) has not ended, the right keys included
    const still = await send(p.basicAuth, 'GET', '/sandbox/v1/clock', undefined, {}, from);
    expectApiError(still, 429, 9429, 'TOO_MANY_REQUESTS');
    expect(Number(still.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(still.headers['retry-after'])).toBeLessThanOrEqual(60);
  }, 60_000);
});

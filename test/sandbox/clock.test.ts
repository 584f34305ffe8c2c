// The sandbox clock over HTTP, on the stack `npm start` runs in sandbox mode: the embedded engine in dev-server
// mode with its journal and --clock-control, the real worker whose activities, the API's business checks and the
// sandbox PGs all read the one sandbox clock. The admin token advances it (test/sandbox/clock-isolation.test.ts: no
// project key can). A reserve a day ahead is paid when `advance {seconds: 86400}` answers (settled); a
// verification's 30-minute window ends; the clock never goes back (bad input is 9460, nothing moves); the routes
// are 404 outside sandbox mode or without the embedded engine.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_WORKFLOW_CALL_TIMEOUT_MS } from '../../src/platform/temporal/workflow-calls.js';
import { ADVANCE_WAIT_MS } from '../../src/platform/temporal/sandbox-clock.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';
import { adminClock, openSandboxClockStack, type SandboxClockStack } from '../helpers/sandbox-clock-stack.js';
import { keyInClient } from '../payments/key-in-fixtures.js';
import { verificationClient } from '../verification/fixtures.js';
import { expectApiError } from '../webhooks/fixtures.js';

const DAY_S = 24 * 3600;
const ISO_KST = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+09:00$/;

describe('sandbox clock on the embedded engine', () => {
  let stack: SandboxClockStack;
  let t: TestApp;
  let clock: SandboxClockStack['clock'];

  beforeAll(async () => {
    stack = await openSandboxClockStack('sandbox-clock');
    t = stack.t;
    clock = stack.clock;
  }, 120_000);

  afterAll(async () => {
    await stack?.close();
  });

  const nowOf = async (api: ReturnType<typeof keyInClient>) => {
    const res = await api.get('/sandbox/v1/clock');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.now).toMatch(ISO_KST);
    return new Date(res.body.now as string).getTime();
  };

  it('a reserve a day ahead is paid when advance {seconds: 86400} answers; API and engine agree on the time', async () => {
    const project = await t.createProject();
    const api = keyInClient(t, project);
    const key = await api.issuedKey();
    const before = await nowOf(api);
    const executeAt = new Date(before + DAY_S * 1000 - 60_000).toISOString();
    const created = await api.post('/v2/subscribe/payment/reserve', {
      billing_key: key,
      order_id: `clock-${randomUUID()}`,
      order_name: 'Daily plan',
      price: 9_900,
      reserve_execute_at: executeAt,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const reserveId = created.body.reserve_id as string;

    const advanced = await adminClock(t).post({ seconds: DAY_S });
    expect(advanced.status, JSON.stringify(advanced.body)).toBe(200);
    expect(advanced.body.settled).toBe(true);
    const after = new Date(advanced.body.now as string).getTime();
    expect(after).toBeGreaterThanOrEqual(before + DAY_S * 1000 - 1000);
    expect(after).toBeLessThan(before + DAY_S * 1000 + 60_000);

    // settled: the charge is done when the advance answers, stamped in the sandbox's time
    const view = await api.get(`/v2/subscribe/payment/reserve/${reserveId}`);
    expect(view.body.status).toBe('paid');
    const startedAt = new Date(view.body.reserve_started_at as string).getTime();
    expect(startedAt).toBeGreaterThanOrEqual(new Date(executeAt).getTime() - 1000);
    expect(startedAt).toBeLessThanOrEqual(after + 1000);
    const receipt = await api.get(`/v2/receipt/${view.body.receipt_id as string}`);
    expect(receipt.body).toMatchObject({ status: 1, price: 9_900 });
    // the business clock follows the engine's
    expect(Math.abs(t.deps.businessClock().getTime() - (await clock.read()).getTime())).toBeLessThan(5_000);
  }, 90_000);

  it("a verification's 30-minute window ends after advancing 31 minutes", async () => {
    const project = await t.createProject();
    const verify = verificationClient(t, project);
    const { receiptId } = await verify.requested();
    const advanced = await adminClock(t).post({ seconds: 31 * 60 });
    expect(advanced.status, JSON.stringify(advanced.body)).toBe(200);
    expect(advanced.body.settled).toBe(true);
    const row = await t.deps.database.db
      .selectFrom('verifications')
      .select('status')
      .where('receipt_id', '=', receiptId)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe(-50);
    // the window is over before any OTP is looked at
    const confirm = await verify.confirm(receiptId, '000000');
    expect(confirm.status).not.toBe(200);
    expect(confirm.body.code).toBe(2404);
  }, 90_000);

  it('never goes back: a past `to`, zero, negative or fractional seconds, both or neither are 9460 and move nothing', async () => {
    const api = keyInClient(t, await t.createProject());
    const before = await nowOf(api);
    for (const body of [
      { to: new Date(before - 3600_000).toISOString() },
      { to: 'tomorrow' },
      { seconds: 0 },
      { seconds: -60 },
      { seconds: 1.5 },
      { seconds: '60' },
      { seconds: 60, to: new Date(before + 3600_000).toISOString() },
      {},
    ]) {
      expectApiError(await adminClock(t).post(body), 400, 9460, 'SANDBOX_CLOCK_INVALID');
    }
    const after = await nowOf(api);
    expect(after - before).toBeLessThan(60_000);

    // `to` a little ahead lands there
    const to = new Date(before + 2 * 3600_000);
    const moved = await adminClock(t).post({ to: to.toISOString() });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(new Date(moved.body.now as string).getTime()).toBeGreaterThanOrEqual(to.getTime() - 1000);
  }, 60_000);

  it('is 404 outside sandbox mode and without the embedded engine', async () => {
    for (const overrides of [
      { env: { PAYGATE_SANDBOX: 'false', PUBLIC_BASE_URL: 'https://pay.example.com' }, sandboxClock: clock },
      {},
    ]) {
      const other = await buildTestApp(overrides);
      try {
        const project = await other.createProject();
        for (const [method, url] of [
          ['GET', '/sandbox/v1/clock'],
          ['POST', '/sandbox/v1/clock/advance'],
        ] as const) {
          const res = await other.app.inject({
            method,
            url,
            headers: { authorization: method === 'POST' ? `Bearer ${TEST_ADMIN_TOKEN}` : project.basicAuth },
            ...(method === 'POST' ? { payload: { seconds: 60 } } : {}),
          });
          expect(res.statusCode, `${method} ${url}`).toBe(404);
        }
      } finally {
        await other.close();
      }
    }
  }, 60_000);

  // An advance that has not settled answers {settled: false} after 60 s; the socket must outlive that wait (it was
  // dropped after 30 s of silence, so a 10,000-schedule advance ended in "other side closed" instead).
  it("keeps a silent connection open longer than the advance's 60 s wait and the workflow call deadline", () => {
    expect(t.app.server.timeout).toBeGreaterThan(ADVANCE_WAIT_MS);
    expect(t.app.server.timeout).toBeGreaterThan(DEFAULT_WORKFLOW_CALL_TIMEOUT_MS);
  });
});

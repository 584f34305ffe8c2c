// An outage of a project's provider is fast and visible: A (the relay, with its engine and worker) calls its provider
// through a switch of the test's own on loopback (node:http) that either forwards to B (another paygate in sandbox
// mode) or answers every request 502 with an HTML page (a 5xx without a catalog body: no answer). After
// UPSTREAM_CIRCUIT_FAILURES failed calls the project's circuit opens: a charge is answered 9481 at once with a
// Retry-After, nothing reaches the provider, nothing is claimed, and the same order_id is charged once the provider
// is back (the probe after the open period closes the circuit). GET .../upstream shows the provider's health, and
// /metrics counts the calls. A reserve due during the outage waits for the circuit (its activity retried at the
// circuit's Retry-After, never counted as a decline) and is charged once the provider is back.
import { request as httpRequest, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgChargeKey } from '../../src/payments/charges.js';
import { reserveWorkflowId } from '../../src/reserves/contract.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { bounded } from '../helpers/temporal.js';
import { keyInClient, sandboxChargeExecutions } from '../payments/key-in-fixtures.js';
import { freshPhone, verificationClient } from '../verification/fixtures.js';
import { eventually } from '../webhooks/fixtures.js';
import { dashboardSignIn, routeToProvider } from './fixtures.js';

const HOUR_MS = 60 * 60 * 1000;
const OPEN_SECONDS = 4;

/** The provider as A sees it: B behind a switch, and the requests that reached the switch while it was down. */
interface ProviderSwitch {
  readonly url: string;
  down: boolean;
  /** requests answered 502 */
  refused: number;
  close(): Promise<void>;
}

async function startSwitch(target: string): Promise<ProviderSwitch> {
  const to = new URL(target);
  const state = { down: false, refused: 0 };
  const server: Server = createServer((req, res) => {
    if (state.down) {
      state.refused += 1;
      req.resume();
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
      return;
    }
    const forwarded = httpRequest(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      bounded(
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
        10_000,
        'the provider switch to close',
      ),
  });
}

let a: TestApp;
let b: TestApp;
let provider: ProviderSwitch;

beforeAll(async () => {
  // with its engine: B's verifications are workflows
  b = await buildTestApp({ withTemporal: true });
  provider = await startSwitch(await b.app.listen({ host: '127.0.0.1', port: 0 }));
  a = await buildTestApp({
    withTemporal: true,
    env: { UPSTREAM_CIRCUIT_FAILURES: '2', UPSTREAM_CIRCUIT_OPEN_SECONDS: String(OPEN_SECONDS) },
  });
}, 120_000);
afterAll(async () => {
  await provider?.close();
  await a?.close();
  await b?.close();
});

/** A project at A whose sandbox_card lives at B (through the switch), with a billing key issued there. */
async function relayedProject(): Promise<{
  atA: TestProject;
  atB: TestProject;
  merchant: ReturnType<typeof keyInClient>;
  billingKey: string;
}> {
  const atB = await b.createProject();
  const atA = await a.createProject();
  await routeToProvider(a, atA, { baseUrl: provider.url, project: atB }, ['sandbox_card']);
  const merchant = keyInClient(a, atA);
  return { atA, atB, merchant, billingKey: await merchant.issuedKey() };
}

const health = async (project: TestProject): Promise<Record<string, unknown>> => {
  const res = await a.app.inject({
    method: 'GET',
    url: `/admin/v1/projects/${project.applicationId}/upstream`,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
  });
  expect(res.statusCode).toBe(200);
  return res.json().health as Record<string, unknown>;
};

/** The admin's projects page of the dashboard, signed in with the admin token. */
const projectsPage = async (): Promise<string> => {
  const admin = await dashboardSignIn(a, { admin_token: TEST_ADMIN_TOKEN });
  const page = await a.app.inject({ url: '/dashboard/projects', headers: { cookie: admin } });
  expect(page.statusCode).toBe(200);
  return page.body;
};

const chargesAtB = (atB: TestProject, orderId: string, attempt = 0) =>
  sandboxChargeExecutions(b.sandboxUrl, pgChargeKey(atB.applicationId, orderId, attempt));

describe("a project's provider circuit", () => {
  it('opens after repeated failures: 9481 at once with Retry-After, nothing sent or claimed; the order_id is charged once the provider is back', async () => {
    const { atA, atB, merchant, billingKey } = await relayedProject();
    const charge = (orderId: string) =>
      merchant.post('/v2/subscribe/payment', { billing_key: billingKey, order_name: 'June', order_id: orderId, price: 7_000 });
    expect(await health(atA)).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
    const before = await charge('before-outage-1');
    expect(before.status, JSON.stringify(before.body)).toBe(200);
    const paidBefore = before.body.receipt_id as string;

    provider.down = true;
    // two calls without an answer: each an outage the merchant retries (9502), the second opens the circuit
    for (const orderId of ['outage-1', 'outage-2']) {
      const failed = await charge(orderId);
      expect(failed.status, JSON.stringify(failed.body)).toBe(502);
      expect(failed.body).toMatchObject({ code: 9502 });
    }
    const seen = provider.refused;
    expect(seen).toBeGreaterThanOrEqual(2);

    const held = await charge('after-outage-1');
    expect(held.status, JSON.stringify(held.body)).toBe(503);
    expect(held.body).toMatchObject({ error_code: 'UPSTREAM_UNAVAILABLE', code: 9481 });
    const retryAfter = Number(held.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(OPEN_SECONDS);
    // nothing reached the provider, and the order_id was not claimed
    expect(provider.refused).toBe(seen);
    const claimed = await a.deps.database.db
      .selectFrom('receipts')
      .select('receipt_id')
      .where('application_id', '=', atA.applicationId)
      .where('order_id', '=', 'after-outage-1')
      .execute();
    expect(claimed).toEqual([]);
    // a cancel too: 9481 before any lease, so the same cancel goes through once the provider is back
    const cancelHeld = await merchant.cancel({ receipt_id: paidBefore, cancel_price: 1_000, cancel_id: 'held-1' });
    expect(cancelHeld.status, JSON.stringify(cancelHeld.body)).toBe(503);
    expect(cancelHeld.body).toMatchObject({ error_code: 'UPSTREAM_UNAVAILABLE', code: 9481 });
    expect(provider.refused).toBe(seen);

    // the admin API shows it: open until when, the last failure's class
    const open = await health(atA);
    expect(open).toMatchObject({ circuit: 'open', last_failure: { class: 'unavailable' } });
    expect(String((open.last_failure as { message: string }).message)).toContain('HTTP 502');
    expect(Date.parse(String(open.open_until))).toBeGreaterThan(Date.now() - 1_000);
    expect(open).toHaveProperty('last_success_at'); // the billing key's issuance
    // and the dashboard's projects page
    const page = await projectsPage();
    expect(page).toContain(`not answering: calls held until ${String(open.open_until)}`);
    expect(page).toContain('last failure (unavailable)');

    // the provider is back: once the open period passes, the probe goes through and closes the circuit
    provider.down = false;
    const paid = await eventually(async () => {
      const res = await charge('after-outage-1');
      if (res.status === 503) return undefined;
      return res;
    }, 'the circuit to let the charge through');
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({ order_id: 'after-outage-1', status: 1, price: 7_000 });
    expect(await chargesAtB(atB, 'after-outage-1')).toBe(1);
    const cancelled = await merchant.cancel({ receipt_id: paidBefore, cancel_price: 1_000, cancel_id: 'held-1' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body).toMatchObject({ receipt_id: paidBefore, cancelled_price: 1_000 });
    const closed = await health(atA);
    expect(closed).toMatchObject({ circuit: 'closed', consecutive_failures: 0 });
    expect(closed).toHaveProperty('last_success_at');
    expect(closed).not.toHaveProperty('open_until');

    // the process's metrics: outcomes by provider host (never a key), latency, the circuits' states
    const metrics = await a.deps.metrics!.render();
    const host = new URL(provider.url).host;
    expect(metrics).toMatch(new RegExp(`paygate_upstream_calls_total\\{provider="${host}",outcome="circuit_open"\\} [1-9]`));
    expect(metrics).toMatch(new RegExp(`paygate_upstream_calls_total\\{provider="${host}",outcome="unavailable"\\} [1-9]`));
    expect(metrics).toMatch(
      new RegExp(`paygate_upstream_call_duration_seconds_count\\{provider="${host}",outcome="ok"\\} [1-9]`),
    );
    expect(metrics).toMatch(new RegExp(`paygate_upstream_circuits\\{provider="${host}",state="closed"\\} [1-9]`));
    expect(metrics).not.toContain(atB.secretKey);
    expect(metrics).not.toContain(atB.clientKey);

    // the two charges whose calls got no answer were handed to their reconcile workflows, which waited for the
    // provider and settle them now, each charged once (a provider without inquiry is asked by the same call again)
    for (const orderId of ['outage-1', 'outage-2']) {
      await eventually(async () => {
        const row = await a.deps.database.db
          .selectFrom('receipts')
          .select('status')
          .where('application_id', '=', atA.applicationId)
          .where('order_id', '=', orderId)
          .executeTakeFirst();
        return row?.status === 1 ? row : undefined;
      }, `the reconcile of ${orderId}`);
      expect(await chargesAtB(atB, orderId)).toBe(1);
    }
  });

  it('a reserve due while the provider is down waits for the circuit (never declined) and is charged once it is back', async () => {
    const { atA, atB, merchant, billingKey } = await relayedProject();
    const executeAt = new Date(a.clock.now().getTime() + HOUR_MS).toISOString();
    const created = await merchant.post('/v2/subscribe/payment/reserve', {
      billing_key: billingKey,
      order_name: 'Annual plan',
      order_id: 'reserve-outage-1',
      price: 12_000,
      reserve_execute_at: executeAt,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const reserveId = created.body.reserve_id as string;

    // the provider goes down, and this process learns it from two calls without an answer: the circuit opens
    provider.down = true;
    for (let i = 0; i < 2; i++) {
      const err = await a.deps.services.upstream
        .call(atA.applicationId, { method: 'GET', path: '/v2/receipt/0123456789abcdef01234567' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
    }
    expect(await health(atA)).toMatchObject({ circuit: 'open' });
    await a.temporal!.skipTime(HOUR_MS + 1_000);
    // the reserve's charge meets the open circuit: its activity waits for it (retried at the circuit's Retry-After)
    const handle = a.temporal!.client.workflow.getHandle(reserveWorkflowId(reserveId));
    const waiting = await eventually(async () => {
      const described = await handle.describe();
      const failure = described.raw.pendingActivities?.[0]?.lastFailure;
      return failure?.applicationFailureInfo?.type === 'UPSTREAM_UNAVAILABLE' ? failure : undefined;
    }, "the reserve's charge to wait for the provider's circuit");
    expect(waiting.message).toContain('upstream provider');
    const during = await merchant.get(`/v2/subscribe/payment/reserve/${reserveId}`);
    expect(during.body).toMatchObject({ status: 'executing' });

    provider.down = false;
    const paid = await eventually(async () => {
      const res = await merchant.get(`/v2/subscribe/payment/reserve/${reserveId}`);
      return res.body.status === 'executing' ? undefined : res.body;
    }, 'the reserve to be charged once the provider is back');
    expect(paid).toMatchObject({ status: 'paid' });
    // charged once at the provider, under the order_id's first key: the outage declined nothing
    expect(await chargesAtB(atB, 'reserve-outage-1')).toBe(1);
    const declines = await a.deps.database.db
      .selectFrom('order_declines')
      .selectAll()
      .where('application_id', '=', atA.applicationId)
      .execute();
    expect(declines).toEqual([]);
  });

  it('half-open lets one call through: a charge held behind the probe answers 9481 and keeps no claim on its order_id', async () => {
    const { atA, atB, merchant, billingKey } = await relayedProject();
    const charge = (orderId: string) =>
      merchant.post('/v2/subscribe/payment', { billing_key: billingKey, order_name: 'June', order_id: orderId, price: 3_000 });
    provider.down = true;
    for (let i = 0; i < 2; i++) {
      await a.deps.services.upstream
        .call(atA.applicationId, { method: 'GET', path: '/v2/receipt/0123456789abcdef01234567' })
        .catch(() => undefined);
    }
    await eventually(async () => ((await health(atA)).circuit === 'half_open' ? true : undefined), 'the open period to pass');

    // two charges at once: one is the probe (sent, no answer: pending for its reconcile), the other is held, whether
    // before its claim or after it (then released)
    const seen = provider.refused;
    const answers = await Promise.all([charge('probe-race-1'), charge('probe-race-2')]);
    expect(answers.map((r) => r.status).sort()).toEqual([502, 503]);
    expect(provider.refused).toBe(seen + 1);
    const heldOrder = answers[0]!.status === 503 ? 'probe-race-1' : 'probe-race-2';
    const probeOrder = heldOrder === 'probe-race-1' ? 'probe-race-2' : 'probe-race-1';
    const receiptOf = (orderId: string) =>
      a.deps.database.db
        .selectFrom('receipts')
        .select(['status', 'pg_key_attempt'])
        .where('application_id', '=', atA.applicationId)
        .where('order_id', '=', orderId)
        .executeTakeFirst();
    expect(await receiptOf(heldOrder)).toBeUndefined();
    expect((await receiptOf(probeOrder))?.status).toBe(0);

    // the provider is back: the held order_id is charged once, the probe's charge settled by its reconcile
    provider.down = false;
    const paid = await eventually(async () => {
      const res = await charge(heldOrder);
      return res.status === 503 ? undefined : res;
    }, 'the circuit to let the held charge through');
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    const attempt = (await receiptOf(heldOrder))?.pg_key_attempt ?? -1;
    expect(await chargesAtB(atB, heldOrder, attempt)).toBe(1);
    await eventually(async () => ((await receiptOf(probeOrder))?.status === 1 ? true : undefined), 'the probe charge settled');
    expect(await chargesAtB(atB, probeOrder)).toBe(1);
  });

  it('verification steps held by the open circuit answer 9481 (a resend naming its receipt_id) and use none of the send caps', async () => {
    const atB = await b.createProject();
    const atA = await a.createProject();
    await routeToProvider(a, atA, { baseUrl: provider.url, project: atB }, ['sandbox_identity']);
    const merchant = verificationClient(a, atA);
    const phone = freshPhone();
    const { receiptId } = await merchant.requested({ phone });

    provider.down = true;
    try {
      // two requests without an answer: 2401 (nothing created; the user asks again), the second opens the circuit
      for (let i = 0; i < 2; i++) expect((await merchant.request({ phone })).body).toMatchObject({ code: 2401 });
      const seen = provider.refused;
      // the send caps allow 6 sends to a phone in 10 minutes: seven more asks while the circuit is open use none
      for (let i = 0; i < 7; i++) {
        const held = await merchant.request({ phone });
        expect(held.status, JSON.stringify(held.body)).toBe(503);
        expect(held.body).toMatchObject({ error_code: 'UPSTREAM_UNAVAILABLE', code: 9481 });
      }
      const resend = await merchant.realarm(receiptId);
      expect(resend.status, JSON.stringify(resend.body)).toBe(503);
      expect(resend.body).toMatchObject({ error_code: 'UPSTREAM_UNAVAILABLE', code: 9481, receipt_id: receiptId });
      expect(provider.refused).toBe(seen);
    } finally {
      provider.down = false;
    }
    // the resend held by the circuit did not count
    const row = await a.deps.database.db
      .selectFrom('verifications')
      .select('number_of_realarms')
      .where('provider_receipt_id', '=', receiptId)
      .executeTakeFirstOrThrow();
    expect(row.number_of_realarms).toBe(0);
    // once the provider is back: 1 + 2 sends counted so far, so three more reach the phone, and the seventh is A's 9479
    await eventually(
      async () => ((await merchant.request({ phone })).status === 200 ? true : undefined),
      'the circuit closed',
      30_000,
    );
    for (let i = 0; i < 2; i++) expect((await merchant.request({ phone })).status).toBe(200);
    expect((await merchant.request({ phone })).body).toMatchObject({ code: 9479 });
  }, 90_000);
});

// Sandbox faults for merchants' own tests, over HTTP through the real app, the real worker and the real
// sandbox PGs: POST/GET/DELETE /sandbox/v1/faults, each fault kind on charge and send_otp, count honoured,
// another project unaffected, lost_response on a charge executed exactly once, bad input arms nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayRegistry, type ClosableGatewayRegistry } from '../../src/gateways/registry.js';
import { startSandboxGateways, type SandboxGateways } from '../../src/sandbox/server.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { BUYER, createEscrowProject, escrowClient, freePort } from '../escrow/fixtures.js';
import { keyInClient, sandboxGet } from '../payments/key-in-fixtures.js';
import { expectApiError, verificationClient } from '../verification/fixtures.js';

/** the sandbox holds a `timeout` request this long; paygate gives up on the PG after GATEWAY_TIMEOUT_MS */
const FAULT_DELAY_MS = 2_500;
const GATEWAY_TIMEOUT_MS = 1_000;

let sandbox: SandboxGateways;
let registry: ClosableGatewayRegistry;
let t: TestApp;
let a: TestProject;
let b: TestProject;
let sandboxNow: () => Date = () => new Date();

beforeAll(async () => {
  sandbox = await startSandboxGateways({ token: TEST_SANDBOX_TOKEN, faultDelayMs: FAULT_DELAY_MS, clock: () => sandboxNow() });
  registry = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: GATEWAY_TIMEOUT_MS, sandboxToken: TEST_SANDBOX_TOKEN });
  // listening on loopback: the escrow PG's notifications must reach the app
  const port = await freePort();
  t = await buildTestApp({
    withTemporal: true,
    env: { PORT: String(port) },
    gateways: registry,
    sandboxUrl: sandbox.url,
    sandboxToken: TEST_SANDBOX_TOKEN,
  });
  await t.app.listen({ host: '127.0.0.1', port });
  sandboxNow = t.clock.now;
  a = await t.createProject({ name: 'project a' });
  b = await t.createProject({ name: 'project b' });
});
afterAll(async () => {
  await t?.close();
  await registry?.close();
  await sandbox?.close();
});

let keySeq = 0;
async function arm(project: TestProject, body: Record<string, unknown>) {
  return keyInClient(t, project).post('/sandbox/v1/faults', body, { 'idempotency-key': `arm-${++keySeq}-${process.pid}` });
}
async function armed(project: TestProject): Promise<Record<string, unknown>[]> {
  const res = await keyInClient(t, project).get('/sandbox/v1/faults');
  expect(res.status).toBe(200);
  return res.body.list as Record<string, unknown>[];
}
async function disarm(project: TestProject): Promise<number> {
  const res = await keyInClient(t, project).send('DELETE', '/sandbox/v1/faults');
  expect(res.status).toBe(200);
  return res.body.disarmed as number;
}
interface Stats {
  card: { charges_approved: number };
  identity: { otp_requests: number; sms_sent: number };
}
const stats = () => sandboxGet<Stats>(sandbox.url, '/_sandbox/stats');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function eventually(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await sleep(200);
  }
}
/** A charge the merchant did not get as paid: an error (9502 / 9504) or a receipt still in status 0. */
const notPaid = (res: { status: number; body: Record<string, unknown> }) => res.status !== 200 || res.body.status !== 1;

describe('POST / GET / DELETE /sandbox/v1/faults', () => {
  it('arms a fault (201, replayed under its Idempotency-Key), lists it, disarms it', async () => {
    const key = `arm-shape-${process.pid}`;
    const body = { pg: 'sandbox_card', operation: 'charge', fault: 'error', count: 2 };
    const res = await keyInClient(t, a).post('/sandbox/v1/faults', body, { 'idempotency-key': key });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['count', 'created_at', 'fault', 'fault_id', 'operation', 'pg', 'remaining']);
    expect(res.body).toMatchObject({ pg: 'sandbox_card', operation: 'charge', fault: 'error', count: 2, remaining: 2 });
    expect(res.body.fault_id).toMatch(/^flt_/);
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00$/);
    const replay = await keyInClient(t, a).post('/sandbox/v1/faults', body, { 'idempotency-key': key });
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(res.body);

    expect(await armed(a)).toEqual([res.body]);
    expect(await armed(b)).toEqual([]);
    expect(await disarm(b)).toBe(0);
    expect(await armed(a)).toHaveLength(1);
    expect(await disarm(a)).toBe(1);
    expect(await armed(a)).toEqual([]);
  });

  it('refuses bad input with 9470-9474 and arms nothing', async () => {
    const cases: [unknown, number, number, string][] = [
      // a body that is not an object is the platform's 9400 before the route sees it
      [['not', 'an', 'object'], 400, 9400, 'INVALID_REQUEST'],
      [{ pg: 'sandbox_card', operation: 'charge' }, 400, 9470, 'SANDBOX_FAULT_INVALID'],
      [{ pg: 'sandbox_card', operation: 'charge', fault: 'error', count: 0 }, 400, 9470, 'SANDBOX_FAULT_INVALID'],
      [{ pg: 'sandbox_card', operation: 'charge', fault: 'error', count: 1.5 }, 400, 9470, 'SANDBOX_FAULT_INVALID'],
      [{ pg: 'sandbox_card', operation: 'charge', fault: 'error', count: 101 }, 400, 9470, 'SANDBOX_FAULT_INVALID'],
      [{ pg: 'sandbox_card', operation: 'charge', fault: 'error', extra: 1 }, 400, 9470, 'SANDBOX_FAULT_INVALID'],
      [{ pg: 'real_pg', operation: 'charge', fault: 'error' }, 400, 9471, 'SANDBOX_FAULT_PG_UNKNOWN'],
      [{ pg: 'sandbox_card', operation: 'send_otp', fault: 'error' }, 400, 9472, 'SANDBOX_FAULT_OPERATION_UNSUPPORTED'],
      [{ pg: 'sandbox_noauto', operation: 'charge', fault: 'error' }, 400, 9472, 'SANDBOX_FAULT_OPERATION_UNSUPPORTED'],
      [{ pg: 'sandbox_card', operation: 'charge', fault: 'explode' }, 400, 9473, 'SANDBOX_FAULT_KIND_UNSUPPORTED'],
      [{ pg: 'sandbox_card', operation: 'charge', fault: 'drop' }, 400, 9473, 'SANDBOX_FAULT_KIND_UNSUPPORTED'],
      [
        { pg: 'sandbox_escrow_a', operation: 'escrow_notification', fault: 'timeout' },
        400,
        9473,
        'SANDBOX_FAULT_KIND_UNSUPPORTED',
      ],
    ];
    for (const [body, http, code, name] of cases) {
      const res = await arm(a, body as Record<string, unknown>);
      expectApiError(res, http, code, name);
    }
    const narrowed = await t.createProject({ name: 'card only', pgs: ['sandbox_card'] });
    expectApiError(
      await arm(narrowed, { pg: 'sandbox_identity', operation: 'send_otp', fault: 'error' }),
      400,
      9471,
      'SANDBOX_FAULT_PG_UNKNOWN',
    );
    expect(await armed(a)).toEqual([]);
    expect(await armed(narrowed)).toEqual([]);

    for (let i = 0; i < 100; i++) {
      expect((await arm(narrowed, { pg: 'sandbox_card', operation: 'cancel', fault: 'error' })).status).toBe(201);
    }
    expectApiError(
      await arm(narrowed, { pg: 'sandbox_card', operation: 'cancel', fault: 'error' }),
      409,
      9474,
      'SANDBOX_FAULTS_TOO_MANY',
    );
    expect(await armed(narrowed)).toHaveLength(100);
    expect(await disarm(narrowed)).toBe(100);
  });
});

describe('faults on charge', () => {
  it('error: the next `count` charges of the project fail with nothing executed; another project charges meanwhile', async () => {
    const clientA = keyInClient(t, a);
    const clientB = keyInClient(t, b);
    const keyA = await clientA.issuedKey();
    const keyB = await clientB.issuedKey();
    expect((await arm(a, { pg: 'sandbox_card', operation: 'charge', fault: 'error', count: 2 })).status).toBe(201);
    const before = (await stats()).card.charges_approved;

    expect(notPaid(await clientA.charge(keyA))).toBe(true);
    expect((await armed(a))[0]).toMatchObject({ operation: 'charge', remaining: 1 });
    const other = await clientB.charge(keyB);
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    expect(other.body.status).toBe(1);
    expect(notPaid(await clientA.charge(keyA))).toBe(true);
    expect((await stats()).card.charges_approved).toBe(before + 1);

    expect(await armed(a)).toEqual([]);
    const third = await clientA.charge(keyA);
    expect(third.status, JSON.stringify(third.body)).toBe(200);
    expect(third.body.status).toBe(1);
  });

  it('decline: the next charge is refused by the issuer (9430, CF01), its order_id is free, and the one after is paid', async () => {
    const client = keyInClient(t, a);
    const key = await client.issuedKey();
    expect((await arm(a, { pg: 'sandbox_card', operation: 'charge', fault: 'decline', count: 1 })).status).toBe(201);
    const before = (await stats()).card.charges_approved;
    const body = { billing_key: key, order_name: 'June', order_id: `decline-once-${process.pid}`, price: 1_000 };
    const declined = await client.post('/v2/subscribe/payment', body);
    expect(declined.status).toBe(400);
    expect(declined.body).toMatchObject({ error_code: 'PAYMENT_DECLINED', code: 9430, pg_error_code: 'CF01' });
    const again = await client.post('/v2/subscribe/payment', body);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.status).toBe(1);
    expect((await stats()).card.charges_approved).toBe(before + 1);
    // an issuer's refusal answers card operations only
    const refused = await arm(a, { pg: 'sandbox_card', operation: 'cancel', fault: 'decline', count: 1 });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error_code: 'SANDBOX_FAULT_KIND_UNSUPPORTED' });
    expect(await armed(a)).toEqual([]);
  });

  it('timeout: paygate gives up, then the PG executes the held charge once', async () => {
    const clientA = keyInClient(t, a);
    const keyA = await clientA.issuedKey();
    expect((await arm(a, { pg: 'sandbox_card', operation: 'charge', fault: 'timeout' })).status).toBe(201);
    const before = (await stats()).card.charges_approved;
    const started = Date.now();
    const res = await clientA.charge(keyA, { order_id: `late-${process.pid}` });
    expect(notPaid(res)).toBe(true);
    expect((await stats()).card.charges_approved).toBe(before);
    await eventually(async () => (await stats()).card.charges_approved === before + 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(FAULT_DELAY_MS - 200);
  });

  it('lost_response: the merchant sees no payment, the PG executed it exactly once (pg-requests), the retry settles it', async () => {
    const clientA = keyInClient(t, a);
    const keyA = await clientA.issuedKey();
    expect((await arm(a, { pg: 'sandbox_card', operation: 'charge', fault: 'lost_response' })).status).toBe(201);
    const before = (await stats()).card.charges_approved;
    const orderId = `lost-${process.pid}`;
    const lost = await clientA.charge(keyA, { order_id: orderId });
    expect(notPaid(lost)).toBe(true);
    if (lost.status !== 200) expect([9502, 9504]).toContain(lost.body.code);
    expect((await stats()).card.charges_approved).toBe(before + 1);

    // the merchant retries the same order (or the receipt settles by itself): the PG replays, never charges again
    let receiptId: string | undefined;
    await eventually(async () => {
      const row = await t.deps.database.db
        .selectFrom('receipts')
        .select(['receipt_id', 'status'])
        .where('application_id', '=', a.applicationId)
        .where('order_id', '=', orderId)
        .where('status', '=', 1)
        .executeTakeFirst();
      if (row) receiptId = row.receipt_id;
      else {
        const retried = await clientA.charge(keyA, { order_id: orderId });
        if (retried.status === 200 && retried.body.status === 1) receiptId = retried.body.receipt_id as string;
      }
      return receiptId !== undefined;
    }, 60_000);
    const wire = await clientA.get(`/sandbox/v1/pg-requests?receipt_id=${receiptId}`);
    expect(wire.status).toBe(200);
    const executions = (wire.body.list as { pg: string; operation: string; body: Record<string, unknown> }[]).filter(
      (r) => r.operation === 'charge',
    );
    expect(executions).toHaveLength(1);
    expect(executions[0]).toMatchObject({ pg: 'sandbox_card', body: { order_id: orderId, amount: 1000 } });
    expect(executions[0]!.body).not.toHaveProperty('bkey');
    expect((await stats()).card.charges_approved).toBe(before + 1);
  });
});

describe('faults on send_otp', () => {
  it('error: count 3 outlasts the retries (2401), another project verifies meanwhile, then the faults are spent', async () => {
    const apiA = verificationClient(t, a);
    const apiB = verificationClient(t, b);
    expect((await arm(a, { pg: 'sandbox_identity', operation: 'send_otp', fault: 'error', count: 3 })).status).toBe(201);
    const before = (await stats()).identity.otp_requests;
    expect((await apiB.requested()).body.status).toBe(51);
    expect((await armed(a))[0]).toMatchObject({ remaining: 3 });
    expectApiError(await apiA.request(), 500, 2401, 'AUTH_REQUEST_FAILED');
    expect((await stats()).identity.otp_requests).toBe(before + 1);
    expect(await armed(a)).toEqual([]);
    expect((await apiA.requested()).body.status).toBe(51);
  });

  it('lost_response: the OTP is sent once, the retry replays it (status 51, one SMS)', async () => {
    const apiA = verificationClient(t, a);
    expect((await arm(a, { pg: 'sandbox_identity', operation: 'send_otp', fault: 'lost_response' })).status).toBe(201);
    const before = await stats();
    const { phone, body } = await apiA.requested();
    expect(body.status).toBe(51);
    expect(await apiA.inbox(phone)).toHaveLength(1);
    const after = await stats();
    expect(after.identity.sms_sent).toBe(before.identity.sms_sent + 1);
    expect(await armed(a)).toEqual([]);
  });

  it('timeout: the held request is executed late and replays the retry: status 51, still one SMS', async () => {
    const apiA = verificationClient(t, a);
    expect((await arm(a, { pg: 'sandbox_identity', operation: 'send_otp', fault: 'timeout' })).status).toBe(201);
    const before = await stats();
    const { phone, body } = await apiA.requested();
    expect(body.status).toBe(51);
    await sleep(FAULT_DELAY_MS + 500);
    expect(await apiA.inbox(phone)).toHaveLength(1);
    expect((await stats()).identity.sms_sent).toBe(before.identity.sms_sent + 1);
  });
});

describe('escrow_notification', () => {
  it('drop: the buyer acts, the PG never notifies paygate (sent false); the next one goes out', async () => {
    const shop = await createEscrowProject(t);
    const api = escrowClient(t, shop);
    const paid = await api.pay({ pg: 'sandbox_escrow_a', escrow: true, user: BUYER });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect((await arm(shop, { pg: 'sandbox_escrow_a', operation: 'escrow_notification', fault: 'drop' })).status).toBe(201);
    const receiptId = paid.body.receipt_id as string;
    const dropped = await api.buyer(receiptId, { event: 'purchase_confirmed' });
    expect(dropped.status, JSON.stringify(dropped.body)).toBe(202);
    expect(dropped.body).toMatchObject({ sent: false });
    expect(await armed(shop)).toEqual([]);
    expect((await api.buyer(receiptId, { event: 'purchase_confirmed' })).body).toMatchObject({ sent: true });
  });
});

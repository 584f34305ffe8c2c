// A charge's (and a reserve's) feedback_url is checked when the request is made, by the rule its delivery connects
// under (src/webhooks/http-client.ts checkDestination): every address the host resolves to must be global unicast,
// plus loopback in sandbox mode. A refused one is 9400 naming feedback_url before anything is charged or saved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient, sandboxChargeExecutions } from './key-in-fixtures.js';

const PUBLIC_FEEDBACK = 'https://93.184.216.34/paid';

function expectFeedbackRefused(res: { status: number; body: Record<string, unknown> }): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body).toMatchObject({ error_code: 'INVALID_REQUEST', code: 9400 });
  expect((res.body.payload as { message: string }).message).toMatch(
    /^feedback_url: .*(blocked range|resolves to a refused address)/,
  );
}

describe('production mode', () => {
  let t: TestApp;
  let project: TestProject;
  beforeAll(async () => {
    t = await buildTestApp({ config: { sandbox: false, publicBaseUrl: 'https://pay.example.com' } });
    project = await t.createProject();
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each(['https://10.0.0.7/paid', 'https://127.0.0.1/paid', 'https://169.254.169.254/', 'https://localhost/paid'])(
    'feedback_url %s -> 9400 before the billing key is even looked up; no receipt',
    async (url) => {
      const client = keyInClient(t, project);
      const res = await client.charge('0'.repeat(24), { feedback_url: url });
      expectFeedbackRefused(res);
      const receipts = await t.deps.database.db.selectFrom('receipts').select('receipt_id').execute();
      expect(receipts).toEqual([]);
    },
  );

  it('a global address passes the check: the same charge gets as far as its billing key', async () => {
    const res = await keyInClient(t, project).charge('0'.repeat(24), { feedback_url: PUBLIC_FEEDBACK });
    expect(res.body.error_code).toBe('SUBSCRIBE_BK_NOT_FOUND');
  });
});

describe('sandbox mode', () => {
  let t: TestApp;
  let project: TestProject;
  let client: ReturnType<typeof keyInClient>;
  let billingKey: string;
  beforeAll(async () => {
    t = await buildTestApp();
    project = await t.createProject();
    client = keyInClient(t, project);
    billingKey = await client.issuedKey();
  });
  afterAll(async () => {
    await t?.close();
  });

  const receiptsOf = async (orderId: string) =>
    t.deps.database.db.selectFrom('receipts').select('receipt_id').where('order_id', '=', orderId).execute();

  it('a private or link-local feedback_url -> 9400: no receipt, no PG call', async () => {
    for (const [i, url] of ['https://10.0.0.7/paid', 'https://169.254.169.254/', 'https://[fd00::1]/paid'].entries()) {
      const orderId = `fb-private-${i}`;
      expectFeedbackRefused(await client.charge(billingKey, { order_id: orderId, feedback_url: url }));
      expect(await receiptsOf(orderId)).toEqual([]);
      expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, orderId))).toBe(0);
    }
  });

  it('http to loopback is accepted (sandbox mode), and the charge is made', async () => {
    const res = await client.charge(billingKey, { order_id: 'fb-loopback', feedback_url: 'http://127.0.0.1:9/paid' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ order_id: 'fb-loopback', status: 1 });
  });

  it('a reserve with a private feedback_url -> 9400, no reserve saved', async () => {
    const res = await client.post('/v2/subscribe/payment/reserve', {
      billing_key: billingKey,
      order_name: 'Annual plan',
      order_id: 'fb-reserve',
      price: 12_000,
      reserve_execute_at: new Date(t.clock.now().getTime() + 3_600_000).toISOString(),
      feedback_url: 'https://192.168.0.10/paid',
    });
    expectFeedbackRefused(res);
    const rows = await t.deps.database.db.selectFrom('reserves').select('reserve_id').execute();
    expect(rows).toEqual([]);
  });
});

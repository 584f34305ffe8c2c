// Idempotency-Key over HTTP (Stripe's semantics) on the key-in POST routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeIdempotencyKey } from '../../src/payments/billing-rules.js';
import { IN_FLIGHT_LEASE_MS, IN_FLIGHT_RENEW_MS } from '../../src/platform/idempotency.js';
import { createGatewayRegistry } from '../../src/gateways/registry.js';
import { startSandboxGateways } from '../../src/sandbox/server.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { armSandboxFault, keyInClient, sandboxChargeExecutions, TEST_CARD } from '../payments/key-in-fixtures.js';
import { concretePath, endpointsOf } from './route-list.js';

const DAY_MS = 24 * 60 * 60 * 1000;

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

async function receiptsOf(orderId: string): Promise<number> {
  const rows = await t.deps.database.db.selectFrom('receipts').select('receipt_id').where('order_id', '=', orderId).execute();
  return rows.length;
}

describe('Idempotency-Key', () => {
  it('replays the first response for the same key and body', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-1', price: 1200 };
    const first = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'key-1' });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // same body with another key order: the same request
    const reordered = { price: 1200, order_id: 'idem-1', order_name: 'June', billing_key: billingKey };
    const second = await client.post('/v2/subscribe/payment', reordered, { 'idempotency-key': 'key-1' });
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await receiptsOf('idem-1')).toBe(1);
  });

  it('refuses the same key with a different body with 422', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-2', price: 1200 };
    expect((await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'key-2' })).status).toBe(200);
    const res = await client.post('/v2/subscribe/payment', { ...body, price: 1300 }, { 'idempotency-key': 'key-2' });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ error_code: 'IDEMPOTENCY_KEY_REUSED', code: 9422 });
    // the same key on another route is another request too
    const elsewhere = await client.post('/v2/cancel', { receipt_id: 'x' }, { 'idempotency-key': 'key-2' });
    expect(elsewhere.status).toBe(422);
  });

  it('replays a refusal too', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-3', price: -1 };
    const first = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'key-3' });
    expect(first.status).toBe(400);
    const second = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'key-3' });
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toEqual(first.body);
  });

  it('issues one billing key for a replayed issuance', async () => {
    const first = await client.post(
      '/v2/request/subscribe',
      { ...TEST_CARD, subscription_id: 'idem-sub' },
      { 'idempotency-key': 'key-4' },
    );
    const second = await client.post(
      '/v2/request/subscribe',
      { ...TEST_CARD, subscription_id: 'idem-sub' },
      { 'idempotency-key': 'key-4' },
    );
    expect(first.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const keys = await t.deps.database.db
      .selectFrom('billing_keys')
      .select('billing_key')
      .where('subscription_id', '=', 'idem-sub')
      .execute();
    expect(keys).toHaveLength(1);
  });

  it('scopes keys per project', async () => {
    const other = keyInClient(t, await t.createProject({ name: 'other' }));
    const otherKey = await other.issuedKey();
    const mine = await client.post(
      '/v2/subscribe/payment',
      { billing_key: billingKey, order_name: 'a', order_id: 'idem-5', price: 100 },
      { 'idempotency-key': 'shared' },
    );
    const theirs = await other.post(
      '/v2/subscribe/payment',
      { billing_key: otherKey, order_name: 'b', order_id: 'idem-5', price: 200 },
      { 'idempotency-key': 'shared' },
    );
    expect(mine.status).toBe(200);
    expect(theirs.status).toBe(200);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.price).toBe(200);
  });

  it('forgets a key after 24 hours', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-6', price: 100 };
    expect((await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'key-6' })).status).toBe(200);
    t.clock.advance(DAY_MS + 1000);
    const fresh = await client.post('/v2/subscribe/payment', { ...body, order_id: 'idem-6b' }, { 'idempotency-key': 'key-6' });
    expect(fresh.status).toBe(200);
    expect(fresh.headers['idempotent-replayed']).toBeUndefined();
    expect(fresh.body.order_id).toBe('idem-6b');
    // expired records of other keys were swept on the way
    const swept = await t.deps.database.db
      .selectFrom('idempotency_keys')
      .select('idempotency_key')
      .where('idempotency_key', '=', 'key-1')
      .execute();
    expect(swept).toHaveLength(0);
  });

  it('takes over a key an earlier version left in flight (no lease) once 90 s passed', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-8', price: 100 };
    const now = t.clock.now();
    await t.deps.database.db
      .insertInto('idempotency_keys')
      .values({
        application_id: project.applicationId,
        idempotency_key: 'orphan',
        request_hash: 'x',
        request_salt: 'y',
        state: 'in_flight',
        response_status: null,
        response_body: null,
        created_at: now,
        expires_at: new Date(now.getTime() + DAY_MS),
      })
      .execute();
    expect((await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'orphan' })).status).toBe(422);
    t.clock.advance(11 * 60 * 1000);
    const res = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'orphan' });
    expect(res.status).toBe(200);
    expect(res.body.order_id).toBe('idem-8');
  });

  it('a key whose request died stops answering 9409 once its lease runs out, not after 90 s; a live request renews it', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-lease', price: 100 };
    const db = t.deps.database.db;
    // a claim as a process writes it, then the process dies: no renewal comes
    const claimed = await t.deps.stores.idempotency.claim({
      applicationId: project.applicationId,
      key: 'lease-died',
      requestHash: 'x',
      requestSalt: 'y',
      now: t.clock.now(),
      expiresAt: new Date(t.clock.now().getTime() + DAY_MS),
    });
    expect(claimed.kind).toBe('claimed');
    const record = () =>
      db
        .selectFrom('idempotency_keys')
        .select(['state', 'lease_until'])
        .where('application_id', '=', project.applicationId)
        .where('idempotency_key', '=', 'lease-died')
        .executeTakeFirst();
    const leaseFromNow = async () => (await record())!.lease_until!.getTime() - t.clock.now().getTime();
    // (the test clock runs on with real time: a few ms either way)
    expect(Math.abs((await leaseFromNow()) - IN_FLIGHT_LEASE_MS)).toBeLessThan(1_000);
    // a renewal (what the request's own process does every IN_FLIGHT_RENEW_MS) moves it on
    t.clock.advance(IN_FLIGHT_RENEW_MS);
    await t.deps.stores.idempotency.renew(project.applicationId, 'lease-died', t.clock.now());
    expect(Math.abs((await leaseFromNow()) - IN_FLIGHT_LEASE_MS)).toBeLessThan(1_000);
    t.clock.advance(IN_FLIGHT_LEASE_MS - 1_000);
    expect(await t.deps.stores.idempotency.releaseStale(t.clock.now())).toBe(0);
    // the renewals stop: one lease later the key is free, for a retry and for the sweep alike
    t.clock.advance(2_000);
    const retried = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'lease-died' });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.order_id).toBe('idem-lease');
  });

  it('a retry whose first request charged and died before storing its answer gets the receipt; another key gets 9410', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-died-after-charge', price: 700 };
    const first = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'died-after-charge' });
    expect(first.status).toBe(200);
    // what the API killed between the charge and its answer leaves, once the sweep released the key in flight:
    // the completed receipt and no idempotency record
    await t.deps.database.db
      .deleteFrom('idempotency_keys')
      .where('application_id', '=', project.applicationId)
      .where('idempotency_key', '=', 'died-after-charge')
      .execute();

    const retried = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'died-after-charge' });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body).toMatchObject({ receipt_id: first.body.receipt_id, status: 1, order_id: body.order_id });
    expect(await receiptsOf(body.order_id)).toBe(1);
    expect(await sandboxChargeExecutions(t.sandboxUrl, chargeIdempotencyKey(project.applicationId, body.order_id))).toBe(1);
    // the key's record holds that answer now: the next retry is a replay
    const replayed = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'died-after-charge' });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.body).toEqual(retried.body);

    // another request for the same order_id is still a duplicate, with another key or none
    for (const headers of [{ 'idempotency-key': 'another-key' }, {}] as Record<string, string>[]) {
      const other = await client.post('/v2/subscribe/payment', body, headers);
      expect(other.status).toBe(409);
      expect(other.body).toMatchObject({ error_code: 'ORDER_ID_DUPLICATED', code: 9410 });
    }
    // the receipt stores no key, only its MAC
    const stored = await t.deps.database.db
      .selectFrom('receipts')
      .select('idempotency_key_mac')
      .where('receipt_id', '=', first.body.receipt_id as string)
      .executeTakeFirstOrThrow();
    expect(stored.idempotency_key_mac).toMatch(/^[^.]+\.[0-9a-f]{64}$/);
    expect(stored.idempotency_key_mac).not.toContain('died-after-charge');
  });

  it('refuses a malformed key', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-7', price: 100 };
    const res = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'k'.repeat(256) });
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('INVALID_REQUEST');
    expect(await receiptsOf('idem-7')).toBe(0);
  });
});

describe('Idempotency-Key coverage', () => {
  // The POST routes a project authenticates; the token route (the project is not known yet) and the admin
  // API (no project) are the documented exceptions.
  const NOT_PROJECT_ROUTES = new Set(['/v2/request/token']);
  const projectPosts = () =>
    endpointsOf(t.app).filter(
      (e) =>
        e.method === 'POST' && (e.path.startsWith('/v2/') || e.path.startsWith('/message/')) && !NOT_PROJECT_ROUTES.has(e.path),
    );

  it('includes the key-in, cancel, verification and message webhook routes', () => {
    expect(projectPosts().map((e) => e.path)).toEqual(
      expect.arrayContaining([
        '/v2/request/subscribe',
        '/v2/subscribe/payment',
        '/v2/cancel',
        '/v2/request/authentication',
        '/v2/authenticate/realarm',
        '/v2/authenticate/confirm',
        '/message/alimtalk/webhook/secret',
        '/message/alimtalk/webhook/test',
        '/message/alimtalk/webhook/deliveries/retry',
        '/message/alimtalk/webhook/deliveries/:delivery_id/retry',
      ]),
    );
  });

  it('every project POST route replays an answer for the same key and body, and refuses another body with 9422', async () => {
    for (const { path } of projectPosts()) {
      const url = concretePath(path, '000000000000000000000000');
      const key = `coverage-${path}`;
      const first = await client.post(url, { receipt_id: 'nope' }, { 'idempotency-key': key });
      expect(first.status, `${path}: ${JSON.stringify(first.body)}`).toBeLessThan(500);
      const replay = await client.post(url, { receipt_id: 'nope' }, { 'idempotency-key': key });
      expect(replay.headers['idempotent-replayed'], path).toBe('true');
      expect(replay.body, path).toEqual(first.body);
      const other = await client.post(url, { receipt_id: 'other' }, { 'idempotency-key': key });
      expect(other.body, path).toMatchObject({ error_code: 'IDEMPOTENCY_KEY_REUSED', code: 9422 });
    }
  });

  it('stores the answer sealed and replays it opened', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'idem-sealed', price: 700 };
    const first = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'sealed-1' });
    expect(first.status).toBe(200);
    const row = await t.deps.database.db
      .selectFrom('idempotency_keys')
      .select('response_body')
      .where('idempotency_key', '=', 'sealed-1')
      .executeTakeFirstOrThrow();
    expect(row.response_body).toMatch(/^v1\./);
    expect(row.response_body).not.toContain('idem-sealed');
    const replay = await client.post('/v2/subscribe/payment', body, { 'idempotency-key': 'sealed-1' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
  });
});

describe('Idempotency-Key while the first request is in flight', () => {
  let slow: TestApp;
  let sandbox: Awaited<ReturnType<typeof startSandboxGateways>>;
  let registry: ReturnType<typeof createGatewayRegistry>;

  beforeAll(async () => {
    sandbox = await startSandboxGateways({ host: '127.0.0.1', port: 0, token: TEST_SANDBOX_TOKEN });
    registry = createGatewayRegistry({ sandboxUrl: sandbox.url, timeoutMs: 1_500 });
    slow = await buildTestApp({ gateways: registry });
  });
  afterAll(async () => {
    await slow?.close();
    await registry?.close();
    await sandbox?.close();
  });

  it('answers 409 meanwhile, frees the key after a 5xx, and the retry charges once', async () => {
    const p = await slow.createProject();
    const c = keyInClient(slow, p);
    const key = await c.issuedKey();
    await armSandboxFault(sandbox.url, 'charge', 'timeout');
    const body = { billing_key: key, order_name: 'June', order_id: 'inflight-1', price: 500 };
    const firstPromise = c.post('/v2/subscribe/payment', body, { 'idempotency-key': 'slow-1' });

    // poll (bounded) until the first request has claimed the key, then collide with it
    let concurrent: Awaited<ReturnType<typeof c.post>> | undefined;
    for (let i = 0; i < 200; i++) {
      const claimed = await slow.deps.database.db
        .selectFrom('idempotency_keys')
        .select('state')
        .where('idempotency_key', '=', 'slow-1')
        .executeTakeFirst();
      if (claimed?.state === 'in_flight') {
        concurrent = await c.post('/v2/subscribe/payment', body, { 'idempotency-key': 'slow-1' });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(concurrent?.status).toBe(409);
    expect(concurrent?.body).toMatchObject({ error_code: 'IDEMPOTENCY_IN_PROGRESS', code: 9409 });

    const first = await firstPromise;
    expect(first.status).toBe(502);
    const retry = await c.post('/v2/subscribe/payment', body, { 'idempotency-key': 'slow-1' });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    const replay = await c.post('/v2/subscribe/payment', body, { 'idempotency-key': 'slow-1' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(retry.body);

    expect(await sandboxChargeExecutions(sandbox.url, chargeIdempotencyKey(p.applicationId, 'inflight-1'))).toBe(1);
  });
});

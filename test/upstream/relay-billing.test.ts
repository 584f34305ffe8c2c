// paygate in front of a provider, key-in billing: A (the relay, with its engine and worker) in front of B (another
// paygate in sandbox mode, the provider), over real HTTP. The merchant talks to A with A's keys; A calls B with the
// project's keys at B. The ids the merchant gets are B's; B's catalog errors reach the merchant unchanged; a lost
// answer of B is settled by A's reconcile workflow with exactly one charge at B.
import { createServer, type Server, connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { pgChargeKey } from '../../src/payments/charges.js';
import { reconcileChargeWorkflowId } from '../../src/payments/reconcile-contract.js';
import { workerLogs } from '../helpers/temporal.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient, sandboxChargeExecutions, TEST_CARD } from '../payments/key-in-fixtures.js';
import { eventually } from '../webhooks/fixtures.js';
import { armProviderFault, routeToProvider } from './fixtures.js';

let a: TestApp;
let b: TestApp;
let atA: TestProject;
let atB: TestProject;
let bUrl: string;
let merchant: ReturnType<typeof keyInClient>;
let atBClient: ReturnType<typeof keyInClient>;

beforeAll(async () => {
  // B runs its own engine and worker too: the provider's reconciles are its own business, as in production
  b = await buildTestApp({ withTemporal: true });
  bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
  atB = await b.createProject();
  // the provider's circuit opens while B is down below (its reconcile keeps asking): a short open period, so the
  // probe that finds B back comes within the test's wait (the default is 30 s)
  a = await buildTestApp({ withTemporal: true, env: { UPSTREAM_CIRCUIT_OPEN_SECONDS: '1' } });
  atA = await a.createProject();
  // sandbox_card at B shadows A's own sandbox_card for this project
  await routeToProvider(a, atA, { baseUrl: bUrl, project: atB }, ['sandbox_card']);
  merchant = keyInClient(a, atA);
  atBClient = keyInClient(b, atB);
}, 120_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
});

/** The reconcile workflows A ran (the pending receipts whose answers were lost), for the secrets check. */
const reconciled: string[] = [];

/** B's own executions of a charge of its project, by B's PG key for the order_id. */
const chargesAtB = (orderId: string) => sandboxChargeExecutions(b.sandboxUrl, pgChargeKey(atB.applicationId, orderId, 0));

describe('key-in billing relayed to the provider', () => {
  let billingKey: string;

  it('issues the billing key at the provider: the merchant gets the provider’s billing_key and receipt_id', async () => {
    const issued = await merchant.issue();
    expect(issued.status).toBe(200);
    expect(issued.body).toMatchObject({ status: 11, pg: 'sandbox_card', subscription_id: TEST_CARD.subscription_id });
    billingKey = issued.body.billing_key as string;
    const atBKey = await atBClient.get(`/v2/billing_key/${billingKey}`);
    expect(atBKey.status).toBe(200);
    expect(atBKey.body).toMatchObject({ billing_key: billingKey, receipt_id: issued.body.receipt_id });
    // A's own sandbox PG issued nothing: the key lives at B only
    const local = await a.deps.database.db
      .selectFrom('billing_keys')
      .selectAll()
      .where('provider_billing_key', '=', billingKey)
      .executeTakeFirstOrThrow();
    expect(local.via_upstream).toBe(true);
    expect(local.gateway_billing_key).not.toContain(billingKey);
  });

  it('charges at the provider once, under the merchant’s ids; a replay answers the first result', async () => {
    const body = { billing_key: billingKey, order_name: 'June', order_id: 'relay-1', price: 12_000, tax_free: 1_000 };
    const first = await merchant.post('/v2/subscribe/payment', body, { 'idempotency-key': 'relay-charge-1' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ order_id: 'relay-1', price: 12_000, tax_free: 1_000, status: 1, pg: 'sandbox_card' });
    const receiptId = first.body.receipt_id as string;
    const atBReceipt = await atBClient.get(`/v2/receipt/${receiptId}`);
    expect(atBReceipt.status).toBe(200);
    expect(atBReceipt.body).toMatchObject({ receipt_id: receiptId, order_id: 'relay-1', price: 12_000, status: 1 });
    expect((await merchant.get(`/v2/receipt/${receiptId}`)).body).toMatchObject({ receipt_id: receiptId, status: 1 });

    const replay = await merchant.post('/v2/subscribe/payment', body, { 'idempotency-key': 'relay-charge-1' });
    expect(replay.status).toBe(200);
    expect(replay.body.receipt_id).toBe(receiptId);
    expect(await chargesAtB('relay-1')).toBe(1);
  });

  it('cancels partly at the provider', async () => {
    const paid = await merchant.post('/v2/subscribe/payment', {
      billing_key: billingKey,
      order_name: 'July',
      order_id: 'relay-cancel-1',
      price: 9_000,
    });
    const receiptId = paid.body.receipt_id as string;
    const cancelled = await merchant.cancel({ receipt_id: receiptId, cancel_price: 4_000, cancel_id: 'c-1' });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ receipt_id: receiptId, cancelled_price: 4_000, status: 1 });
    const atBReceipt = await atBClient.get(`/v2/receipt/${receiptId}`);
    expect(atBReceipt.body).toMatchObject({ cancelled_price: 4_000 });
    // the same cancel_id again: the first result, nothing refunded twice at B
    const again = await merchant.cancel({ receipt_id: receiptId, cancel_price: 4_000, cancel_id: 'c-1' });
    expect(again.body).toMatchObject({ cancelled_price: 4_000 });
    expect((await atBClient.get(`/v2/receipt/${receiptId}`)).body).toMatchObject({ cancelled_price: 4_000 });
  });

  it('a refund made at the provider directly shows in the receipt the merchant looks up at A', async () => {
    const paid = await merchant.post('/v2/subscribe/payment', {
      billing_key: billingKey,
      order_name: 'September',
      order_id: 'relay-refund-outside-1',
      price: 8_000,
    });
    const receiptId = paid.body.receipt_id as string;
    // someone refunds part of it at the provider (its console, another integration), not through paygate
    const outside = await atBClient.cancel({ receipt_id: receiptId, cancel_price: 2_500, cancel_id: 'console-1' });
    expect(outside.status).toBe(200);
    const seen = await merchant.get(`/v2/receipt/${receiptId}`);
    expect(seen.body).toMatchObject({ receipt_id: receiptId, cancelled_price: 2_500, status: 1 });
    // a cancel at A then refunds what remains, at the provider, and both agree
    const rest = await merchant.cancel({ receipt_id: receiptId, cancel_id: 'rest-1' });
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    expect(rest.body).toMatchObject({ cancelled_price: 8_000, status: 20 });
    expect((await atBClient.get(`/v2/receipt/${receiptId}`)).body).toMatchObject({ cancelled_price: 8_000, status: 20 });
  });

  it('relays the provider’s refusal unchanged and frees the order_id', async () => {
    const refusing = await merchant.issue({ card_no: '4000000000009995', subscription_id: 'sub-refusing' });
    expect(refusing.status).toBe(200);
    const body = { billing_key: refusing.body.billing_key, order_name: 'June', order_id: 'relay-declined-1', price: 5_000 };
    const declined = await merchant.post('/v2/subscribe/payment', body);
    // what the merchant would have had from B directly
    const direct = await atBClient.post('/v2/subscribe/payment', { ...body, order_id: 'direct-declined-1' });
    expect(direct.status).toBe(400);
    expect(declined.status).toBe(direct.status);
    expect(declined.body).toMatchObject({
      error_code: direct.body.error_code,
      code: direct.body.code,
      pg_error_code: direct.body.pg_error_code,
    });
    const row = await a.deps.database.db
      .selectFrom('receipts')
      .selectAll()
      .where('application_id', '=', atA.applicationId)
      .where('order_id', '=', 'relay-declined-1')
      .executeTakeFirst();
    expect(row).toBeUndefined();
  });

  it('settles a charge whose provider answer was lost by itself: exactly one charge at the provider', async () => {
    await armProviderFault(b, 'charge', 'lost_response');
    const body = { billing_key: billingKey, order_name: 'August', order_id: 'relay-lost-1', price: 3_300 };
    const first = await merchant.post('/v2/subscribe/payment', body);
    expect(first.status).toBe(502);
    // the receipt to poll: pending under A's own id, which keeps naming it once it takes the provider's
    expect(first.body).toMatchObject({ error_code: 'GATEWAY_UNAVAILABLE' });
    expect(first.body.receipt_id).toEqual(expect.any(String));
    const pending = await a.deps.database.db
      .selectFrom('receipts')
      .selectAll()
      .where('application_id', '=', atA.applicationId)
      .where('order_id', '=', 'relay-lost-1')
      .executeTakeFirstOrThrow();
    expect(pending.status).toBe(0);
    reconciled.push(pending.receipt_id);

    const settled = await eventually(async () => {
      const row = await a.deps.database.db
        .selectFrom('receipts')
        .selectAll()
        .where('application_id', '=', atA.applicationId)
        .where('order_id', '=', 'relay-lost-1')
        .executeTakeFirst();
      return row?.status === 1 ? row : undefined;
    }, 'A’s receipt settled by its reconcile workflow');
    // the receipt took B's id (beside A's own, which it was pending under), and B charged once
    expect(settled.receipt_id).toBe(pending.receipt_id);
    const providerReceiptId = settled.provider_receipt_id;
    const atBReceipt = await atBClient.get(`/v2/receipt/${providerReceiptId}`);
    expect(atBReceipt.body).toMatchObject({ receipt_id: providerReceiptId, order_id: 'relay-lost-1', status: 1 });
    expect(await chargesAtB('relay-lost-1')).toBe(1);
    expect(first.body.receipt_id).toBe(pending.receipt_id);
    expect((await merchant.get(`/v2/receipt/${pending.receipt_id}`)).body).toMatchObject({
      receipt_id: providerReceiptId,
      status: 1,
    });
    // the merchant's retry gets the settled receipt, nothing charged again
    const retried = await merchant.post('/v2/subscribe/payment', body);
    expect(retried.status).toBe(200);
    expect(retried.body.receipt_id).toBe(providerReceiptId);
    expect(await chargesAtB('relay-lost-1')).toBe(1);
  }, 60_000);

  it("a monthly schedule charges the provider's billing key for 3 periods, through one decline and its recovery", async () => {
    const HOUR_MS = 60 * 60 * 1000;
    const api = (method: 'GET' | 'POST', url: string, body?: unknown) => merchant.send(method, url, body);
    const created = await api('POST', '/v2/subscribe/schedules', {
      billing_key: billingKey,
      order_name: 'Monthly plan',
      price: 9_900,
      interval: 'month',
      max_charges: 3,
      start_at: new Date(a.clock.now().getTime() + HOUR_MS).toISOString(),
      retry: { delays: ['PT1H'] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.schedule_id as string;
    const charges = async () =>
      (await api('GET', `/v2/subscribe/schedules/${id}/charges`)).body.list as Record<string, unknown>[];
    const paid = (n: number) =>
      eventually(
        async () => ((await charges()).filter((c) => c.status === 'paid').length >= n ? true : undefined),
        `${n} paid periods`,
        30_000,
      );

    /** To the schedule's next charge, and no further: a dunning retry an hour later must not be skipped over. */
    const skipToNextCharge = async () => {
      const next = (await api('GET', `/v2/subscribe/schedules/${id}`)).body.next_charge_at as string;
      await a.temporal!.skipTime(Date.parse(next) - a.clock.now().getTime() + 1_000);
    };
    await a.temporal!.skipTime(HOUR_MS + 1_000);
    await paid(1);
    // the provider's card declines once: period 2 goes past_due, its retry an hour later is paid
    await armProviderFault(b, 'charge', 'decline');
    await skipToNextCharge();
    await eventually(
      async () => ((await api('GET', `/v2/subscribe/schedules/${id}`)).body.status === 'past_due' ? true : undefined),
      'past_due',
      30_000,
    );
    expect((await charges()).find((c) => c.period === 2)).toMatchObject({ status: 'retrying', pg_error_code: 'CF01' });
    await a.temporal!.skipTime(HOUR_MS + 1_000);
    await paid(2);
    await skipToNextCharge();
    await paid(3);
    const done = await eventually(
      async () => {
        const view = (await api('GET', `/v2/subscribe/schedules/${id}`)).body;
        return view.status === 'completed' ? view : undefined;
      },
      'completed',
      30_000,
    );
    expect(done).toMatchObject({ charges_made: 3 });
    // each paid period is a receipt of the provider, charged there once
    for (const charge of (await charges()).filter((c) => c.status === 'paid')) {
      const atBReceipt = await atBClient.get(`/v2/receipt/${String(charge.receipt_id)}`);
      expect(atBReceipt.body).toMatchObject({ status: 1, price: 9_900 });
    }
    const atBPaid = await b.deps.database.db
      .selectFrom('receipts')
      .select('order_id')
      .where('application_id', '=', atB.applicationId)
      .where('order_id', 'like', `${id}-%`)
      .where('status', '=', 1)
      .execute();
    expect(atBPaid).toHaveLength(3);
  }, 120_000);

  it('answers 9478 when the provider refuses the configured keys, and charges nothing', async () => {
    const other = await a.createProject();
    await routeToProvider(a, other, { baseUrl: bUrl, project: atB, secretKey: 'wrong-secret' }, ['sandbox_card']);
    const refused = await keyInClient(a, other).issue();
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({ error_code: 'UPSTREAM_KEYS_REFUSED', code: 9478 });
  });
});

/**
 * A TCP hop between A and B that can take B down: `forward` passes bytes both ways; `swallow` accepts a request and
 * drops the connection without passing it on or answering (B down mid-call: A cannot tell whether B got it).
 */
async function startHop(
  target: string,
): Promise<{ url: string; mode: 'forward' | 'swallow'; down(): void; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const hop = {
    url: '',
    mode: 'forward' as 'forward' | 'swallow',
    /** B goes down: its open connections drop (A's kept-alive ones too), and new requests are swallowed */
    down() {
      hop.mode = 'swallow';
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (hop.mode === 'swallow') {
      client.once('data', () => client.destroy());
      return;
    }
    const upstream = connect(Number(port), hostname);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hop.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return hop;
}

describe('the provider down mid-call', () => {
  it("A's charge is reconciled once B is back: paid, charged once at B, without the merchant retrying", async () => {
    const hop = await startHop(bUrl);
    try {
      const shop = await a.createProject();
      await routeToProvider(a, shop, { baseUrl: hop.url, project: atB }, ['sandbox_card']);
      const client = keyInClient(a, shop);
      const key = await client.issuedKey({ subscription_id: 'sub-hop' });

      hop.down();
      const body = { billing_key: key, order_name: 'June', order_id: 'relay-down-1', price: 7_700 };
      const first = await client.post('/v2/subscribe/payment', body);
      expect(first.status).toBe(502);
      const receiptOf = () =>
        a.deps.database.db
          .selectFrom('receipts')
          .selectAll()
          .where('application_id', '=', shop.applicationId)
          .where('order_id', '=', 'relay-down-1')
          .executeTakeFirst();
      expect((await receiptOf())?.status).toBe(0);
      reconciled.push((await receiptOf())!.receipt_id);
      // while B stays down, the reconcile workflow keeps asking and nothing changes
      await a.temporal!.skipTime(30_000);
      await new Promise((r) => setTimeout(r, 1_500));
      expect((await receiptOf())?.status).toBe(0);
      expect(await chargesAtB('relay-down-1')).toBe(0);

      hop.mode = 'forward';
      const settled = await eventually(async () => {
        await a.temporal!.skipTime(20_000);
        const row = await receiptOf();
        return row?.status === 1 ? row : undefined;
      }, 'the charge settled once B is back');
      expect(await chargesAtB('relay-down-1')).toBe(1);
      expect((await atBClient.get(`/v2/receipt/${settled.provider_receipt_id}`)).body).toMatchObject({ status: 1, price: 7_700 });
    } finally {
      await hop.close();
    }
  }, 90_000);
});

/** A history as text, payload bytes decoded as UTF-8 (JSON.stringify alone would list their numbers). */
const asText = (value: unknown) =>
  JSON.stringify(value, (_key, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v));

describe("the provider's secret key", () => {
  it('is nowhere in A: not in its logs, its database (plain), the workflow histories or the worker logs', async () => {
    const secret = atB.secretKey;
    expect(a.logs()).toContain('billing key issued'); // the logs were written: they just hold no secret
    expect(a.logs()).not.toContain(secret);
    const db = a.deps.database.db;
    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(
      db,
    );
    expect(tables.rows.map((t) => t.table_name)).toContain('upstreams');
    for (const { table_name } of tables.rows) {
      const rows = await sql<{ row: string }>`select row_to_json(t)::text as row from ${sql.table(table_name)} t`.execute(db);
      for (const { row } of rows.rows) expect(row, table_name).not.toContain(secret);
    }
    expect(reconciled.length).toBeGreaterThan(0);
    for (const receiptId of reconciled) {
      const events =
        (await a.temporal!.client.workflow.getHandle(reconcileChargeWorkflowId(receiptId)).fetchHistory()).events ?? [];
      expect(events.length).toBeGreaterThan(3);
      // decoded by paygate's codec, and as the engine stores them: every payload's bytes read as text
      expect(asText(events)).toContain(receiptId);
      expect(asText(events)).not.toContain(secret);
      expect(asText(await a.temporal!.rawHistory(reconcileChargeWorkflowId(receiptId)))).not.toContain(secret);
    }
    expect(workerLogs()).not.toContain(secret);
  });
});

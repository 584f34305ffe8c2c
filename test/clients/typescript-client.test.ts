// The typed client (clients/typescript): the committed generated files match a fresh generation from the
// app's routes, and the client drives the real app listening on loopback: a billing key issued with a
// sandbox test card, a charge, its receipt, an Idempotency-Key replay and a catalog error, all typed.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_DIR, GENERATED_FILES, generateClient } from '../../clients/typescript/generate.js';
import {
  createPaygateClient,
  idempotencyKey,
  type PaygateClient,
  type Schema,
  verifyWebhook,
} from '../../clients/typescript/index.js';
import { newSigningSecret, signedHeaders } from '../../src/webhooks/signing.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { KEY_IN_METHOD, TEST_CARD } from '../payments/key-in-fixtures.js';

/** the typed body: method is the one literal the document allows */
const CARD = { ...TEST_CARD, method: KEY_IN_METHOD as '카드자동(REST)' };

describe('the generated client files', () => {
  it('are what `npm run client:generate` writes today (run it after changing a route or its contract)', async () => {
    const fresh = await generateClient();
    for (const name of GENERATED_FILES) {
      const committed = await readFile(join(CLIENT_DIR, name), 'utf8');
      expect(committed === fresh[name], `clients/typescript/${name} is stale: run npm run client:generate`).toBe(true);
    }
  }, 120_000);
});

describe('createPaygateClient against the running server', () => {
  let t: TestApp;
  let client: PaygateClient;

  beforeAll(async () => {
    t = await buildTestApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    const project = await t.createProject({ name: 'typed client' });
    client = createPaygateClient({
      baseUrl: `http://127.0.0.1:${port}/`,
      clientKey: project.clientKey,
      secretKey: project.secretKey,
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('issues a billing key with a sandbox test card, charges it and reads the receipt', async () => {
    const issued = await client.POST('/v2/request/subscribe', { body: CARD });
    expect(issued.response.status).toBe(200);
    const key: Schema<'BillingKey'> = issued.data!;
    expect(key.billing_data.card_no).toBe('411111******1111');
    expect(key.status).toBe(11);

    const charged = await client.POST('/v2/subscribe/payment', {
      body: { billing_key: key.billing_key, order_id: 'typed-1', order_name: 'June', price: 1000 },
    });
    expect(charged.response.status).toBe(200);
    const receipt: Schema<'Receipt'> = charged.data!;
    expect(receipt).toMatchObject({ order_id: 'typed-1', price: 1000, status: 1, currency: 'KRW' });

    const read = await client.GET('/v2/receipt/{receipt_id}', { params: { path: { receipt_id: receipt.receipt_id } } });
    expect(read.data).toEqual(receipt);
  });

  it('sends an Idempotency-Key on every POST; a key given again replays the first answer', async () => {
    const issued = await client.POST('/v2/request/subscribe', { body: { ...CARD, subscription_id: 'sub-replay' } });
    const body = { billing_key: issued.data!.billing_key, order_id: 'typed-2', order_name: 'July', price: 2000 };
    const header = { 'idempotency-key': idempotencyKey() };
    const first = await client.POST('/v2/subscribe/payment', { body, params: { header } });
    const again = await client.POST('/v2/subscribe/payment', { body, params: { header } });
    expect(again.data).toEqual(first.data);
    // without a key of its own each POST gets a fresh one: the same order_id is a new request, refused
    const fresh = await client.POST('/v2/subscribe/payment', { body });
    expect(fresh.response.status).toBe(409);
    expect(fresh.error).toMatchObject({ error_code: 'ORDER_ID_DUPLICATED', code: 9410 });
  });

  it('answers catalog errors as typed errors', async () => {
    const missing = await client.GET('/v2/receipt/{receipt_id}', {
      params: { path: { receipt_id: '0123456789abcdef01234567' } },
    });
    expect(missing.data).toBeUndefined();
    const error: Schema<'ApiError'> | undefined = missing.error;
    expect(error).toMatchObject({ error_code: 'RC_NOT_FOUND', code: 2000 });
  });
});

describe('verifyWebhook', () => {
  const secret = newSigningSecret();
  const body = JSON.stringify({ event: 'payment.feedback', receipt_id: '0123456789abcdef01234567' });

  it("accepts what paygate's signer sends, current or previous secret", () => {
    const headers = signedHeaders({ current: newSigningSecret(), previous: secret }, 'dlv_1', new Date(), body);
    expect(verifyWebhook({ ...headers, 'content-type': 'application/json' }, body, secret)).toEqual(JSON.parse(body));
    expect(verifyWebhook(new Headers({ ...headers }), body, secret)).toEqual(JSON.parse(body));
  });

  it('returns the fields of a form-encoded feedback delivery', () => {
    const form = 'receipt_id=0123456789abcdef01234567&status=1';
    const headers = signedHeaders({ current: secret }, 'dlv_2', new Date(), form);
    expect(verifyWebhook({ ...headers, 'content-type': 'application/x-www-form-urlencoded' }, form, secret)).toEqual({
      receipt_id: '0123456789abcdef01234567',
      status: '1',
    });
  });

  it('refuses a changed body, another secret and an old timestamp', () => {
    const headers = signedHeaders({ current: secret }, 'dlv_3', new Date(), body);
    expect(() => verifyWebhook({ ...headers }, `${body} `, secret)).toThrow();
    expect(() => verifyWebhook({ ...headers }, body, newSigningSecret())).toThrow();
    const old = signedHeaders({ current: secret }, 'dlv_4', new Date(Date.now() - 10 * 60_000), body);
    expect(() => verifyWebhook({ ...old }, body, secret)).toThrow();
  });
});

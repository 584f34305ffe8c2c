// GET /v2/receipt/{receipt_id} over HTTP against the real app and sandbox PG.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient } from './key-in-fixtures.js';

let t: TestApp;
let project: TestProject;
let other: TestProject;
let client: ReturnType<typeof keyInClient>;

beforeAll(async () => {
  t = await buildTestApp();
  project = await t.createProject({ merchant: { company_name: 'Paygate Shop' } });
  other = await t.createProject({ name: 'other' });
  client = keyInClient(t, project);
});
afterAll(async () => {
  await t?.close();
});

describe('GET /v2/receipt/{receipt_id}', () => {
  it('returns the payment receipt with the documented fields and no nulls', async () => {
    const key = await client.issuedKey();
    const paid = await client.charge(key, { order_id: 'receipt-1', price: 33_000, tax_free: 3_000 });
    expect(paid.status).toBe(200);
    const res = await client.get(`/v2/receipt/${paid.body.receipt_id as string}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'receipt_id',
        'order_id',
        'price',
        'tax_free',
        'cancelled_price',
        'cancelled_tax_free',
        'order_name',
        'company_name',
        'sandbox',
        'pg',
        'method',
        'method_symbol',
        'method_origin',
        'method_origin_symbol',
        'purchased_at',
        'requested_at',
        'status',
        'status_locale',
        'card_data',
        'currency',
      ].sort(),
    );
    expect(res.body).toMatchObject({
      receipt_id: paid.body.receipt_id,
      order_id: 'receipt-1',
      price: 33_000,
      tax_free: 3_000,
      company_name: 'Paygate Shop',
      status: 1,
      status_locale: '결제완료',
    });
    expect(JSON.stringify(res.body)).not.toContain('null');
  });

  it('ignores lookup_user_data', async () => {
    const key = await client.issuedKey();
    const paid = await client.charge(key);
    const res = await client.get(`/v2/receipt/${paid.body.receipt_id as string}?lookup_user_data=true`);
    expect(res.status).toBe(200);
    expect(res.body.receipt_id).toBe(paid.body.receipt_id);
  });

  it("answers 2000 for an unknown receipt and 1225 for another project's", async () => {
    const unknown = await client.get('/v2/receipt/ffffffffffffffffffffffff');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error_code: 'RC_NOT_FOUND', code: 2000 });
    expect((await client.get(`/v2/receipt/${'x'.repeat(150)}`)).body).toMatchObject({ code: 2000 });

    const key = await client.issuedKey();
    const paid = await client.charge(key);
    const res = await keyInClient(t, other).get(`/v2/receipt/${paid.body.receipt_id as string}`);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error_code: 'APP_KEY_CHAIN_SESSION_INVALID', code: 1225 });
  });

  it('requires authentication', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v2/receipt/ffffffffffffffffffffffff',
      headers: { authorization: 'Basic Zm9vOmJhcg==' },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error_code: 'APP_CLIENT_KEY_NOT_FOUND' });
  });
});

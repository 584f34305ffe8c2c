// paygate calling an upstream provider with a project's keys there, over real HTTP: the provider is another paygate
// (B, sandbox mode, listening on loopback), the caller is A's upstream service. The provider's answers, its catalog
// errors (passed on verbatim), a refusal of the configured keys (9478, noted, logged once) and an unreachable
// provider (retryable, as a PG outage) are each what the merchant-facing code relies on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, RelayedApiError } from '../../src/platform/errors.js';
import { GatewayUnavailableError } from '../../src/gateways/index.js';
import { ProviderRefusedError } from '../../src/upstream/index.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { TEST_CARD } from '../payments/key-in-fixtures.js';

const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

let a: TestApp;
let b: TestApp;
let bUrl: string;
let atB: TestProject;
let atA: TestProject;

beforeAll(async () => {
  b = await buildTestApp();
  bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
  atB = await b.createProject();
  a = await buildTestApp({
    // A relays routes of its own, to show a relayed provider error reaches the merchant as the provider sent it
    routes: async (app) => {
      app.get('/test/relay/receipt/:id', { config: { auth: 'none' } }, async (request) => {
        const path = `/v2/receipt/${(request.params as { id: string }).id}`;
        try {
          return await app.deps.services.upstream.call(atA.applicationId, { method: 'GET', path });
        } catch (err) {
          // as the adapters relay a refusal
          throw err instanceof ProviderRefusedError ? new RelayedApiError(err.statusCode, err.body) : err;
        }
      });
    },
  });
  atA = await a.createProject();
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

const configure = (secretKey: string, baseUrl = bUrl) =>
  a.app.inject({
    method: 'PUT',
    url: `/admin/v1/projects/${atA.applicationId}/upstream`,
    headers: admin,
    payload: { base_url: baseUrl, client_key: atB.clientKey, secret_key: secretKey, pgs: ['sandbox_card'] },
  });
const call = (req: Parameters<TestApp['deps']['services']['upstream']['call']>[1]) =>
  a.deps.services.upstream.call(atA.applicationId, req);

describe('calls to the provider with the project keys there', () => {
  it('issues a billing key at the provider, and the same Idempotency-Key gets the first answer again', async () => {
    expect((await configure(atB.secretKey)).statusCode).toBe(200);
    const first = (await call({
      method: 'POST',
      path: '/v2/request/subscribe',
      body: TEST_CARD,
      idempotencyKey: 'issue-1',
    })) as Record<string, unknown>;
    expect(first).toMatchObject({ status: 11, pg: 'sandbox_card', subscription_id: TEST_CARD.subscription_id });
    const again = (await call({
      method: 'POST',
      path: '/v2/request/subscribe',
      body: TEST_CARD,
      idempotencyKey: 'issue-1',
    })) as Record<string, unknown>;
    expect(again.billing_key).toBe(first.billing_key);
    // the key is B's own: B's merchant lookup knows it
    const atBLookup = await b.app.inject({
      method: 'GET',
      url: `/v2/billing_key/${String(first.billing_key)}`,
      headers: { authorization: atB.basicAuth },
    });
    expect(atBLookup.statusCode).toBe(200);
  });

  it("passes the provider's catalog error on unchanged: status and body", async () => {
    const direct = await b.app.inject({
      method: 'GET',
      url: '/v2/receipt/0123456789abcdef01234567',
      headers: { authorization: atB.basicAuth },
    });
    expect(direct.statusCode).toBeGreaterThanOrEqual(400);
    const relayed = await call({ method: 'GET', path: '/v2/receipt/0123456789abcdef01234567' }).catch((err: unknown) => err);
    expect(relayed).toBeInstanceOf(ProviderRefusedError);
    expect((relayed as ProviderRefusedError).statusCode).toBe(direct.statusCode);
    expect((relayed as ProviderRefusedError).body).toEqual(direct.json());
    // and through A's HTTP error handling, byte for byte what B answered
    const viaA = await a.app.inject({ method: 'GET', url: '/test/relay/receipt/0123456789abcdef01234567' });
    expect(viaA.statusCode).toBe(direct.statusCode);
    expect(viaA.json()).toEqual(direct.json());
  });

  it('turns a refusal of the configured keys into 9478, noted on the configuration and logged once', async () => {
    const wrongSecret = 'wrong-secret-key-of-the-project-at-B';
    expect((await configure(wrongSecret)).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) {
      const err = await call({ method: 'GET', path: '/v2/receipt/0123456789abcdef01234567' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ errorCode: 'UPSTREAM_KEYS_REFUSED', code: 9478 });
    }
    const shown = await a.app.inject({ method: 'GET', url: `/admin/v1/projects/${atA.applicationId}/upstream`, headers: admin });
    expect(shown.json().last_error).toMatchObject({ code: 1204, error_code: 'APP_SK_NOT_MATCHED' });
    expect(a.logs().match(/refused the project keys/g)).toHaveLength(1);
    expect(a.logs()).not.toContain(wrongSecret);
    // a new configuration forgets the refusal
    expect((await configure(atB.secretKey)).json()).not.toHaveProperty('last_error');
  });

  it('maps an unreachable provider to GatewayUnavailableError (retryable), not to a merchant error', async () => {
    const closed = await buildTestApp();
    const closedUrl = await closed.app.listen({ host: '127.0.0.1', port: 0 });
    await closed.close();
    expect((await configure(atB.secretKey, closedUrl)).statusCode).toBe(200);
    const err = await call({ method: 'GET', path: '/v2/receipt/0123456789abcdef01234567' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayUnavailableError);
  });

  it('answers 9477 for a project without a provider', async () => {
    const local = await a.createProject();
    const err = await a.deps.services.upstream
      .call(local.applicationId, { method: 'GET', path: '/v2/receipt/x' })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ errorCode: 'UPSTREAM_NOT_CONFIGURED' });
  });
});

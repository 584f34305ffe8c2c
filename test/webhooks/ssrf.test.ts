// The SSRF guard of webhook URLs: at save (the URL rules, then every address the host resolves to) and
// at connect (the HTTP client's own DNS lookup), in production mode; sandbox mode adds loopback only.
// Resolvers are injected where DNS must answer something a test needs (a public address at save, a
// loopback one at connect: rebinding); `localhost` goes through the system resolver.
import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/webhooks/http-client.js';
import { createWebhookHttpClient } from '../../src/webhooks/http-client.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import {
  attemptRows,
  expectApiError,
  type Receiver,
  startReceiver,
  untilDelivery,
  webhookClient,
  webhookTables,
} from './fixtures.js';

const PUBLIC_V4 = '93.184.216.34';

/** Fixed answers for *.test names; everything else (localhost) through the system resolver. */
function resolverOf(answers: Record<string, readonly string[]>): Resolver {
  return async (hostname) => {
    const fixed = answers[hostname];
    if (fixed === undefined) return lookup(hostname, { all: true, verbatim: true });
    return fixed.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const saveTimeDns = resolverOf({
  'public.test': [PUBLIC_V4],
  'internal.test': ['10.1.2.3'],
  'mixed.test': [PUBLIC_V4, '192.168.0.7'],
  'metadata.test': ['169.254.169.254'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'compatible.test': ['::a9fe:a9fe'],
  'rebind.test': [PUBLIC_V4],
});

describe('production mode: the URL is refused at save', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ config: { sandbox: false }, webhookResolve: saveTimeDns });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses loopback, private, link-local, CGNAT, mapped, unspecified and http URLs with 3028, changing nothing', async () => {
    const project = await t.createProject();
    const api = webhookClient(t, project);
    expect((await api.put({ url: 'https://public.test/hook' })).status).toBe(200);
    const before = await webhookTables(t);
    for (const url of [
      'https://127.0.0.1/hook',
      'https://127.1.2.3:8443/hook',
      'https://10.0.0.1/hook',
      'https://172.16.5.4/hook',
      'https://192.168.1.1/hook',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[::ffff:a00:1]/hook',
      'https://[::7f00:1]/hook',
      'https://[::a9fe:a9fe]/latest/meta-data/',
      'https://[2002:7f00:1::1]/hook',
      'https://compatible.test/hook',
      'https://[::1]/hook',
      'https://[fe80::1]/hook',
      'https://[fd00::1]/hook',
      'https://100.64.0.1/hook',
      'https://0.0.0.0/hook',
      'https://224.0.0.1/hook',
      'https://0x7f.1/hook',
      'https://localhost/hook',
      'https://internal.test/hook',
      'https://mixed.test/hook',
      'https://metadata.test/hook',
      'https://mapped.test/hook',
      'https://does-not-exist.invalid/hook',
      `http://${PUBLIC_V4}/hook`,
      'http://public.test/hook',
      'http://127.0.0.1:8080/hook',
    ]) {
      const res = await api.put({ url });
      expectApiError(res, 400, 3028, 'WEBHOOK_URL_INVALID');
      expect((res.body.payload as { message: string }).message, url).toEqual(expect.any(String));
    }
    expect(await webhookTables(t)).toEqual(before);
  });

  it('accepts https to a global address, by name or literal', async () => {
    const api = webhookClient(t, await t.createProject());
    expect((await api.put({ url: `https://${PUBLIC_V4}/hook` })).status).toBe(200);
    expect((await api.put({ url: 'https://rebind.test/hook' })).body.url).toBe('https://rebind.test/hook');
  });
});

describe('sandbox mode adds loopback, nothing else', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ webhookResolve: saveTimeDns });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('accepts http to loopback and refuses private addresses', async () => {
    const api = webhookClient(t, await t.createProject());
    expect((await api.put({ url: 'http://127.0.0.1:9/hook' })).status).toBe(200);
    expect((await api.put({ url: 'http://localhost:9/hook' })).status).toBe(200);
    expectApiError(await api.put({ url: 'https://10.0.0.1/hook' }), 400, 3028, 'WEBHOOK_URL_INVALID');
    expectApiError(await api.put({ url: 'https://internal.test/hook' }), 400, 3028, 'WEBHOOK_URL_INVALID');
    expectApiError(await api.put({ url: 'http://public.test/hook' }), 400, 3028, 'WEBHOOK_URL_INVALID');
  });
});

describe('production mode: the address is checked again at connect (DNS rebinding)', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    t = await buildTestApp({
      config: { sandbox: false },
      withTemporal: true,
      webhookResolve: saveTimeDns,
      // by the time of the send the name points at loopback
      webhookActivities: { resolve: resolverOf({ 'rebind.test': ['127.0.0.1'] }) },
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('records a failed attempt with the reason and never connects', async () => {
    const api = webhookClient(t, await t.createProject());
    const port = new URL(receiver.url).port;
    expect((await api.put({ url: `https://rebind.test:${port}/hook`, retry_count: 1 })).status).toBe(200);
    const res = await api.test();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.delivery_id as string;
    await untilDelivery(t, id, 'failed', 1);
    const [attempt] = await attemptRows(t, id);
    expect(attempt!.http_status).toBeNull();
    expect(attempt!.error).toMatch(/^refused at connect: rebind\.test resolves to a refused address: .*127\.0\.0\.1.*loopback/);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('the client itself', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('resolves through the checking lookup: loopback refused in production, reached in sandbox mode', async () => {
    const resolve = resolverOf({ 'receiver.test': ['127.0.0.1'] });
    const url = `http://receiver.test:${new URL(receiver.url).port}/hook`;
    const production = createWebhookHttpClient({ policy: { sandbox: false }, resolve });
    const sandbox = createWebhookHttpClient({ policy: { sandbox: true }, resolve });
    try {
      const refused = await production.post(url, {}, '{}');
      expect(refused.httpStatus).toBeNull();
      expect(refused.error).toMatch(/^refused at connect/);
      expect(receiver.requests).toHaveLength(0);
      const literal = await production.post(receiver.url, {}, '{}');
      expect(literal.error).toMatch(/^refused before connecting: the address 127\.0\.0\.1 is in a blocked range \(loopback\)/);
      expect(receiver.requests).toHaveLength(0);

      receiver.answer({ status: 202, body: 'accepted' });
      const reached = await sandbox.post(url, { 'webhook-id': 'x' }, '{"a":1}');
      expect(reached).toMatchObject({ httpStatus: 202, responseBody: 'accepted', error: null });
      expect(receiver.requests).toHaveLength(1);
      expect(receiver.requests[0]!.body).toBe('{"a":1}');
    } finally {
      await production.close();
      await sandbox.close();
    }
  });
});

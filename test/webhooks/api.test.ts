// The messaging webhook API over HTTP with a real worker (embedded engine, time skipping), the real
// database and real receivers on loopback: configuration, secrets and their rotation, the signed test
// send verified with the `standardwebhooks` library, paging, and bad input that changes nothing.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import {
  attemptRows,
  expectApiError,
  type Receiver,
  startReceiver,
  untilDelivery,
  type WebhookClient,
  webhookClient,
  webhookTables,
} from './fixtures.js';

const ISO_KST = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00$/;

let t: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  t = await buildTestApp({ withTemporal: true });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

async function freshProject(): Promise<{ project: TestProject; api: WebhookClient }> {
  const project = await t.createProject();
  return { project, api: webhookClient(t, project) };
}

describe('GET / PUT {message_url}/alimtalk/webhook', () => {
  it('answers configured: false with the defaults before anything is saved, and creates nothing', async () => {
    const { api } = await freshProject();
    const before = await webhookTables(t);
    const res = await api.config();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      configured: false,
      events: [301, 302, 303, 304, 310, 311],
      enabled: true,
      consecutive_failures: 0,
      auto_disabled_at: null,
      retry_count: 10,
    });
    expect(await webhookTables(t)).toEqual(before);
  });

  it('first save issues a secret, shown masked to its first 12 characters', async () => {
    const { api } = await freshProject();
    const res = await api.put({ url: receiver.url });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.configured).toBe(true);
    expect(res.body.url).toBe(receiver.url);
    const secret = res.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{6}\*+$/);
    expect(secret.length).toBe('whsec_'.length + 44);
    // a second save keeps the secret
    const again = await api.put({ retry_count: 3 });
    expect(again.body.secret).toBe(secret);
    expect(again.body.retry_count).toBe(3);
    expect((await api.config()).body).toEqual(again.body);
  });

  it('drops unknown event codes, deduplicates, and treats an empty list as the default set', async () => {
    const { api } = await freshProject();
    expect((await api.put({ url: receiver.url, events: [311, 999, 300, 300, 1] })).body.events).toEqual([300, 311]);
    expect((await api.put({ events: [] })).body.events).toEqual([301, 302, 303, 304, 310, 311]);
    expect((await api.put({ events: [320] })).body.events).toEqual([320]);
  });

  it('refuses bad input with a catalog error and changes nothing', async () => {
    const { api } = await freshProject();
    await api.put({ url: receiver.url, retry_count: 5, events: [301] });
    const before = await webhookTables(t);
    const cases: [unknown, number, string][] = [
      [{ url: 'ftp://example.com/hook' }, 3028, 'WEBHOOK_URL_INVALID'],
      [{ url: 'not a url' }, 3028, 'WEBHOOK_URL_INVALID'],
      [{ url: '' }, 3028, 'WEBHOOK_URL_INVALID'],
      [{ url: 42 }, 3028, 'WEBHOOK_URL_INVALID'],
      [{ url: 'http://user:pw@127.0.0.1/hook' }, 3028, 'WEBHOOK_URL_INVALID'],
      [{ url: 'http://example.com/hook' }, 3028, 'WEBHOOK_URL_INVALID'],
      [{ url: `https://example.com/${'a'.repeat(2100)}` }, 3028, 'WEBHOOK_URL_INVALID'],
      [{ retry_count: 0 }, 9400, 'INVALID_REQUEST'],
      [{ retry_count: 21 }, 9400, 'INVALID_REQUEST'],
      [{ retry_count: -3 }, 9400, 'INVALID_REQUEST'],
      [{ retry_count: 1e12 }, 9400, 'INVALID_REQUEST'],
      [{ retry_count: 2.5 }, 9400, 'INVALID_REQUEST'],
      [{ retry_count: '5' }, 9400, 'INVALID_REQUEST'],
      [{ events: '301' }, 9400, 'INVALID_REQUEST'],
      [{ events: ['301'] }, 9400, 'INVALID_REQUEST'],
      [{ events: [301.5] }, 9400, 'INVALID_REQUEST'],
      [{ events: Array.from({ length: 65 }, () => 301) }, 9400, 'INVALID_REQUEST'],
      [{ enabled: 'yes' }, 9400, 'INVALID_REQUEST'],
      [{ enabled: null }, 9400, 'INVALID_REQUEST'],
      // a valid URL beside a bad field: nothing of it is saved
      [{ url: 'http://127.0.0.1:1/other', retry_count: 99 }, 9400, 'INVALID_REQUEST'],
    ];
    for (const [body, code, name] of cases) {
      expectApiError(await api.put(body), code === 3028 ? 400 : 400, code, name);
    }
    expectApiError(await api.send('PUT', '', [1, 2]), 400, 9400, 'INVALID_REQUEST');
    expect(await webhookTables(t)).toEqual(before);
  });

  it('needs the message_webhook scope', async () => {
    const other = await t.createProject({ name: 'no webhook scope', scopes: ['receipt'] });
    const res = await webhookClient(t, other).config();
    expectApiError(res, 401, 1222, 'API_SCOPE_INVALID');
  });
});

describe('POST {message_url}/alimtalk/webhook/secret', () => {
  it('works with no URL stored (configured: false) and shows the new secret once', async () => {
    const { api } = await freshProject();
    const res = await api.rotate();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.configured).toBe(false);
    const secret = res.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect((await api.config()).body.secret).toBe(`${secret.slice(0, 12)}${'*'.repeat(secret.length - 12)}`);
    const next = (await api.rotate()).body.secret as string;
    expect(next).not.toBe(secret);
  });

  it('stores secrets sealed, never in plain text', async () => {
    const { project, api } = await freshProject();
    const secret = (await api.rotate()).body.secret as string;
    const row = await t.deps.database.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('application_id', '=', project.applicationId)
      .executeTakeFirstOrThrow();
    expect(row.secret_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(row)).not.toContain(secret.slice(6));
  });
});

describe('POST {message_url}/alimtalk/webhook/test', () => {
  it('is 3029 without a stored URL, and queues nothing', async () => {
    const { api } = await freshProject();
    await api.rotate();
    const before = await webhookTables(t);
    expectApiError(await api.test(), 400, 3029, 'WEBHOOK_NOT_CONFIGURED');
    expect(await webhookTables(t)).toEqual(before);
  });

  it('sends the signed 301 test card; the standardwebhooks verifier accepts it; the delivery is done after 1 attempt', async () => {
    const { api } = await freshProject();
    const secret = (await api.rotate()).body.secret as string;
    await api.put({ url: receiver.url });
    receiver.answer({ status: 204 });
    const before = receiver.requests.length;
    const res = await api.test();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['delivery_id', 'queued', 'url']);
    expect(res.body.queued).toBe(true);
    expect(res.body.url).toBe(receiver.url);
    const deliveryId = res.body.delivery_id as string;
    await untilDelivery(t, deliveryId, 'done', 1);

    const received = receiver.requests.slice(before).filter((r) => r.headers['webhook-id'] === deliveryId);
    expect(received).toHaveLength(1);
    const req = received[0]!;
    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(Number(req.headers['webhook-timestamp'])).toBeGreaterThan(0);
    const payload = new Webhook(secret).verify(req.body, req.headers) as Record<string, unknown>;
    expect(payload.event).toBe('alimtalk.send.succeeded');
    expect(payload.event_code).toBe(301);
    expect(payload.tags).toEqual(['test']);
    expect(payload).not.toHaveProperty('created_at');
    // another secret does not verify it
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(req.body, req.headers)).toThrow();

    const list = await api.deliveries();
    const record = (list.body.list as Record<string, unknown>[])[0]!;
    expect(record).toMatchObject({
      delivery_id: deliveryId,
      event: 'alimtalk.send.succeeded',
      event_code: 301,
      url: receiver.url,
      status: 'done',
      retry_count: 1,
      max_retry: 10,
      tags: ['test'],
    });
    expect(record.created_at).toMatch(ISO_KST);
    const attempts = record.attempts as Record<string, unknown>[];
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt: 1, http_status: 204 });
    expect(attempts[0]!.attempted_at).toMatch(ISO_KST);
    expect(attempts[0]!.duration_ms).toEqual(expect.any(Number));
    const config = (await api.config()).body;
    expect(config.last_status).toBe(204);
    expect(config.last_sent_at).toMatch(ISO_KST);
    expect(config.consecutive_failures).toBe(0);
  });

  it('after a rotation both secrets sign for 24 hours; each verifies alone; then only the new one', async () => {
    const { api } = await freshProject();
    const oldSecret = (await api.rotate()).body.secret as string;
    await api.put({ url: receiver.url });
    receiver.answer({ status: 200 });
    const newSecret = (await api.rotate()).body.secret as string;

    const first = (await api.test()).body.delivery_id as string;
    await untilDelivery(t, first, 'done', 1);
    const req = receiver.requests.find((r) => r.headers['webhook-id'] === first)!;
    const signatures = req.headers['webhook-signature']!.split(' ');
    expect(signatures).toHaveLength(2);
    expect(new Webhook(newSecret).verify(req.body, req.headers)).toMatchObject({ event_code: 301 });
    expect(new Webhook(oldSecret).verify(req.body, req.headers)).toMatchObject({ event_code: 301 });
    expect(signatures[0]).toBe(
      new Webhook(newSecret).sign(first, new Date(Number(req.headers['webhook-timestamp']) * 1000), req.body),
    );

    await t.temporal!.skipTime(24 * 60 * 60 * 1000 + 60_000);
    const later = (await api.test()).body.delivery_id as string;
    await untilDelivery(t, later, 'done', 1);
    const laterReq = receiver.requests.find((r) => r.headers['webhook-id'] === later)!;
    const at = new Date(Number(laterReq.headers['webhook-timestamp']) * 1000);
    expect(laterReq.headers['webhook-signature']).toBe(new Webhook(newSecret).sign(later, at, laterReq.body));
  });

  it('keeps the body of every delivery sealed and only 2 KB of a response body', async () => {
    const { api } = await freshProject();
    await api.put({ url: receiver.url });
    receiver.answer({ status: 200, body: 'y'.repeat(10_000) });
    const id = (await api.test()).body.delivery_id as string;
    await untilDelivery(t, id, 'done', 1);
    const row = await t.deps.database.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('delivery_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.payload_sealed).toMatch(/^v1\./);
    expect(row.payload_sealed).not.toContain('alimtalk');
    const [attempt] = await attemptRows(t, id);
    expect(attempt!.response_body).toBe('y'.repeat(2048));
  });
});

describe('GET {message_url}/alimtalk/webhook/deliveries', () => {
  it('pages newest first; limit over 100 is served as 100; bad page or limit is 9400', async () => {
    const { api } = await freshProject();
    await api.put({ url: receiver.url });
    receiver.answer({ status: 200 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await api.test()).body.delivery_id as string);
      t.clock.advance(1000);
    }
    for (const id of ids) await untilDelivery(t, id, 'done');

    const all = await api.deliveries();
    expect(all.body).toMatchObject({ page: 1, per: 20, count: 3 });
    expect((all.body.list as { delivery_id: string }[]).map((d) => d.delivery_id)).toEqual([...ids].reverse());

    const second = await api.deliveries('?page=2&limit=2');
    expect(second.body).toMatchObject({ page: 2, per: 2, count: 3 });
    expect((second.body.list as { delivery_id: string }[]).map((d) => d.delivery_id)).toEqual([ids[0]]);

    const capped = await api.deliveries('?limit=1000');
    expect(capped.status).toBe(200);
    expect(capped.body.per).toBe(100);
    expect((await api.deliveries(`?limit=${'9'.repeat(40)}`)).body.per).toBe(100);
    expect((await api.deliveries('?page=9')).body).toMatchObject({ list: [], page: 9, count: 3 });

    for (const q of ['?page=0', '?page=-1', '?page=abc', '?limit=0', '?limit=1.5', '?limit=', '?page=1e3', '?page=99999999999']) {
      expectApiError(await api.deliveries(q), 400, 9400, 'INVALID_REQUEST');
    }
  });

  it('lists nothing for a project that never configured a webhook', async () => {
    const { api } = await freshProject();
    expect((await api.deliveries()).body).toEqual({ list: [], page: 1, per: 20, count: 0 });
  });
});

// The delivery engine end to end: the retry ladder under time skipping (the waits the dispatcher chose, read from
// the attempts' rows), Retry-After, 3xx, 410, auto-disable after 10 failed sends in a row and re-enable, test sends
// while disabled, manual retry and replay since a time, and receivers that hang or stream forever.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookActivities } from '../../src/activities/webhooks.js';
import { createDeliveryAttempts, createDeliveryDispatcher } from '../../src/webhooks/index.js';
import { MESSAGE_EVENTS, type OutboundEvent } from '../../src/webhooks/rules.js';
import { buildTestApp, type TestApp, type TestProject } from '../helpers/app.js';
import {
  attemptRows,
  deliveryRow,
  eventually,
  expectApiError,
  type Receiver,
  startReceiver,
  untilDelivery,
  type WebhookClient,
  webhookClient,
  webhookTables,
} from './fixtures.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

function messageEvent(code: 301 | 302, ref: string): OutboundEvent {
  const tags = [`rcpt_${ref}`, ref, 'TEMPLATE_A'];
  return {
    event: MESSAGE_EVENTS[code],
    eventCode: code,
    tags,
    payload: { event: MESSAGE_EVENTS[code], event_code: code, ref_id: ref, tags, created_at: '2026-01-01T00:00:00+09:00' },
  };
}

async function setup(t: TestApp): Promise<{ project: TestProject; api: WebhookClient; receiver: Receiver }> {
  const project = await t.createProject();
  const receiver = await startReceiver();
  const api = webhookClient(t, project);
  const res = await api.put({ url: receiver.url });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { project, api, receiver };
}

/** The waits the dispatcher chose after each failed attempt that left the delivery waiting, in milliseconds. */
async function retryWaitsMs(t: TestApp, deliveryId: string): Promise<number[]> {
  return (await attemptRows(t, deliveryId)).flatMap((a) => (a.retry_in_ms === null ? [] : [Number(a.retry_in_ms)]));
}

/** No delivery:<id> workflow was started: deliveries are the dispatcher's rows. */
async function expectNoWorkflow(t: TestApp, deliveryId: string): Promise<void> {
  await expect(t.temporal!.client.workflow.getHandle(`delivery:${deliveryId}`).describe()).rejects.toThrow(/not found/i);
}

const within20 = (actual: number | undefined, rung: number) => {
  expect(actual).toBeGreaterThanOrEqual(rung * 0.8 - 1);
  expect(actual).toBeLessThanOrEqual(rung * 1.2 + 1);
};

describe('delivery ladder', () => {
  let t: TestApp;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await t?.close();
  });

  it('retries on the ladder with ±20 % jitter, counts attempts in retry_count, and fails at max_retry', async () => {
    const { project, api, receiver } = await setup(t);
    receivers.push(receiver);
    await api.put({ retry_count: 5 });
    receiver.answer({ status: 500, body: 'down' });
    const row = await t.app.deps.services.webhooks.deliver(messageEvent(302, 'ladder'), {
      kind: 'message',
      applicationId: project.applicationId,
    });
    const id = row!.delivery_id;
    expect(row!.max_retry).toBe(5);
    await untilDelivery(t, id, 'ready', 1);
    for (const [skip, attempts] of [
      [6 * SECOND, 2],
      [6 * MINUTE, 3],
      [36 * MINUTE, 4],
    ] as const) {
      await t.temporal!.skipTime(skip);
      await untilDelivery(t, id, 'ready', attempts);
    }
    await t.temporal!.skipTime(2.4 * HOUR);
    await untilDelivery(t, id, 'failed', 5);

    const delays = await retryWaitsMs(t, id);
    expect(delays).toHaveLength(4);
    within20(delays[0], 5 * SECOND);
    within20(delays[1], 5 * MINUTE);
    within20(delays[2], 30 * MINUTE);
    within20(delays[3], 2 * HOUR);
    const attempts = await attemptRows(t, id);
    expect(attempts.map((a) => [a.attempt, a.http_status, a.response_body])).toEqual(
      [1, 2, 3, 4, 5].map((n) => [n, 500, 'down']),
    );
    const ids = new Set(receiver.requests.map((r) => r.headers['webhook-id']));
    expect(ids).toEqual(new Set([id]));
    expect(receiver.requests).toHaveLength(5);
    const record = ((await api.deliveries()).body.list as Record<string, unknown>[])[0]!;
    expect(record).toMatchObject({ delivery_id: id, status: 'failed', retry_count: 5, max_retry: 5, event_code: 302 });
    expect(record.tags).toEqual(['rcpt_ladder', 'ladder', 'TEMPLATE_A']);
    expect((await api.config()).body.consecutive_failures).toBe(5);
    await expectNoWorkflow(t, id);
  });

  it('honours Retry-After, capped at twice the next rung, and a success ends the delivery as done', async () => {
    const { project, api, receiver } = await setup(t);
    receivers.push(receiver);
    receiver.answer((n) =>
      n === 1
        ? { status: 503, headers: { 'retry-after': '1' } }
        : n === 2
          ? { status: 429, headers: { 'retry-after': '3600' } }
          : { status: 200 },
    );
    const id = (await t.app.deps.services.webhooks.deliver(messageEvent(301, 'ra'), {
      kind: 'message',
      applicationId: project.applicationId,
    }))!.delivery_id;
    await untilDelivery(t, id, 'ready', 1);
    await t.temporal!.skipTime(1 * SECOND + 100);
    await untilDelivery(t, id, 'ready', 2);
    await t.temporal!.skipTime(10 * MINUTE + SECOND);
    await untilDelivery(t, id, 'done', 3);
    expect(await retryWaitsMs(t, id)).toEqual([1000, 10 * MINUTE]);
    const config = (await api.config()).body;
    expect(config.consecutive_failures).toBe(0);
    expect(config.last_status).toBe(200);
  });

  it('an attempt activity run again for the same attempt number sends nothing and records nothing twice', async () => {
    const { project, receiver } = await setup(t);
    receivers.push(receiver);
    receiver.answer({ status: 500 });
    const id = (await t.app.deps.services.webhooks.deliver(messageEvent(302, 'retried-activity'), {
      kind: 'message',
      applicationId: project.applicationId,
    }))!.delivery_id;
    await untilDelivery(t, id, 'ready', 1);
    const tables = await webhookTables(t);
    // a dispatcher whose lease lapsed mid attempt sends it again, and its record of the same number changes nothing
    const attempts = createDeliveryAttempts({ store: t.app.deps.stores.webhooks, options: { sandbox: true } });
    const row = (await deliveryRow(t, id))!;
    const endpoint = (await t.app.deps.stores.webhooks.findEndpointById(row.endpoint_id))!;
    const again = await attempts.send({
      delivery: row,
      secrets: attempts.signingSecrets(endpoint, new Date())!,
      attempt: 1,
      lastAttempt: 10,
      nextAttempt: () => ({ at: new Date(0), inMs: 0 }),
    });
    expect(again.state).toBe('ready');
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([id, id]);
    expect(await webhookTables(t)).toEqual(tables);
    // an earlier release's delivery workflow retried for the row: not its to send (the dispatcher owns it)
    const activities = createWebhookActivities({ webhooks: t.app.deps.stores.webhooks, options: { sandbox: true } });
    const outcome = await activities.attemptDelivery({ deliveryId: id, attempt: 2, lastAttempt: 10 });
    expect(outcome.state).toBe('failed');
    expect(receiver.requests).toHaveLength(2);
    expect(await webhookTables(t)).toEqual(tables);
  });

  it('treats a 3xx as a failure and never follows it', async () => {
    const { project, receiver } = await setup(t);
    receivers.push(receiver);
    receiver.answer((n) => (n === 1 ? { status: 302, headers: { location: `${receiver.url}/elsewhere` } } : { status: 200 }));
    const id = (await t.app.deps.services.webhooks.deliver(messageEvent(301, 'redirect'), {
      kind: 'message',
      applicationId: project.applicationId,
    }))!.delivery_id;
    await untilDelivery(t, id, 'ready', 1);
    const [attempt] = await attemptRows(t, id);
    expect(attempt).toMatchObject({ http_status: 302, error: 'redirects are not followed' });
    expect(receiver.requests.map((r) => r.url)).toEqual(['/hook']);
  });

  it('410 Gone disables the webhook at once and stops its waiting deliveries as failed', async () => {
    const { project, api, receiver } = await setup(t);
    receivers.push(receiver);
    receiver.answer({ status: 500 });
    const ref = { kind: 'message' as const, applicationId: project.applicationId };
    const waiting = (await t.app.deps.services.webhooks.deliver(messageEvent(302, 'waiting'), ref))!.delivery_id;
    await untilDelivery(t, waiting, 'ready', 1);
    receiver.answer({ status: 410 });
    const gone = (await t.app.deps.services.webhooks.deliver(messageEvent(302, 'gone'), ref))!.delivery_id;
    await untilDelivery(t, gone, 'failed', 1);
    const config = (await api.config()).body;
    expect(config.enabled).toBe(false);
    expect(config.auto_disabled_at).toMatch(/\+09:00$/);
    expect(config.last_status).toBe(410);
    expect((await deliveryRow(t, waiting))!.status).toBe('failed');
    // past its next rung, the stopped delivery is not sent again
    await t.temporal!.skipTime(10 * SECOND);
    await t.app.deps.services.webhookDispatcher.runDue();
    expect((await attemptRows(t, waiting)).length).toBe(1);
    // disabled: a new event is not queued
    expect(await t.app.deps.services.webhooks.deliver(messageEvent(302, 'after'), ref)).toBeUndefined();
  });
});

describe('auto-disable, re-enable, test sends while disabled, manual retry and replay', () => {
  let t: TestApp;
  let receiver: Receiver;
  let project: TestProject;
  let api: WebhookClient;
  const failedIds: string[] = [];
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    ({ project, api, receiver } = await setup(t));
    await api.put({ retry_count: 20, events: [302] });
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });
  const ref = () => ({ kind: 'message' as const, applicationId: project.applicationId });

  it('disables the webhook after 10 failed sends in a row and stops every waiting delivery', async () => {
    receiver.answer({ status: 500 });
    for (let i = 0; i < 10; i++) {
      const row = await t.app.deps.services.webhooks.deliver(messageEvent(302, `burst-${i}`), ref());
      expect(row, `delivery ${i} queued`).toBeDefined();
      failedIds.push(row!.delivery_id);
      // one at a time: the 10th failure is the one that disables
      await eventually(async () => ((await attemptRows(t, row!.delivery_id)).length === 1 ? true : undefined), 'attempt 1');
    }
    for (const id of failedIds) await untilDelivery(t, id, 'failed', 1);
    const config = (await api.config()).body;
    expect(config).toMatchObject({ enabled: false, consecutive_failures: 10, last_status: 500 });
    expect(config.auto_disabled_at).toMatch(/\+09:00$/);
    // past their next rung, none is sent again
    const sent = receiver.requests.length;
    await t.temporal!.skipTime(10 * SECOND);
    await t.app.deps.services.webhookDispatcher.runDue();
    expect(receiver.requests).toHaveLength(sent);
    expect(await t.app.deps.services.webhooks.deliver(messageEvent(302, 'while-disabled'), ref())).toBeUndefined();
  });

  it('still sends the test event while disabled; a 2xx resets the counter but does not re-enable', async () => {
    receiver.answer({ status: 200 });
    const res = await api.test();
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await untilDelivery(t, res.body.delivery_id as string, 'done', 1);
    const config = (await api.config()).body;
    expect(config).toMatchObject({ enabled: false, consecutive_failures: 0, last_status: 200 });
    expect(config.auto_disabled_at).not.toBeNull();
  });

  it('PUT enabled: true re-enables it and clears the counter; events flow again', async () => {
    const res = await api.put({ enabled: true });
    expect(res.body).toMatchObject({ enabled: true, consecutive_failures: 0, auto_disabled_at: null });
    const row = await t.app.deps.services.webhooks.deliver(messageEvent(302, 'back'), ref());
    await untilDelivery(t, row!.delivery_id, 'done', 1);
    // not subscribed to 301: nothing queued
    expect(await t.app.deps.services.webhooks.deliver(messageEvent(301, 'unsubscribed'), ref())).toBeUndefined();
  });

  it('retries one failed delivery now under the same webhook-id; refuses the others with catalog errors', async () => {
    const id = failedIds[0]!;
    const before = receiver.requests.length;
    const res = await api.retry(id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ delivery_id: id, url: receiver.url, queued: true });
    await untilDelivery(t, id, 'done', 2);
    const again = receiver.requests.slice(before);
    expect(again.map((r) => r.headers['webhook-id'])).toEqual([id]);
    expect((await attemptRows(t, id)).map((a) => a.http_status)).toEqual([500, 200]);

    const unchanged = await webhookTables(t);
    expectApiError(await api.retry(id), 409, 9427, 'WEBHOOK_DELIVERY_NOT_FAILED');
    expectApiError(await api.retry('0123456789abcdef01234567'), 404, 9428, 'WEBHOOK_DELIVERY_NOT_FOUND');
    expectApiError(await api.retry('x'.repeat(150)), 404, 9428, 'WEBHOOK_DELIVERY_NOT_FOUND');
    const stranger = webhookClient(t, await t.createProject({ name: 'stranger' }));
    expectApiError(await stranger.retry(failedIds[1]!), 403, 1225, 'APP_KEY_CHAIN_SESSION_INVALID');
    for (const body of [{}, { since: 'yesterday' }, { since: '2026-01-01' }, { since: 42 }, { since: '2026-13-45T00:00:00Z' }]) {
      expectApiError(await api.replay(body), 400, 9400, 'INVALID_REQUEST');
    }
    expect(await webhookTables(t)).toEqual(unchanged);
  });

  it('replays every failed delivery since a time, each under its own webhook-id, once', async () => {
    const before = receiver.requests.length;
    const future = new Date(t.clock.now().getTime() + HOUR).toISOString();
    expect((await api.replay({ since: future })).body).toMatchObject({ queued: 0, delivery_ids: [] });

    const res = await api.replay({ since: new Date(t.clock.now().getTime() - 6 * HOUR).toISOString() });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const replayed = res.body.delivery_ids as string[];
    expect(new Set(replayed)).toEqual(new Set(failedIds.slice(1)));
    for (const id of replayed) await untilDelivery(t, id, 'done', 2);
    const seen = receiver.requests.slice(before).map((r) => r.headers['webhook-id']);
    expect(seen.sort()).toEqual([...replayed].sort());
    // nothing failed is left to replay
    expect((await api.replay({ since: '2000-01-01T00:00:00Z' })).body).toMatchObject({ queued: 0 });
  });

  it('PUT enabled: false stops waiting deliveries as failed at once', async () => {
    receiver.answer({ status: 500 });
    const id = (await t.app.deps.services.webhooks.deliver(messageEvent(302, 'paused'), ref()))!.delivery_id;
    await untilDelivery(t, id, 'ready', 1);
    expect((await api.put({ enabled: false })).body.enabled).toBe(false);
    expect((await deliveryRow(t, id))!.status).toBe('failed');
    await t.temporal!.skipTime(10 * SECOND);
    await t.app.deps.services.webhookDispatcher.runDue();
    expect((await attemptRows(t, id)).length).toBe(1);
    expect((await api.config()).body.auto_disabled_at).toBeNull();
  });
});

describe('receivers that hang or never stop talking', () => {
  let t: TestApp;
  let receiver: Receiver;
  let project: TestProject;
  beforeAll(async () => {
    // a short attempt timeout keeps the test quick; production's is 15 s
    t = await buildTestApp({ withTemporal: true, webhookActivities: { attemptTimeoutMs: 1000 } });
    ({ project, receiver } = await setup(t));
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('a held connection costs one attempt: doing while in flight, then ready with the timeout recorded', async () => {
    receiver.answer({ status: 200, hang: true });
    const id = (await t.app.deps.services.webhooks.deliver(messageEvent(301, 'hang'), {
      kind: 'message',
      applicationId: project.applicationId,
    }))!.delivery_id;
    await untilDelivery(t, id, 'doing');
    await untilDelivery(t, id, 'ready', 1);
    const [attempt] = await attemptRows(t, id);
    expect(attempt!.http_status).toBeNull();
    expect(attempt!.error).toBe('no complete answer within 1 s');
  });

  it('an endless body is read only up to 2 KB: the attempt ends at once with its status', async () => {
    receiver.answer({ status: 500, endless: true });
    const id = (await t.app.deps.services.webhooks.deliver(messageEvent(301, 'endless'), {
      kind: 'message',
      applicationId: project.applicationId,
    }))!.delivery_id;
    await untilDelivery(t, id, 'ready', 1);
    const [attempt] = await attemptRows(t, id);
    expect(attempt!.http_status).toBe(500);
    expect(attempt!.response_body).toHaveLength(2048);
    expect(attempt!.duration_ms).toBeLessThan(1000);
  });
});

describe('dispatchers of several workers on one database', () => {
  let t: TestApp;
  let receiver: Receiver;
  let project: TestProject;
  beforeAll(async () => {
    // no engine, and the app's own dispatcher not started: as an API process, it only saves the rows
    t = await buildTestApp();
    ({ project, receiver } = await setup(t));
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('claim each due delivery once (SKIP LOCKED): every event sent once, each attempt recorded once', async () => {
    const ref = { kind: 'message' as const, applicationId: project.applicationId };
    const ids: string[] = [];
    for (let i = 0; i < 150; i++)
      ids.push((await t.app.deps.services.webhooks.deliver(messageEvent(301, `many-${i}`), ref))!.delivery_id);
    expect(receiver.requests).toHaveLength(0);
    const worker = () =>
      createDeliveryDispatcher({
        store: t.app.deps.stores.webhooks,
        attempts: { sandbox: true },
        businessClock: () => new Date(),
      });
    const [a, b, c] = [worker(), worker(), worker()];
    const sent = await Promise.all([a.runDue(), b.runDue(), c.runDue()]);
    expect(sent.reduce((x, y) => x + y, 0)).toBe(ids.length);
    expect(receiver.requests.map((r) => r.headers['webhook-id']).sort()).toEqual([...ids].sort());
    for (const id of ids.slice(0, 10)) expect((await attemptRows(t, id)).map((r) => r.attempt)).toEqual([1]);
    const rows = await t.deps.database.db.selectFrom('webhook_deliveries').select(['status', 'claimed_until']).execute();
    expect(rows.every((r) => r.status === 'done' && r.claimed_until === null)).toBe(true);
    // nothing is due any more
    expect(await a.runDue()).toBe(0);
  });
});

// The producers of the one delivery engine, over HTTP with real receivers on loopback: sandbox messages
// (events 300/301/302/304 to the messaging webhook), the project's webhook_url with its own secret (admin
// API: issued once, rotated with 24 h dual signing), a charge's feedback_url (the receipt, as JSON or a
// form body, signed with the project's secret, outside the endpoint's health), and the adoption of an earlier
// release's deliveries left without a workflow run.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';
import { PROJECT_EVENTS, type OutboundEvent } from '../../src/webhooks/rules.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import { keyInClient } from '../payments/key-in-fixtures.js';
import {
  deliveryRow,
  eventually,
  expectApiError,
  type ReceivedRequest,
  type Receiver,
  startReceiver,
  untilDelivery,
  webhookClient,
} from './fixtures.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

/** True when one of the request's signatures is `secret`'s over its exact body. */
function signedWith(secret: string, req: ReceivedRequest): boolean {
  const at = new Date(Number(req.headers['webhook-timestamp']) * 1000);
  const expected = new Webhook(secret).sign(req.headers['webhook-id']!, at, req.body);
  return req.headers['webhook-signature']!.split(' ').includes(expected);
}

async function sendMessage(t: TestApp, project: TestProject, body: unknown, headers: Record<string, string> = {}) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/sandbox/v1/messages',
    headers: { authorization: project.basicAuth, ...headers },
    payload: body as object,
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
}

const requestsWithId = (receiver: Receiver, id: string) => receiver.requests.filter((r) => r.headers['webhook-id'] === id);

describe('sandbox messages produce message events', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    receiver = await startReceiver();
  }, 120_000);
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('each outcome sends 300 then its own event, tagged [receipt_id, ref_id, template_code] and signed', async () => {
    const project = await t.createProject();
    const api = webhookClient(t, project);
    const saved = await api.put({ url: receiver.url, events: [300, 301, 302, 304] });
    expect(saved.status).toBe(200);
    const secret = (await api.rotate()).body.secret as string;

    for (const [outcome, result] of [
      ['delivered', 301],
      ['failed', 302],
      ['fallback_sms', 304],
    ] as const) {
      const res = await sendMessage(t, project, {
        phone: '01012345678',
        template_code: 'WELCOME_1',
        ref_id: `ref-${outcome}`,
        outcome,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const receiptId = res.body.receipt_id as string;
      expect(res.body).toMatchObject({ ref_id: `ref-${outcome}`, template_code: 'WELCOME_1', outcome });
      const events = res.body.events as { event_code: number; delivery_id: string | null }[];
      expect(events.map((e) => e.event_code)).toEqual([300, result]);
      for (const e of events) {
        expect(e.delivery_id).toBeTruthy();
        await untilDelivery(t, e.delivery_id!, 'done', 1);
        const [req] = requestsWithId(receiver, e.delivery_id!);
        expect(req, `the receiver got ${e.delivery_id}`).toBeDefined();
        const payload = new Webhook(secret).verify(req!.body, req!.headers) as Record<string, unknown>;
        expect(payload).toMatchObject({
          event_code: e.event_code,
          receipt_id: receiptId,
          ref_id: `ref-${outcome}`,
          template_code: 'WELCOME_1',
          tags: [receiptId, `ref-${outcome}`, 'WELCOME_1'],
        });
        expect(payload.created_at).toEqual(expect.any(String));
        const row = await deliveryRow(t, e.delivery_id!);
        expect(row?.tags).toEqual([receiptId, `ref-${outcome}`, 'WELCOME_1']);
        expect(row?.event_code).toBe(e.event_code);
      }
    }
    // the phone is sealed in the message row
    const stored = await t.deps.database.db
      .selectFrom('messages')
      .selectAll()
      .where('application_id', '=', project.applicationId)
      .execute();
    expect(stored).toHaveLength(3);
    for (const m of stored) expect(m.phone_sealed).not.toContain('01012345678');
  });

  it('only subscribed events are sent: the default set has no 300; a webhook without a URL gets nothing', async () => {
    const project = await t.createProject();
    const api = webhookClient(t, project);
    const none = await sendMessage(t, project, { phone: '01012345678', template_code: 'T1' });
    expect(none.status).toBe(200);
    expect(none.body.events).toEqual([
      { event: 'alimtalk.send.accepted', event_code: 300, delivery_id: null },
      { event: 'alimtalk.send.succeeded', event_code: 301, delivery_id: null },
    ]);
    expect((await api.put({ url: receiver.url })).status).toBe(200);
    const res = await sendMessage(t, project, { phone: '01012345678', template_code: 'T1', outcome: 'failed' });
    const events = res.body.events as { event_code: number; delivery_id: string | null }[];
    expect(events[0]).toMatchObject({ event_code: 300, delivery_id: null });
    expect(events[1]!.event_code).toBe(302);
    await untilDelivery(t, events[1]!.delivery_id!, 'done', 1);
    // no ref_id: the tag is an empty string, the payload has none
    const payload = JSON.parse(requestsWithId(receiver, events[1]!.delivery_id!)[0]!.body) as Record<string, unknown>;
    expect(payload.tags).toEqual([res.body.receipt_id, '', 'T1']);
    expect(payload).not.toHaveProperty('ref_id');
  });

  it('bad input is a catalog error and stores nothing; an Idempotency-Key replays the first answer', async () => {
    const project = await t.createProject();
    await webhookClient(t, project).put({ url: receiver.url });
    const count = async () =>
      Number(
        (
          await t.deps.database.db
            .selectFrom('messages')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('application_id', '=', project.applicationId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    for (const body of [
      {},
      { phone: '01012345678' },
      { template_code: 'T1' },
      { phone: '1234', template_code: 'T1' },
      { phone: 1012345678, template_code: 'T1' },
      { phone: '01012345678', template_code: '' },
      { phone: '01012345678', template_code: 'has space' },
      { phone: '01012345678', template_code: 'T1', outcome: 'lost' },
      { phone: '01012345678', template_code: 'T1', ref_id: 'x'.repeat(101) },
      { phone: '01012345678', template_code: 'T1', ref_id: 7 },
      [],
    ]) {
      expectApiError(await sendMessage(t, project, body), 400, 9400, 'INVALID_REQUEST');
    }
    expect(await count()).toBe(0);

    const key = { 'idempotency-key': `msg-${newId()}` };
    const first = await sendMessage(t, project, { phone: '01012345678', template_code: 'T1' }, key);
    const again = await sendMessage(t, project, { phone: '01012345678', template_code: 'T1' }, key);
    expect(first.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await count()).toBe(1);
  });
});

describe('the project webhook_url and a charge feedback_url', () => {
  let t: TestApp;
  let hook: Receiver;
  let feedback: Receiver;
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    hook = await startReceiver('/payments');
    feedback = await startReceiver('/feedback');
  }, 120_000);
  afterAll(async () => {
    await hook?.close();
    await feedback?.close();
    await t?.close();
  });

  const admin = (method: 'POST' | 'PATCH', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: ADMIN, ...(payload ? { payload } : {}) });

  it('the secret is returned once at creation, signs deliverToProject, and a rotation signs with both for 24 hours', async () => {
    const created = await admin('POST', '/admin/v1/projects', { name: 'hooked', webhook_url: hook.url });
    expect(created.statusCode).toBe(201);
    const body = created.json() as Record<string, string>;
    const secret = body.webhook_secret!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const shown = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${body.application_id}`, headers: ADMIN });
    expect(JSON.stringify(shown.json())).not.toContain(secret.slice(6, 20));
    const row = await t.deps.database.db.selectFrom('webhook_endpoints').selectAll().where('kind', '=', 'project').execute();
    expect(JSON.stringify(row)).not.toContain(secret.slice(6, 20));

    const event: OutboundEvent = { event: PROJECT_EVENTS[200], eventCode: 200, tags: ['r1'], payload: { escrow_webhook: true } };
    const delivery = await t.app.deps.services.webhooks.deliverToProject(body.application_id!, event);
    await untilDelivery(t, delivery!.delivery_id, 'done', 1);
    const [req] = requestsWithId(hook, delivery!.delivery_id);
    expect(new Webhook(secret).verify(req!.body, req!.headers)).toEqual({ escrow_webhook: true });

    const rotated = await admin('POST', `/admin/v1/projects/${body.application_id}/webhook/secret`);
    expect(rotated.statusCode).toBe(200);
    const next = rotated.json() as Record<string, string>;
    expect(next.webhook_secret).not.toBe(secret);
    expect(next.previous_webhook_secret_expires_at).toEqual(expect.any(String));
    const second = await t.app.deps.services.webhooks.deliverToProject(body.application_id!, event);
    await untilDelivery(t, second!.delivery_id, 'done', 1);
    const [req2] = requestsWithId(hook, second!.delivery_id);
    expect(req2!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(signedWith(next.webhook_secret!, req2!)).toBe(true);
    expect(signedWith(secret, req2!)).toBe(true);

    // a PATCH that clears the URL stops project deliveries; setting one again does not show the secret again
    await admin('PATCH', `/admin/v1/projects/${body.application_id}`, { webhook_url: null });
    expect(await t.app.deps.services.webhooks.deliverToProject(body.application_id!, event)).toBeUndefined();
    const again = await admin('PATCH', `/admin/v1/projects/${body.application_id}`, { webhook_url: hook.url });
    expect(again.json()).not.toHaveProperty('webhook_secret');
    expect(await admin('POST', '/admin/v1/projects/0123456789abcdef01234567/webhook/secret')).toMatchObject({ statusCode: 404 });
  });

  it('a first webhook_url set by PATCH returns its secret once; URLs outside the rules are 3028 and change nothing', async () => {
    const created = (await admin('POST', '/admin/v1/projects', { name: 'later' })).json() as Record<string, string>;
    expect(created).not.toHaveProperty('webhook_secret');
    const patched = await admin('PATCH', `/admin/v1/projects/${created.application_id}`, { webhook_url: hook.url });
    expect((patched.json() as Record<string, string>).webhook_secret).toMatch(/^whsec_/);
    // sandbox mode: http only to loopback
    const refused = await admin('PATCH', `/admin/v1/projects/${created.application_id}`, { webhook_url: 'http://example.com/h' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 3028, error_code: 'WEBHOOK_URL_INVALID' });
    const project = await t.app.deps.services.projects.get(created.application_id!);
    expect(project.webhook_url).toBe(hook.url);
  });

  it('feedback_url gets the receipt as JSON or a form body, signed with the project secret, outside the endpoint health', async () => {
    const project = await t.createProject({ webhook_url: hook.url });
    const secret = (await t.app.deps.services.projects.rotateWebhookSecret(project.applicationId)).webhook_secret;
    const billing = keyInClient(t, project);
    const key = await billing.issuedKey();

    const json = await billing.charge(key, { feedback_url: feedback.url });
    expect(json.status, JSON.stringify(json.body)).toBe(200);
    const jsonReq = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(json.body.receipt_id as string)),
      'the JSON feedback',
    );
    expect(jsonReq.headers['content-type']).toBe('application/json');
    expect(new Webhook(secret).verify(jsonReq.body, jsonReq.headers)).toMatchObject({
      receipt_id: json.body.receipt_id,
      order_id: json.body.order_id,
      price: 1000,
      status: 1,
    });

    const form = await billing.charge(key, { feedback_url: feedback.url, content_type: 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(200);
    const formReq = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(`receipt_id=${form.body.receipt_id as string}`)),
      'the form feedback',
    );
    expect(formReq.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(signedWith(secret, formReq)).toBe(true);
    const fields = new URLSearchParams(formReq.body);
    expect(fields.get('order_id')).toBe(form.body.order_id);
    expect(fields.get('price')).toBe('1000');
    expect(JSON.parse(fields.get('card_data')!)).toEqual(form.body.card_data);
    await untilDelivery(t, formReq.headers['webhook-id']!, 'done', 1);

    // a failing feedback_url is retried on the ladder but never counts against the project's webhook_url
    feedback.answer({ status: 500 });
    const failing = await billing.charge(key, { feedback_url: feedback.url });
    const failingReq = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(failing.body.receipt_id as string)),
      'the failing feedback',
    );
    const failingId = failingReq.headers['webhook-id']!;
    await untilDelivery(t, failingId, 'ready', 1);
    const endpoint = await t.deps.database.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('application_id', '=', project.applicationId)
      .where('kind', '=', 'project')
      .executeTakeFirstOrThrow();
    expect(endpoint.consecutive_failures).toBe(0);
    expect(endpoint.last_status).toBeNull();
    expect(endpoint.enabled).toBe(true);
    feedback.answer({ status: 200 });
    await t.temporal!.skipTime(10_000);
    await untilDelivery(t, failingId, 'done', 2);
  });

  it('a project without a webhook_url still signs feedback (its secret is issued then, shown by the rotation)', async () => {
    feedback.answer({ status: 200 });
    const project = await t.createProject();
    const billing = keyInClient(t, project);
    const res = await billing.charge(await billing.issuedKey(), { feedback_url: feedback.url });
    const req = await eventually(
      async () => feedback.requests.find((r) => r.body.includes(res.body.receipt_id as string)),
      'the feedback',
    );
    await untilDelivery(t, req.headers['webhook-id']!, 'done', 1);
    const { webhook_secret } = await t.app.deps.services.projects.rotateWebhookSecret(project.applicationId);
    // the rotation's answer is the new secret; the one that signed is the previous one, signing beside it
    const previous = t.app.deps.stores.webhooks.signingSecrets(
      (await t.app.deps.stores.webhooks.findEndpoint(project.applicationId, 'project'))!,
      t.clock.now(),
    )?.previous;
    expect(webhook_secret).toMatch(/^whsec_/);
    expect(signedWith(previous!, req)).toBe(true);
  });

  it('a bad feedback_url or content_type is 9400 and charges nothing', async () => {
    const project = await t.createProject();
    const billing = keyInClient(t, project);
    const key = await billing.issuedKey();
    for (const extra of [
      { feedback_url: 'ftp://x.example/f' },
      { feedback_url: 'http://example.com/f' },
      { feedback_url: 42 },
      { feedback_url: feedback.url, content_type: 'text/plain' },
    ]) {
      expectApiError(await billing.charge(key, extra), 400, 9400, 'INVALID_REQUEST');
    }
    const receipts = await t.deps.database.db
      .selectFrom('receipts')
      .selectAll()
      .where('application_id', '=', project.applicationId)
      .where('order_id', 'like', 'order-%')
      .execute();
    expect(receipts).toHaveLength(0);
  });
});

describe("an earlier release's deliveries left without a workflow run are adopted by the dispatcher", () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await buildTestApp({ withTemporal: true });
    receiver = await startReceiver();
  }, 120_000);
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  /** A row as an earlier release saved it: its `delivery:<id>` workflow owns it (no next_attempt_at). */
  const legacyRow = async (project: TestProject, id: string, createdAt: Date) => {
    const store = t.app.deps.stores.webhooks;
    const endpoint = (await store.findEndpoint(project.applicationId, 'message'))!;
    await store.createDelivery({
      deliveryId: id,
      endpoint,
      event: 'alimtalk.send.succeeded',
      eventCode: 301,
      tags: ['r', 'f', 't'],
      body: JSON.stringify({ event_code: 301, id }),
      sendsWhenDisabled: false,
      createdAt,
      firstAttemptAt: createdAt,
    });
    await t.deps.database.db
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: null, last_attempt: null })
      .where('delivery_id', '=', id)
      .execute();
    return (await deliveryRow(t, id))!;
  };
  const dispatcher = () => t.app.deps.services.webhookDispatcher;

  it('a ready row with no run, and a doing row whose run ended, are adopted once and end done', async () => {
    const project = await t.createProject();
    await webhookClient(t, project).put({ url: receiver.url });
    const store = t.app.deps.stores.webhooks;
    const old = new Date(t.clock.now().getTime() - 5 * 60_000);
    // the API died between saving and starting
    const orphan = await legacyRow(project, `orphan_${newId()}`, old);
    // an attempt was in flight when its run ended (the row still says doing, nothing recorded)
    const stuck = await legacyRow(project, `stuck_${newId()}`, old);
    expect(await store.markDoing(stuck.delivery_id)).toBe(true);
    await t.deps.database.db
      .updateTable('webhook_deliveries')
      .set({ updated_at: new Date(t.clock.now().getTime() - 60 * 60_000) })
      .where('delivery_id', '=', stuck.delivery_id)
      .execute();
    // a fresh ready row is not touched (its run may still be starting)
    const fresh = await legacyRow(project, `fresh_${newId()}`, t.clock.now());
    // the dispatcher never claims a row a workflow owns
    await dispatcher().runDue();
    expect((await deliveryRow(t, orphan.delivery_id))?.status).toBe('ready');

    expect(await dispatcher().adoptOrphans()).toBe(2);
    await dispatcher().runDue();
    await untilDelivery(t, orphan.delivery_id, 'done', 1);
    await untilDelivery(t, stuck.delivery_id, 'done', 1);
    expect((await deliveryRow(t, fresh.delivery_id))?.status).toBe('ready');
    // a second sweep finds nothing left to adopt, so nothing is sent twice
    expect(await dispatcher().adoptOrphans()).toBe(0);
    expect(requestsWithId(receiver, orphan.delivery_id)).toHaveLength(1);
    expect(requestsWithId(receiver, stuck.delivery_id)).toHaveLength(1);
  });

  it('under a clock moved a month ahead (the sandbox clock), a new orphan is still adopted and an attempt in progress is not', async () => {
    const project = await t.createProject();
    await webhookClient(t, project).put({ url: receiver.url });
    const store = t.app.deps.stores.webhooks;
    const month = 30 * 24 * 3_600_000;
    t.clock.advance(month);
    try {
      // saved on the advanced clock five minutes ago by a process that died before starting its run
      const orphan = await legacyRow(project, `orphan_${newId()}`, new Date(t.clock.now().getTime() - 5 * 60_000));
      // an attempt another process is making right now: updated_at is the database's now(), not the advanced clock
      const inProgress = await legacyRow(project, `busy_${newId()}`, new Date(t.clock.now().getTime() - 5 * 60_000));
      await store.markDoing(inProgress.delivery_id);

      // (the previous test's fresh row is a month old now and is adopted too)
      expect(await dispatcher().adoptOrphans()).toBeGreaterThanOrEqual(1);
      await dispatcher().runDue();
      await untilDelivery(t, orphan.delivery_id, 'done', 1);
      expect((await deliveryRow(t, inProgress.delivery_id))?.status).toBe('doing');
      expect(requestsWithId(receiver, inProgress.delivery_id)).toHaveLength(0);
    } finally {
      t.clock.advance(-month);
    }
  });
});

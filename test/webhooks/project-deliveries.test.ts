// The admin API's history of a project's own notifications (deliverToProject to its webhook_url, deliverFeedback
// to a charge's feedback_url), over HTTP with real receivers on loopback: {list, page, per, count} newest first
// with each attempt, the destination filter, page/limit rules, a manual retry of a failed delivery as a new run
// under the same webhook-id, and the catalog errors for everything else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_EVENTS, type OutboundEvent } from '../../src/webhooks/rules.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import {
  expectApiError,
  type JsonResponse,
  type Receiver,
  startReceiver,
  untilDelivery,
  webhookClient,
  webhookTables,
} from './fixtures.js';

const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

const escrowEvent = (n: number): OutboundEvent => ({
  event: PROJECT_EVENTS[200],
  eventCode: 200,
  tags: [`escrow-${n}`],
  payload: { escrow: n },
});
const receiptEvent = (n: number): OutboundEvent => ({
  event: PROJECT_EVENTS[100],
  eventCode: 100,
  tags: [`rcpt-${n}`],
  payload: { receipt_id: `rcpt-${n}` },
});

describe('admin: a project webhook and feedback_url deliveries', () => {
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

  const send = async (method: 'GET' | 'POST', url: string, headers: Record<string, string> = ADMIN): Promise<JsonResponse> => {
    const res = await t.app.inject({ method, url, headers });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
  };
  const list = (project: TestProject, query = '') =>
    send('GET', `/admin/v1/projects/${project.applicationId}/webhook/deliveries${query}`);
  const retry = (project: TestProject, deliveryId: string) =>
    send('POST', `/admin/v1/projects/${project.applicationId}/webhook/deliveries/${encodeURIComponent(deliveryId)}/retry`);
  const toProject = async (project: TestProject, n: number) => {
    const row = await t.app.deps.services.webhooks.deliverToProject(project.applicationId, escrowEvent(n));
    return row!.delivery_id;
  };
  const toFeedback = async (project: TestProject, n: number) => {
    const target = { url: feedback.url, contentType: 'application/json' as const };
    return (await t.app.deps.services.webhooks.deliverFeedback(project.applicationId, target, receiptEvent(n))).delivery_id;
  };

  it('lists both destinations newest first with their attempts; destination narrows; page and limit page', async () => {
    hook.answer({ status: 200, body: 'ok' });
    feedback.answer({ status: 200, body: 'thanks' });
    const project = await t.createProject({ webhook_url: hook.url });
    const empty = await list(project);
    expect(empty).toMatchObject({ status: 200, body: { list: [], page: 1, per: 20, count: 0 } });

    // sequential, each done before the next, so created_at orders them
    const made: { id: string; destination: 'project' | 'feedback' }[] = [];
    for (let n = 0; n < 5; n++) {
      const destination = n % 2 === 0 ? 'project' : 'feedback';
      const id = destination === 'project' ? await toProject(project, n) : await toFeedback(project, n);
      await untilDelivery(t, id, 'done', 1);
      made.push({ id, destination });
      await new Promise((r) => setTimeout(r, 5));
    }
    const newestFirst = [...made].reverse();

    const all = await list(project);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ page: 1, per: 20, count: 5 });
    const records = all.body.list as Record<string, unknown>[];
    expect(records.map((r) => [r.delivery_id, r.destination])).toEqual(newestFirst.map((m) => [m.id, m.destination]));
    const first = records.find((r) => r.destination === 'feedback')!;
    expect(first).toMatchObject({
      event: PROJECT_EVENTS[100],
      event_code: 100,
      url: feedback.url,
      status: 'done',
      retry_count: 1,
      max_retry: 10,
      created_at: expect.any(String),
    });
    expect(first.attempts).toEqual([
      {
        attempt: 1,
        attempted_at: expect.any(String),
        duration_ms: expect.any(Number),
        http_status: 200,
        response_body: 'thanks',
      },
    ]);
    expect(records.find((r) => r.destination === 'project')).toMatchObject({
      url: hook.url,
      event_code: 200,
      tags: [expect.stringMatching(/^escrow-/)],
    });

    const onlyFeedback = await list(project, '?destination=feedback');
    expect(onlyFeedback.body.count).toBe(2);
    expect((onlyFeedback.body.list as { delivery_id: string }[]).map((r) => r.delivery_id)).toEqual(
      newestFirst.filter((m) => m.destination === 'feedback').map((m) => m.id),
    );
    const onlyProject = await list(project, '?destination=project');
    expect(onlyProject.body.count).toBe(3);
    expect((onlyProject.body.list as { destination: string }[]).every((r) => r.destination === 'project')).toBe(true);

    const page2 = await list(project, '?page=2&limit=2');
    expect(page2.body).toMatchObject({ page: 2, per: 2, count: 5 });
    expect((page2.body.list as { delivery_id: string }[]).map((r) => r.delivery_id)).toEqual(
      newestFirst.slice(2, 4).map((m) => m.id),
    );
    const beyond = await list(project, '?page=9&limit=2');
    expect(beyond.body).toMatchObject({ list: [], page: 9, per: 2, count: 5 });
    // a limit over 100 is served as 100, not refused
    expect((await list(project, '?limit=5000')).body).toMatchObject({ per: 100, count: 5 });

    // the messaging webhook's deliveries of the same project are not in this history
    const messaging = webhookClient(t, project);
    expect((await messaging.put({ url: hook.url })).status).toBe(200);
    const test = await messaging.test();
    await untilDelivery(t, test.body.delivery_id as string, 'done', 1);
    expect((await list(project)).body.count).toBe(5);
    // nor another project's
    const other = await t.createProject({ webhook_url: hook.url });
    await untilDelivery(t, await toProject(other, 9), 'done', 1);
    expect((await list(project)).body.count).toBe(5);
    expect((await list(other)).body.count).toBe(1);
  });

  it('bad page, limit, destination or application_id is a catalog error; an unknown project is 9426; admin auth only', async () => {
    const project = await t.createProject();
    for (const query of ['?page=0', '?page=-1', '?limit=0', '?limit=abc', '?page=1.5', '?destination=message', '?destination=']) {
      expectApiError(await list(project, query), 400, 9400, 'INVALID_REQUEST');
    }
    expectApiError(
      await send('GET', '/admin/v1/projects/0123456789abcdef01234567/webhook/deliveries'),
      404,
      9426,
      'PROJECT_NOT_FOUND',
    );
    expect((await send('GET', '/admin/v1/projects/not-an-id/webhook/deliveries')).status).toBe(400);
    expect((await send('GET', `/admin/v1/projects/${project.applicationId}/webhook/deliveries`, {})).status).toBe(401);
    expect(
      (await send('GET', `/admin/v1/projects/${project.applicationId}/webhook/deliveries`, { authorization: project.basicAuth }))
        .status,
    ).toBe(401);
  });

  it('a failed delivery is retried now under the same webhook-id; nothing else can be, and a refusal changes nothing', async () => {
    const project = await t.createProject({ webhook_url: hook.url });
    // 410 Gone fails the delivery at once (and disables the project's webhook_url)
    hook.answer({ status: 410, body: 'gone' });
    const failedId = await toProject(project, 1);
    await untilDelivery(t, failedId, 'failed', 1);
    feedback.answer({ status: 410 });
    const failedFeedbackId = await toFeedback(project, 2);
    await untilDelivery(t, failedFeedbackId, 'failed', 1);
    feedback.answer({ status: 200 });
    const doneFeedbackId = await toFeedback(project, 3);
    await untilDelivery(t, doneFeedbackId, 'done', 1);

    const before = await webhookTables(t);
    expectApiError(await retry(project, doneFeedbackId), 409, 9427, 'WEBHOOK_DELIVERY_NOT_FAILED');
    expectApiError(await retry(project, 'no-such-delivery'), 404, 9428, 'WEBHOOK_DELIVERY_NOT_FOUND');
    expectApiError(await retry(project, 'x'.repeat(150)), 404, 9428, 'WEBHOOK_DELIVERY_NOT_FOUND');
    const other = await t.createProject();
    expectApiError(await retry(other, failedId), 404, 9428, 'WEBHOOK_DELIVERY_NOT_FOUND');
    expectApiError(
      await send('POST', `/admin/v1/projects/0123456789abcdef01234567/webhook/deliveries/${failedId}/retry`),
      404,
      9426,
      'PROJECT_NOT_FOUND',
    );
    expect(
      (await send('POST', `/admin/v1/projects/${project.applicationId}/webhook/deliveries/${failedId}/retry`, {})).status,
    ).toBe(401);
    expect(await webhookTables(t)).toEqual(before);

    // a failed messaging delivery of the same project is the messaging API's to retry, not this one's
    const messaging = webhookClient(t, project);
    expect((await messaging.put({ url: feedback.url })).status).toBe(200);
    feedback.answer({ status: 410 });
    const messageId = (await messaging.test()).body.delivery_id as string;
    await untilDelivery(t, messageId, 'failed', 1);
    expectApiError(await retry(project, messageId), 404, 9428, 'WEBHOOK_DELIVERY_NOT_FOUND');
    feedback.answer({ status: 200 });

    // sent even though the 410 disabled the webhook_url: the merchant asked for it
    hook.answer({ status: 200, body: 'back' });
    const retried = await retry(project, failedId);
    expect(retried).toMatchObject({ status: 200, body: { delivery_id: failedId, url: hook.url, queued: true } });
    await untilDelivery(t, failedId, 'done', 2);
    const sent = hook.requests.filter((r) => r.headers['webhook-id'] === failedId);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.body).toBe(sent[0]!.body);

    const again = await retry(project, failedFeedbackId);
    expect(again.body).toMatchObject({ delivery_id: failedFeedbackId, url: feedback.url, queued: true });
    await untilDelivery(t, failedFeedbackId, 'done', 2);
    expect(feedback.requests.filter((r) => r.headers['webhook-id'] === failedFeedbackId)).toHaveLength(2);

    const records = (await list(project)).body.list as { delivery_id: string; status: string; attempts: unknown[] }[];
    expect(records.find((r) => r.delivery_id === failedId)).toMatchObject({
      status: 'done',
      retry_count: 2,
      attempts: [
        expect.objectContaining({ attempt: 1, http_status: 410, response_body: 'gone' }),
        expect.objectContaining({ attempt: 2, http_status: 200, response_body: 'back' }),
      ],
    });
    // done now: a second retry is refused
    expectApiError(await retry(project, failedId), 409, 9427, 'WEBHOOK_DELIVERY_NOT_FAILED');
  });
});

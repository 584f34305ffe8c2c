// GET /metrics over the real path: a charge with a feedback_url through the API, its delivery run by the real worker
// and attempted against a loopback receiver, then a scrape that must show each series with its value (HTTP requests
// under their route pattern, the charge by outcome and PG, the workflow start, the attempt and its latency, the
// pending gauge read from the database). The endpoint wants the admin token; the worker process's own listener
// does too; the real worker.ts (Postgres) serves its registry and the Temporal SDK's exporter on the configured
// ports, with JSON logs free of the bundle report; the metrics variables are parsed with the others.
import { freePort } from '../../tools/child-processes.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/platform/config/index.js';
import { DELIVERY_WORKFLOW_TYPE } from '../../src/webhooks/contract.js';
import { startMetricsListener } from '../../src/platform/observability/metrics-listener.js';
import { createMetrics, type Metrics } from '../../src/platform/observability/metrics.js';
import { buildTestApp, TEST_ADMIN_TOKEN, type TestApp } from '../helpers/app.js';
import { openWorkerProcessStack, postgresReachable, type WorkerProcessStack } from '../helpers/worker-process.js';
import { keyInClient } from '../payments/key-in-fixtures.js';
import { freshPhone, verificationClient } from '../verification/fixtures.js';
import { type Receiver, startReceiver, untilDelivery } from '../webhooks/fixtures.js';

/** The value of one sample of the exposition text; undefined when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = new Map<string, string>();
    for (const pair of (match[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      present.set(pair[1]!, pair[2]!);
    if (Object.entries(labels).every(([k, v]) => present.get(k) === v)) return Number(match[4]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  let t: TestApp;
  let metrics: Metrics;
  let feedback: Receiver;
  beforeAll(async () => {
    metrics = createMetrics({ processMetrics: false });
    t = await buildTestApp({ withTemporal: true, metrics });
    feedback = await startReceiver('/feedback');
  }, 120_000);
  afterAll(async () => {
    await feedback?.close();
    await t?.close();
  });

  const scrape = async (): Promise<string> => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  it('counts a charge and its feedback delivery: requests by route pattern, charge, no workflow start, attempt, pending', async () => {
    const project = await t.createProject();
    const api = keyInClient(t, project);
    const key = await api.issuedKey();
    const before = await scrape();
    const paidBefore = sample(before, 'paygate_charges_total', { outcome: 'paid', pg: 'sandbox_card' }) ?? 0;

    const charged = await api.charge(key, { feedback_url: feedback.url });
    expect(charged.status, JSON.stringify(charged.body)).toBe(200);
    const receiptId = charged.body.receipt_id as string;
    const lookedUp = await api.get(`/v2/receipt/${receiptId}`);
    expect(lookedUp.status).toBe(200);
    const [delivery] = await t.deps.database.db
      .selectFrom('webhook_deliveries')
      .select('delivery_id')
      .where('destination', '=', 'feedback')
      .where('application_id', '=', project.applicationId)
      .execute();
    expect(delivery).toBeDefined();
    await untilDelivery(t, delivery!.delivery_id, 'done', 1);
    expect(feedback.requests).toHaveLength(1);
    // declined at the PG: counted apart, under the same PG
    const declinedKey = await api.issuedKey({ card_no: '4000000000009995' });
    expect((await api.charge(declinedKey)).status).toBe(400);

    const text = await scrape();
    expect(sample(text, 'paygate_charges_total', { outcome: 'paid', pg: 'sandbox_card' })).toBe(paidBefore + 1);
    expect(sample(text, 'paygate_charges_total', { outcome: 'declined', pg: 'sandbox_card' })).toBe(1);
    const charge = { method: 'POST', route: '/v2/subscribe/payment', status: '200' };
    expect(sample(text, 'paygate_http_requests_total', charge)).toBe(1);
    expect(sample(text, 'paygate_http_request_duration_seconds_count', charge)).toBe(1);
    expect(sample(text, 'paygate_http_request_duration_seconds_bucket', { ...charge, le: '+Inf' })).toBe(1);
    expect(sample(text, 'paygate_http_request_duration_seconds_sum', charge)).toBeGreaterThan(0);
    expect(sample(text, 'paygate_http_requests_total', { method: 'POST', route: '/v2/subscribe/payment', status: '400' })).toBe(
      1,
    );
    // the pattern, never the receipt id a client put in the URL
    expect(sample(text, 'paygate_http_requests_total', { method: 'GET', route: '/v2/receipt/:receipt_id', status: '200' })).toBe(
      1,
    );
    expect(text).not.toContain(receiptId);
    // the delivery is the dispatcher's row: no workflow is started for it
    expect(sample(text, 'paygate_workflow_starts_total', { workflow_type: DELIVERY_WORKFLOW_TYPE }) ?? 0).toBe(0);
    expect(sample(text, 'paygate_webhook_attempts_total', { outcome: 'success' })).toBe(1);
    expect(sample(text, 'paygate_webhook_attempt_duration_seconds_count', { outcome: 'success' })).toBe(1);
    expect(sample(text, 'paygate_webhook_deliveries_pending', { state: 'ready' })).toBe(0);
    expect(sample(text, 'paygate_webhook_deliveries_pending', { state: 'doing' })).toBe(0);
    // declared from the start, so a dashboard has its series before the first event
    expect(text).toContain('# TYPE paygate_webhook_endpoints_auto_disabled_total counter');
    expect(text).toContain('# TYPE paygate_schedule_charges_total counter');
    expect(text).toContain('# TYPE paygate_verifications_total counter');
  }, 60_000);

  it('reads pending deliveries from the database at scrape time: a failed attempt leaves its delivery ready', async () => {
    const failing = await startReceiver('/fails');
    failing.answer({ status: 500, body: 'down' });
    try {
      const project = await t.createProject();
      const api = keyInClient(t, project);
      const charged = await api.charge(await api.issuedKey(), { feedback_url: failing.url });
      expect(charged.status).toBe(200);
      const [delivery] = await t.deps.database.db
        .selectFrom('webhook_deliveries')
        .select('delivery_id')
        .where('application_id', '=', project.applicationId)
        .execute();
      // the first attempt answered 500: the delivery waits on its ladder (5 s) in state ready
      await untilDelivery(t, delivery!.delivery_id, 'ready', 1);
      const text = await scrape();
      expect(sample(text, 'paygate_webhook_deliveries_pending', { state: 'ready' })).toBe(1);
      expect(sample(text, 'paygate_webhook_attempts_total', { outcome: 'http_error' })).toBe(1);
      expect(sample(text, 'paygate_webhook_attempt_duration_seconds_count', { outcome: 'http_error' })).toBe(1);
      await t.deps.database.db
        .updateTable('webhook_deliveries')
        .set({ status: 'failed' })
        .where('delivery_id', '=', delivery!.delivery_id)
        .execute();
      expect(sample(await scrape(), 'paygate_webhook_deliveries_pending', { state: 'ready' })).toBe(0);
    } finally {
      await failing.close();
    }
  }, 60_000);

  it('counts verification requests and confirms by outcome', async () => {
    const project = await t.createProject();
    const verify = verificationClient(t, project);
    const phone = freshPhone();
    const requested = await verify.request({ phone });
    expect(requested.status, JSON.stringify(requested.body)).toBe(200);
    const receiptId = requested.body.receipt_id as string;
    const otp = await verify.latestOtp(phone);
    const wrong = otp === '000000' ? '111111' : '000000';
    expect((await verify.confirm(receiptId, wrong)).body).toMatchObject({ code: 2405 });
    expect((await verify.confirm(receiptId, otp)).status).toBe(200);
    const text = await scrape();
    expect(sample(text, 'paygate_verifications_total', { stage: 'request', outcome: 'sent' })).toBe(1);
    expect(sample(text, 'paygate_verifications_total', { stage: 'confirm', outcome: 'refused' })).toBe(1);
    expect(sample(text, 'paygate_verifications_total', { stage: 'confirm', outcome: 'verified' })).toBe(1);
    expect(sample(text, 'paygate_workflow_starts_total', { workflow_type: 'verificationWorkflow' })).toBe(1);
  }, 60_000);

  it('a request no route matches is counted as unmatched, without its URL', async () => {
    await t.app.inject({ method: 'GET', url: '/no/such/path/secret-looking-123' });
    const text = await scrape();
    expect(
      sample(text, 'paygate_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('secret-looking-123');
  });

  it('wants the admin token', async () => {
    const none = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ code: 9401, error_code: 'ADMIN_UNAUTHORIZED' });
    const project = await t.createProject();
    const asProject = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: project.basicAuth } });
    expect(asProject.statusCode).toBe(401);
    const wrong = await t.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer not-the-admin-token-at-all' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).not.toContain('paygate_');
  });
});

describe("the worker process's metrics listener", () => {
  it('serves its registry at GET /metrics with the admin token, and nothing else', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.webhookAttempt('http_error', 0.2);
    metrics.scheduleCharge('paid');
    const listener = await startMetricsListener({ host: '127.0.0.1', port: 0, adminToken: TEST_ADMIN_TOKEN, metrics });
    try {
      expect(listener.address).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const ok = await fetch(`${listener.address}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
      expect(ok.status).toBe(200);
      const text = await ok.text();
      expect(sample(text, 'paygate_webhook_attempts_total', { outcome: 'http_error' })).toBe(1);
      expect(sample(text, 'paygate_schedule_charges_total', { outcome: 'paid' })).toBe(1);
      const anonymous = await fetch(`${listener.address}/metrics`);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.json()).toMatchObject({ code: 9401 });
      const wrong = await fetch(`${listener.address}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
      expect(wrong.status).toBe(401);
      const elsewhere = await fetch(`${listener.address}/health`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
      expect(elsewhere.status).toBe(404);
      expect(await elsewhere.json()).toMatchObject({ code: 9404 });
    } finally {
      await listener.close();
    }
  });
});

describe.skipIf(!(await postgresReachable()))('the standalone worker process (worker.ts, Postgres)', () => {
  let stack: WorkerProcessStack | undefined;
  beforeAll(async () => {
    stack = await openWorkerProcessStack('metrics');
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it("serves its registry on WORKER_METRICS_PORT (admin token), the SDK's worker metrics at TEMPORAL_METRICS_ADDRESS, JSON logs without the bundle report", async () => {
    const ours = await freePort();
    const sdk = await freePort();
    const worker = await stack!.startWorker({
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      WORKER_METRICS_PORT: String(ours),
      TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${sdk}`,
    });
    const scraped = await fetch(`http://127.0.0.1:${ours}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    expect(scraped.status).toBe(200);
    const text = await scraped.text();
    expect(text).toContain('# TYPE paygate_webhook_attempts_total counter');
    expect(text).toContain('# TYPE paygate_schedule_charges_total counter');
    expect(sample(text, 'paygate_process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'paygate_webhook_deliveries_pending', { state: 'ready' })).toBe(0);
    expect((await fetch(`http://127.0.0.1:${ours}/metrics`)).status).toBe(401);

    // the SDK's exporter reports once the worker polls: task slots, pollers
    const deadline = Date.now() + 20_000;
    let sdkText = '';
    while (!/^temporal_\w+/m.test(sdkText) && Date.now() < deadline) {
      sdkText = await fetch(`http://127.0.0.1:${sdk}/metrics`).then(
        (r) => r.text(),
        () => '',
      );
      if (!/^temporal_\w+/m.test(sdkText)) await new Promise((r) => setTimeout(r, 250));
    }
    expect(sdkText).toMatch(/^temporal_worker_task_slots_available\{/m);

    // stdout is a pipe: JSON lines; the webpack report of the bundle is at debug, under LOG_LEVEL=info
    const lines = worker
      .text()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(lines.some((l) => (JSON.parse(l) as { msg?: string }).msg === 'worker running')).toBe(true);
    expect(worker.text()).not.toMatch(/compiled successfully|orphan modules|webpack/i);
    expect(worker.text()).not.toContain(TEST_ADMIN_TOKEN);
  }, 120_000);
});

describe('metrics configuration', () => {
  it('is off unless set; reads the exporter address and the worker listener', () => {
    expect(parseConfig({})).toMatchObject({ temporalMetricsAddress: undefined, workerMetrics: undefined });
    expect(
      parseConfig({ TEMPORAL_METRICS_ADDRESS: '127.0.0.1:9464', WORKER_METRICS_PORT: '9465', WORKER_METRICS_HOST: '10.0.0.7' }),
    ).toMatchObject({ temporalMetricsAddress: '127.0.0.1:9464', workerMetrics: { host: '10.0.0.7', port: 9465 } });
    expect(parseConfig({ WORKER_METRICS_PORT: '9465' }).workerMetrics).toEqual({ host: '127.0.0.1', port: 9465 });
    expect(parseConfig({ TEMPORAL_METRICS_ADDRESS: '[::1]:9464' }).temporalMetricsAddress).toBe('[::1]:9464');
  });

  it('refuses a bad value, naming the variable', () => {
    for (const env of [
      { TEMPORAL_METRICS_ADDRESS: '9464' },
      { TEMPORAL_METRICS_ADDRESS: 'http://x:1' },
      { WORKER_METRICS_PORT: '70000' },
    ]) {
      try {
        parseConfig(env);
        throw new Error(`accepted ${JSON.stringify(env)}`);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).problems[0]?.variable).toBe(Object.keys(env)[0]);
      }
    }
  });
});

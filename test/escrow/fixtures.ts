// Shared helpers of the escrow tests: a listening app (the sandbox PGs notify it over HTTP), the escrow
// routes over inject(), and the sandbox's own view of what it received.
import { createHmac } from 'node:crypto';
import { notificationKey } from '../../src/gateways/sandbox-escrow-notifications.js';
import { buildTestApp, TEST_SANDBOX_TOKEN, type TestApp, type TestProject } from '../helpers/app.js';
import type { ProjectCreateInput } from '../../src/projects/service.js';
import type { JsonResponse } from '../webhooks/fixtures.js';

export const MERCHANT = {
  company_name: 'Sandbox Shop',
  addr1: 'Seoul, Gangnam-daero 1',
  addr2: '3F',
  zipcode: '06000',
  phone: '0212345678',
};
export const BUYER = {
  username: 'Hong Gildong',
  phone: '01012345678',
  email: 'buyer@example.com',
  address: 'Busan, Haeundae-ro 2',
  zipcode: '48000',
};

import { freePort } from '../../tools/child-processes.js';

export { freePort };

/** The real app with the engine and a worker, listening on loopback so the sandbox PGs' notifications reach it. */
export async function startEscrowApp(env: Record<string, string> = {}): Promise<TestApp> {
  const port = await freePort();
  const t = await buildTestApp({ withTemporal: true, env: { ...env, PORT: String(port) } });
  try {
    await t.app.listen({ host: '127.0.0.1', port });
  } catch (err) {
    await t.close();
    throw err;
  }
  return t;
}

export async function createEscrowProject(
  t: TestApp,
  opts: Partial<ProjectCreateInput> = {},
): Promise<TestProject & { webhookSecret?: string }> {
  const { project, secrets } = await t.app.deps.services.projects.create({ name: 'escrow shop', merchant: MERCHANT, ...opts });
  const basic = `Basic ${Buffer.from(`${secrets.client_key}:${secrets.secret_key}`).toString('base64')}`;
  return {
    applicationId: project.application_id,
    clientKey: secrets.client_key,
    secretKey: secrets.secret_key,
    privateKey: secrets.private_key,
    basicAuth: basic,
    project,
    ...(secrets.webhook_secret ? { webhookSecret: secrets.webhook_secret } : {}),
  };
}

export function escrowClient(t: TestApp, project: { basicAuth: string }) {
  const send = async (
    method: 'GET' | 'PUT' | 'POST',
    url: string,
    body?: unknown,
    auth = project.basicAuth,
  ): Promise<JsonResponse> => {
    const res = await t.app.inject({
      method,
      url,
      headers: { authorization: auth },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
  };
  let orders = 0;
  return {
    send,
    pay: (body: Record<string, unknown>) =>
      send('POST', '/sandbox/v1/payments', {
        price: 10_000,
        order_id: `order-${Date.now()}-${++orders}`,
        order_name: 'Escrow goods',
        ...body,
      }),
    ship: (receiptId: string, body: unknown, auth?: string) => send('PUT', `/v2/escrow/shipping/start/${receiptId}`, body, auth),
    buyer: (receiptId: string, body: unknown) => send('POST', `/sandbox/v1/escrow/${receiptId}/events`, body),
    receipt: (receiptId: string) => send('GET', `/v2/receipt/${receiptId}`),
    events: (receiptId: string) => send('GET', `/v2/escrow/${receiptId}/events`),
    pgRequests: (receiptId: string) => send('GET', `/sandbox/v1/pg-requests?receipt_id=${receiptId}`),
  };
}

/**
 * Sends the app a PG notification signed as the sandbox escrow PGs sign theirs (what a PG redelivering one
 * notification, or sending many, does), for the order with this receipt id; answers the HTTP status.
 */
export async function sendSignedNotification(
  t: TestApp,
  pg: string,
  receiptId: string,
  n: { notificationId: string; event: string },
): Promise<number> {
  const order = await t.deps.database.db
    .selectFrom('receipts')
    .select('gateway_tid')
    .where('receipt_id', '=', receiptId)
    .executeTakeFirstOrThrow();
  const body = JSON.stringify({
    notification_id: n.notificationId,
    tid: order.gateway_tid,
    merchant_ref: receiptId,
    event: n.event,
    occurred_at: new Date().toISOString(),
  });
  const now = Date.now();
  const signature = createHmac('sha256', notificationKey(TEST_SANDBOX_TOKEN)).update(`${now}.${body}`).digest('hex');
  const res = await t.app.inject({
    method: 'POST',
    url: `/pg/v1/escrow/notifications/${pg}`,
    headers: { 'content-type': 'application/json', 'x-sandbox-signature': `t=${now},v1=${signature}` },
    payload: body,
  });
  return res.statusCode;
}

// Shared helpers of the webhook tests: a real receiver on loopback (a tiny node:http server that records
// every request and answers what the test scripts), the messaging API over inject(), and bounded waits.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { TestApp, TestProject } from '../helpers/app.js';

export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly receivedAt: number;
}

export interface Reply {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** never answers (the connection is held open) */
  readonly hang?: boolean;
  /** answers the status, then streams a body that never ends */
  readonly endless?: boolean;
}

export interface Receiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** how the next requests are answered: one reply for all, or a function of the request number (1-based) */
  answer(reply: Reply | ((n: number, req: ReceivedRequest) => Reply)): void;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let script: (n: number, req: ReceivedRequest) => Reply = () => ({ status: 200, body: 'ok' });
  const open = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const received: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      requests.push(received);
      const reply = script(requests.length, received);
      if (reply.hang) {
        open.add(res);
        return;
      }
      res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
      if (reply.endless) {
        open.add(res);
        const chunk = 'x'.repeat(1024);
        const timer = setInterval(() => res.write(chunk), 5);
        timers.add(timer);
        res.on('close', () => clearInterval(timer));
        return;
      }
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    answer(reply) {
      script = typeof reply === 'function' ? reply : () => reply;
    },
    async close() {
      for (const t of timers) clearInterval(t);
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface JsonResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, unknown>;
}

export function webhookClient(t: TestApp, project: TestProject) {
  const send = async (
    method: 'GET' | 'PUT' | 'POST',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<JsonResponse> => {
    const res = await t.app.inject({
      method,
      url: `/message/alimtalk/webhook${url}`,
      headers: { authorization: project.basicAuth, ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    return { status: res.statusCode, body: res.json() as Record<string, unknown>, headers: res.headers };
  };
  return {
    send,
    config: () => send('GET', ''),
    put: (body: unknown) => send('PUT', '', body),
    rotate: () => send('POST', '/secret'),
    test: () => send('POST', '/test'),
    deliveries: (query = '') => send('GET', `/deliveries${query}`),
    retry: (deliveryId: string) => send('POST', `/deliveries/${encodeURIComponent(deliveryId)}/retry`),
    replay: (body: unknown) => send('POST', '/deliveries/retry', body),
  };
}

export type WebhookClient = ReturnType<typeof webhookClient>;

/** Polls `probe` until it returns a value other than undefined; fails after `ms`. */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function deliveryRow(t: TestApp, deliveryId: string) {
  return t.deps.database.db.selectFrom('webhook_deliveries').selectAll().where('delivery_id', '=', deliveryId).executeTakeFirst();
}

export function attemptRows(t: TestApp, deliveryId: string) {
  return t.deps.database.db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('attempt')
    .execute();
}

/** Waits until the delivery is in `state` (and, if given, has made `attempts` attempts). */
export async function untilDelivery(t: TestApp, deliveryId: string, state: string, attempts?: number, ms = 20_000) {
  return eventually(
    async () => {
      const row = await deliveryRow(t, deliveryId);
      return row && row.status === state && (attempts === undefined || row.retry_count === attempts) ? row : undefined;
    },
    `delivery ${deliveryId} to be ${state}${attempts === undefined ? '' : ` after ${attempts} attempts`}`,
    ms,
  );
}

export function expectApiError(res: JsonResponse, httpStatus: number, code: number, errorCode: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(httpStatus);
  expect(res.body.code).toBe(code);
  expect(res.body.error_code).toBe(errorCode);
}

/** Every stored row of the webhook tables, to prove a refused request changed nothing. */
export async function webhookTables(t: TestApp) {
  const db = t.deps.database.db;
  return {
    endpoints: await db.selectFrom('webhook_endpoints').selectAll().orderBy('endpoint_id').execute(),
    deliveries: await db.selectFrom('webhook_deliveries').selectAll().orderBy('delivery_id').execute(),
    attempts: await db.selectFrom('webhook_attempts').selectAll().orderBy('delivery_id').orderBy('attempt').execute(),
  };
}
